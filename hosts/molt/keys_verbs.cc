// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/keys_verbs.cc
//
// molt keys init and rotate: key files written (mode 0600, never over another) and, on a
// rotation, the old key kept aside and moved to the revoked keys of a trusted-keys file.
#include "hosts/molt/keys_verbs.h"

#include <sys/stat.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>

#include "hosts/molt/cli.h"
#include "hosts/molt/deploy_verbs.h"
#include "kernel/src/loader/signing.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace loader = kernel::loader;

// molt keys rotate: a new main key, the old one kept aside and revoked in `keys_file` (if any).
int RotateKeys(const std::string& dir, const std::string& keys_file, bool as_json) {
  const std::string file = dir + "/main.key";
  Result<loader::PrivateKey> old_key = loader::ReadPrivateKey(file);
  if (!old_key.ok()) {
    return Fail(kExitFailed, old_key.status().message() + " (molt keys init makes the first key)");
  }
  const std::string old_pub = loader::PublicKeyOf(*old_key).value();
  const std::string old_fp = loader::Fingerprint(old_pub);
  // The trusted-keys file is read before anything changes: a broken one changes nothing.
  json::object trusted;
  if (!keys_file.empty()) {
    std::ifstream in(keys_file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (!in || ec || !v.is_object()) {
      return Fail(kExitFailed, "the keys file \"" + keys_file + "\" is not a JSON object");
    }
    trusted = std::move(v.as_object());
  }
  const std::string kept = file + "." + old_fp + ".revoked";
  std::error_code ec;
  fs::rename(file, kept, ec);
  if (ec) {
    return Fail(kExitFailed, "cannot move " + file + " aside: " + ec.message());
  }
  Result<loader::PrivateKey> key = loader::GenerateKey();
  if (!key.ok()) {
    return Fail(kExitFailed, key.status().message());
  }
  if (Status s = loader::WritePrivateKey(file, *key); !s.ok()) {
    fs::rename(kept, file, ec);
    return Fail(kExitFailed, s.message());
  }
  const std::string pub = loader::PublicKeyOf(*key).value();
  if (!keys_file.empty()) {
    auto list = [&](const char* name) -> json::array& {
      json::value& v = trusted[name];
      if (!v.is_array()) {
        v = json::array();
      }
      return v.as_array();
    };
    json::array& main = list("public_keys");
    json::array kept_keys;
    for (const json::value& k : main) {
      if (!(k.is_string() && k.as_string() == old_pub)) {
        kept_keys.push_back(k);
      }
    }
    kept_keys.emplace_back(pub);
    main = std::move(kept_keys);
    list("revoked_keys").emplace_back(old_pub);
    const std::string tmp = keys_file + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << json::serialize(trusted) << "\n";
      if (!out.flush()) {
        return Fail(kExitFailed, "cannot write " + tmp);
      }
    }
    fs::rename(tmp, keys_file, ec);
    if (ec) {
      return Fail(kExitFailed, "cannot replace " + keys_file + ": " + ec.message());
    }
  }
  const std::string fp = loader::Fingerprint(pub);
  if (as_json) {
    PrintJson(json::object{
        {"public_key", pub}, {"fingerprint", fp}, {"file", file}, {"revoked_fingerprint", old_fp}});
  } else {
    std::cout << "public key  " << pub << "\nfingerprint " << fp << "\nprivate key " << file
              << " (mode 0600)\nrevoked     " << old_fp << " (kept as " << kept << ")\n"
              << (keys_file.empty() ? "list the new public key in the servers' deploy.keys and "
                                      "move the old one to revoked_keys, then SIGHUP moltd\n"
                                    : keys_file + " updated: SIGHUP moltd to read it again\n")
              << "then molt keys resign --key " << file
              << ": the prod heads the old key signed verify again\n";
  }
  return kExitOk;
}

}  // namespace

int KeysCommand(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "resign") {
    return KeysResignCommand(argc - 1, argv + 1);
  }
  cxxopts::Options o(
      "molt keys",
      "Signing keys for deploys (Ed25519).\n"
      "  molt keys init [--fallback] [--dir DIR]: writes a new key pair's private\n"
      "  key to DIR/main.key (DIR/fallback.key with --fallback; DIR defaults to\n"
      "  ~/.config/molt/keys), mode 0600 and never over an existing one, and prints\n"
      "  the public key (base64) and its fingerprint: the public key goes into the\n"
      "  servers' trusted keys (deploy.keys).\n"
      "  molt keys rotate [--dir DIR] [--keys-file FILE]: a new main key in\n"
      "  DIR/main.key; the old one is kept as DIR/main.key.<fingerprint>.revoked and,\n"
      "  with --keys-file (a server's deploy.keys file), moved from its public_keys to\n"
      "  its revoked_keys with the new key added; SIGHUP moltd to read it again.\n"
      "  molt keys resign [--branch B] --key FILE: re-signs the prod heads with the new\n"
      "  key, so that servers that restart still trust them (molt keys resign --help).");
  o.add_options()("action", "init or rotate", cxxopts::value<std::string>())(
      "fallback", "the fallback key (its signatures are sigF)")("dir", "where the key files are",
                                                                cxxopts::value<std::string>())(
      "keys-file", "rotate: the trusted-keys file to update", cxxopts::value<std::string>());
  o.parse_positional({"action"});
  o.positional_help("init");
  cxxopts::ParseResult parsed;
  if (auto done = ParseLocal(o, argc, argv, &parsed)) {
    return *done;
  }
  const std::string action = parsed.count("action") > 0 ? parsed["action"].as<std::string>() : "";
  if (action != "init" && action != "rotate") {
    return Fail(kExitUsage, action.empty() ? "molt keys init|rotate|resign (molt keys --help)"
                                           : "unknown keys action \"" + action +
                                                 "\": molt keys init|rotate|resign (molt keys "
                                                 "--help)");
  }
  std::string dir;
  if (parsed.count("dir") > 0) {
    dir = parsed["dir"].as<std::string>();
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    dir = std::string(home) + "/.config/molt/keys";
  } else {
    return Fail(kExitUsage, "HOME is not set: pass --dir DIR");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return Fail(kExitFailed, "cannot create \"" + dir + "\": " + ec.message());
  }
  ::chmod(dir.c_str(), 0700);
  if (action == "rotate") {
    return RotateKeys(
        dir, parsed.count("keys-file") > 0 ? parsed["keys-file"].as<std::string>() : std::string(),
        parsed.count("json") > 0);
  }
  const std::string file = dir + (parsed.count("fallback") > 0 ? "/fallback.key" : "/main.key");
  Result<loader::PrivateKey> key = loader::GenerateKey();
  if (!key.ok()) {
    return Fail(kExitFailed, key.status().message());
  }
  if (Status s = loader::WritePrivateKey(file, *key); !s.ok()) {
    return Fail(kExitFailed, s.message());
  }
  const std::string pub = loader::PublicKeyOf(*key).value();
  const std::string fingerprint = loader::Fingerprint(pub);
  if (parsed.count("json") > 0) {
    PrintJson(json::object{{"public_key", pub}, {"fingerprint", fingerprint}, {"file", file}});
  } else {
    std::cout << "public key  " << pub << "\nfingerprint " << fingerprint << "\nprivate key "
              << file << " (mode 0600: keep it to yourself)\n";
  }
  return kExitOk;
}

}  // namespace molt::cli
