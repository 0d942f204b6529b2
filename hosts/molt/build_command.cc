// SPDX-License-Identifier: Apache-2.0
// molt build and molt keys: the verbs that work on local files, without a server.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "hosts/molt/cli.h"
#include "hosts/molt/deploy_verbs.h"
#include "kernel/src/loader/build.h"
#include "kernel/src/loader/build_archive.h"
#include "kernel/src/loader/library.h"
#include "kernel/src/loader/signing.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace loader = kernel::loader;

// Parses a local verb's flags; an exit code when it is done (help, bad flags).
std::optional<int> ParseLocal(cxxopts::Options& o, int argc, char** argv,
                              cxxopts::ParseResult* out) {
  o.add_options("common")("json", "print JSON instead of text")("h,help", "this help");
  try {
    *out = o.parse(argc, argv);
  } catch (const std::exception& e) {
    return Fail(kExitUsage,
                std::string(e.what()) + " (" + o.program() + " --help lists the flags)");
  }
  if (out->count("help") > 0) {
    std::cout << o.help() << "\n";
    return kExitOk;
  }
  return std::nullopt;
}

// What git says of the tree holding `dir`: nothing when it is not in one.
struct GitInfo {
  bool in_git = false;
  std::string commit;  // the full hash
  bool dirty = false;
  std::string branch;
  std::uint64_t commit_time = 0;
};

GitInfo Git(const std::string& dir) {
  GitInfo g;
  RunResult head = RunProgram({"git", "-C", dir, "rev-parse", "HEAD"});
  if (head.exit_code != 0 || head.output.size() < 40) {
    return g;
  }
  g.in_git = true;
  g.commit = head.output.substr(0, 40);
  g.dirty = !RunProgram({"git", "-C", dir, "status", "--porcelain", "--untracked-files=no"})
                 .output.empty();
  RunResult branch = RunProgram({"git", "-C", dir, "rev-parse", "--abbrev-ref", "HEAD"});
  g.branch = branch.exit_code == 0 ? branch.output.substr(0, branch.output.find('\n')) : "";
  RunResult when = RunProgram({"git", "-C", dir, "log", "-1", "--format=%ct"});
  g.commit_time = when.exit_code == 0 ? std::strtoull(when.output.c_str(), nullptr, 10) : 0;
  return g;
}

// A git branch as a Molt branch (spec §27): main and master are prod; otherwise lowercased, '/'
// as '-', anything else outside [a-z0-9._-] dropped.
std::string BranchOf(const std::string& git_branch) {
  if (git_branch.empty() || git_branch == "HEAD" || git_branch == "main" ||
      git_branch == "master") {
    return "prod";
  }
  std::string out;
  for (char c : git_branch) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (l == '/') {
      out += '-';
    } else if (std::isalnum(static_cast<unsigned char>(l)) != 0 || l == '.' || l == '_' ||
               l == '-') {
      out += l;
    }
  }
  return out.empty() ? "prod" : out.substr(0, 64);
}

bool IsBranchName(const std::string& b) {
  return !b.empty() && b.size() <= 64 && std::all_of(b.begin(), b.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
}

// moltd, to run `moltd --self-test`: --moltd, else MOLTD, else beside this binary, else on PATH.
std::string MoltdPath(const cxxopts::ParseResult& parsed) {
  if (parsed.count("moltd") > 0) {
    return parsed["moltd"].as<std::string>();
  }
  if (const char* env = std::getenv("MOLTD"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  const fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path() / "moltd";
  return !ec && fs::exists(beside, ec) ? beside.string() : "moltd";
}

struct Plugin {
  std::string file;
  std::string path;
  std::string sha256;
  std::string name;
  std::string version;
  std::string kind;
  std::string abi;
};

}  // namespace

int BuildCommand(int argc, char** argv) {
  cxxopts::Options o(
      "molt build",
      "Packs the plugin libraries (*.so) of DIR into one build file: a tar archive (tar tf reads\n"
      "it) of the libraries and molt-build.json, their manifest. The build id is\n"
      "<commit7>-<hash6> (the git commit of DIR's tree and the first 6 hex digits of the\n"
      "libraries' hash; <commit7>-dirty-<hash6> when the tree has uncommitted changes;\n"
      "nogit-<hash6> outside git). The manifest holds every library's SHA-256, name, version,\n"
      "kind and ABI, the protocol hash of the channels they declare (from moltd --self-test,\n"
      "the spec gate, which must pass: the plugins' own tests, the security audit and the fuzz\n"
      "gate), the branch, the channel and the health window. The same inputs give the same\n"
      "id and the same bytes. Refuses an empty DIR, a library that is not a plugin, and two\n"
      "plugins of one name.");
  o.add_options()("dir", "the plugin directory", cxxopts::value<std::string>())(
      "out", "the build file to write (default: <build id>.molt here)",
      cxxopts::value<std::string>())(
      "branch", "the branch it is built for (default: the git branch; main and master are prod)",
      cxxopts::value<std::string>())(
      "channel", "prod or dev (default: prod for the prod branch, dev for any other)",
      cxxopts::value<std::string>())("health-errors",
                                     "errors that roll a deploy back in its health window (1..100)",
                                     cxxopts::value<int>())(
      "health-window", "the health window in seconds (5..300)", cxxopts::value<double>())(
      "moltd", "the moltd that checks the set (default: beside molt, else on PATH)",
      cxxopts::value<std::string>());
  o.parse_positional({"dir"});
  o.positional_help("DIR");
  cxxopts::ParseResult parsed;
  if (auto done = ParseLocal(o, argc, argv, &parsed)) {
    return *done;
  }
  const bool as_json = parsed.count("json") > 0;
  if (parsed.count("dir") == 0) {
    return Fail(kExitUsage, "which plugin directory? molt build DIR");
  }
  const std::string dir = parsed["dir"].as<std::string>();
  Result<loader::Build> listed = loader::ReadBuild(dir);
  if (!listed.ok()) {
    return Fail(kExitFailed, listed.status().message());
  }
  if (listed->files.empty()) {
    return Fail(kExitFailed, "plugin directory \"" + dir +
                                 "\" holds no plugin (*.so): there is nothing to build");
  }

  // Each library's descriptor, read from a private copy as a host would.
  char tmpl[] = "/tmp/molt-build-XXXXXX";
  const char* scratch = ::mkdtemp(tmpl);
  if (scratch == nullptr) {
    return Fail(kExitFailed, "cannot create a scratch directory in /tmp");
  }
  std::vector<Plugin> plugins;
  std::vector<std::string> refusals;
  std::map<std::string, std::string> names;
  bool services = false;
  int n = 0;
  for (const std::string& path : listed->files) {
    const std::string file = fs::path(path).filename().string();
    Result<std::unique_ptr<loader::Library>> lib =
        loader::Library::Load(path, std::string(scratch) + "/" + std::to_string(n++) + "-" + file,
                              loader::kAnyPluginKind);
    if (!lib.ok()) {
      refusals.push_back(lib.status().message());
      continue;
    }
    const molt_plugin_info& info = (*lib)->info();
    Result<std::string> sha = loader::Sha256File(path);
    if (!sha.ok()) {
      refusals.push_back(sha.status().message());
      continue;
    }
    Plugin p{file,
             path,
             *sha,
             info.name,
             info.version,
             loader::PluginKindText(info.kind),
             std::to_string(MOLT_ABI_MAJOR_OF(info.abi_version)) + "." +
                 std::to_string(MOLT_ABI_MINOR_OF(info.abi_version))};
    services = services || info.kind == MOLT_PLUGIN_KIND_SERVICE;
    (*lib)->Unload();
    if (auto [it, fresh] = names.emplace(p.name, file); !fresh) {
      refusals.push_back("plugin \"" + p.name + "\" is in both \"" + it->second + "\" and \"" +
                         file + "\": plugin names must be unique");
      continue;
    }
    plugins.push_back(std::move(p));
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (!refusals.empty()) {
    std::string text = "cannot build \"" + dir + "\":";
    for (const std::string& r : refusals) {
      text += "\n  " + r;
    }
    return Fail(kExitFailed, text);
  }

  // The spec gate (the plugins' own tests, the security audit, the fuzz gate), and the protocol:
  // the channel table the services declare, as moltd --self-test boots them.
  std::string protocol;
  if (services) {
    char check_tmpl[] = "/tmp/molt-check-XXXXXX";
    const char* data = ::mkdtemp(check_tmpl);
    const std::string moltd = MoltdPath(parsed);
    RunResult check =
        RunProgram({moltd, "--self-test", "-p", dir, "-d", data != nullptr ? data : "/tmp"});
    if (data != nullptr) {
      fs::remove_all(data, ec);
    }
    if (check.exit_code == -1) {
      return Fail(kExitFailed,
                  "cannot run \"" + moltd + "\" for the check: pass --moltd PATH (or set MOLTD)");
    }
    if (check.exit_code == 2) {  // a usage error: a moltd from before --self-test
      return Fail(kExitFailed, "\"" + moltd +
                                   "\" does not know --self-test: it is older than this molt "
                                   "(use the moltd of the same release, --moltd)");
    }
    if (check.exit_code != 0) {
      return Fail(kExitFailed,
                  "the plugin set does not pass moltd --self-test (its own tests, the security "
                  "audit, the fuzz gate), so it is not built:\n" +
                      check.output);
    }
    const std::size_t at = check.output.find("  protocol: ");
    if (at == std::string::npos) {
      return Fail(kExitFailed, "\"" + moltd +
                                   "\" printed no protocol hash: it is older than "
                                   "this molt (use the moltd of the same release, --moltd)");
    }
    protocol = check.output.substr(at + 12, 16);
  }

  // Where it comes from, and what it is for.
  const GitInfo git = Git(dir);
  const std::string branch =
      parsed.count("branch") > 0 ? parsed["branch"].as<std::string>() : BranchOf(git.branch);
  if (!IsBranchName(branch)) {
    return Fail(kExitUsage, "branch \"" + branch + "\" is not 1 to 64 of [a-z0-9._-]");
  }
  const std::string channel = parsed.count("channel") > 0 ? parsed["channel"].as<std::string>()
                                                          : (branch == "prod" ? "prod" : "dev");
  if (channel != "prod" && channel != "dev") {
    return Fail(kExitUsage, "channel \"" + channel + "\" is prod or dev");
  }
  std::uint32_t health_errors = listed->health_errors;
  double health_window = listed->health_window_seconds;
  if (parsed.count("health-errors") > 0) {
    const int v = parsed["health-errors"].as<int>();
    if (v < loader::kHealthErrorsMin || v > loader::kHealthErrorsMax) {
      return Fail(kExitUsage, "--health-errors is 1 to 100");
    }
    health_errors = static_cast<std::uint32_t>(v);
  }
  if (parsed.count("health-window") > 0) {
    health_window = parsed["health-window"].as<double>();
    if (!(health_window >= loader::kHealthWindowMinSeconds &&
          health_window <= loader::kHealthWindowMaxSeconds)) {
      return Fail(kExitUsage, "--health-window is 5 to 300 seconds");
    }
  }

  // The id: the commit, and a hash of what the libraries are (same bytes, same id).
  std::string listing;
  std::uint64_t bytes = 0;
  for (const Plugin& p : plugins) {
    listing += p.file + '\0' + p.sha256 + '\n';
    bytes += fs::file_size(p.path, ec);
  }
  const std::string hash6 = loader::Sha256Hex(listing).substr(0, 6);
  const std::string id = !git.in_git
                             ? "nogit-" + hash6
                             : git.commit.substr(0, 7) + (git.dirty ? "-dirty-" : "-") + hash6;
  json::array entries;
  for (const Plugin& p : plugins) {
    entries.push_back({{"file", p.file},
                       {"sha256", p.sha256},
                       {"name", p.name},
                       {"version", p.version},
                       {"kind", p.kind},
                       {"abi", p.abi}});
  }
  json::object manifest{{"build", id},         {"commit", git.commit},
                        {"dirty", git.dirty},  {"branch", branch},
                        {"channel", channel},  {"built_at", git.commit_time},
                        {"protocol", protocol}};
  loader::AddHealth(manifest, health_errors, health_window);
  manifest["plugins"] = std::move(entries);
  const std::string manifest_text = json::serialize(manifest) + "\n";

  const std::string out = parsed.count("out") > 0 ? parsed["out"].as<std::string>() : id + ".molt";
  std::vector<loader::ArchiveInput> inputs = {{loader::kBuildManifest, "", manifest_text}};
  for (const Plugin& p : plugins) {
    inputs.push_back({p.file, p.path, ""});
  }
  if (Status s = loader::WriteArchive(out, inputs); !s.ok()) {
    return Fail(kExitFailed, s.message());
  }
  if (as_json) {
    json::object o{{"build", id},
                   {"file", out},
                   {"bytes", fs::file_size(out, ec)},
                   {"manifest_sha256", loader::Sha256Hex(manifest_text)},
                   {"manifest", manifest}};
    PrintJson(o);
    return kExitOk;
  }
  std::cout << "built " << id << " (" << plugins.size() << " plugins, " << Megabytes(bytes)
            << ") -> " << out << "\n";
  std::cout << "  branch " << branch << ", channel " << channel << ", "
            << (git.in_git ? "commit " + git.commit.substr(0, 7) + (git.dirty ? " (dirty)" : "")
                           : std::string("not in git"))
            << (protocol.empty() ? std::string() : ", protocol " + protocol) << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const Plugin& p : plugins) {
    rows.push_back(
        {"  " + p.name, p.version, p.kind, "ABI " + p.abi, p.file, p.sha256.substr(0, 12)});
  }
  PrintTable(rows);
  return kExitOk;
}

namespace {

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
