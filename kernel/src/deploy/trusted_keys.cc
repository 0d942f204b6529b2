// SPDX-License-Identifier: Apache-2.0
// TrustedKeys: the deploy.keys file and the strict signature rule.
#include "kernel/src/deploy/trusted_keys.h"

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "kernel/src/loader/signing.h"

namespace molt::kernel::deploy {
namespace {

namespace json = boost::json;

// A base64 Ed25519 public key: 32 bytes.
bool IsPublicKey(std::string_view key) {
  const std::optional<std::string> raw = loader::DecodeBase64(key);
  return raw.has_value() && raw->size() == 32;
}

}  // namespace

Status TrustedKeys::Load(const std::string& path) {
  if (path.empty()) {
    file_.clear();
    main_.clear();
    revoked_.clear();
    fallback_.clear();
    return Status::Ok();
  }
  const std::string where = "trusted keys \"" + path + "\" (deploy.keys): ";
  std::ifstream in(path, std::ios::binary);
  std::error_code dir_ec;
  if (!in || std::filesystem::is_directory(path, dir_ec)) {  // a directory opens, then throws
    return Status::NotFound(where +
                            "cannot be read (create it with the public key `molt keys init` "
                            "printed: {\"public_keys\": [\"<base64>\"]})");
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::error_code ec;
  const json::value doc = json::parse(text, ec);
  if (ec || !doc.is_object()) {
    return Status::InvalidArgument(where + "is not a JSON object" +
                                   (ec ? " (" + ec.message() + ")" : std::string()));
  }
  const json::object& root = doc.as_object();
  for (const auto& [key, _] : root) {
    if (key != "public_keys" && key != "revoked_keys" && key != "fallback_public_key") {
      return Status::InvalidArgument(where + "unknown key \"" + std::string(key) +
                                     "\" (it takes public_keys, revoked_keys, "
                                     "fallback_public_key)");
    }
  }
  auto list = [&](std::string_view key, std::vector<std::string>& out) -> Status {
    out.clear();
    const json::value* v = root.if_contains(key);
    if (v == nullptr) {
      return Status::Ok();
    }
    if (!v->is_array()) {
      return Status::InvalidArgument(where + "\"" + std::string(key) +
                                     "\" must be an array of base64 public keys");
    }
    for (const json::value& k : v->as_array()) {
      if (!k.is_string() || !IsPublicKey(k.as_string())) {
        return Status::InvalidArgument(where + "\"" + std::string(key) + "\" holds " +
                                       json::serialize(k) +
                                       ", which is not a base64 Ed25519 public key (32 bytes)");
      }
      out.emplace_back(k.as_string());
    }
    return Status::Ok();
  };
  std::vector<std::string> main, revoked;
  MOLT_RETURN_IF_ERROR(list("public_keys", main));
  MOLT_RETURN_IF_ERROR(list("revoked_keys", revoked));
  // An empty string, as a template leaves it, means "no fallback key", as a missing field does.
  std::string fallback;
  if (const json::value* v = root.if_contains("fallback_public_key");
      v != nullptr && !(v->is_string() && v->as_string().empty())) {
    if (!v->is_string() || !IsPublicKey(v->as_string())) {
      return Status::InvalidArgument(
          where + "\"fallback_public_key\" must be a base64 Ed25519 public key (32 bytes)");
    }
    fallback = std::string(v->as_string());
  }
  std::erase_if(main, [&](const std::string& k) {
    return std::find(revoked.begin(), revoked.end(), k) != revoked.end();
  });
  file_ = path;
  main_ = std::move(main);
  revoked_ = std::move(revoked);
  fallback_ = std::move(fallback);
  return Status::Ok();
}

Status TrustedKeys::Verify(std::string_view message, std::string_view sig,
                           std::string_view sig_fallback) const {
  constexpr std::size_t kMaxSignature = 100;  // a longer field is not even decoded
  if (main_loaded()) {
    if (sig.empty()) {
      return Status::Rejected(
          "unsigned: this server takes deploys signed by a main key (sign with --key or "
          "MOLT_KEY_FILE)");
    }
    if (sig.size() <= kMaxSignature) {
      for (const std::string& key : main_) {
        if (loader::Verify(key, message, sig)) {
          return Status::Ok();
        }
      }
      for (const std::string& key : revoked_) {
        if (loader::Verify(key, message, sig)) {
          return Status::Rejected("signed by a revoked key (" + loader::Fingerprint(key) +
                                  "): sign with the current main key");
        }
      }
    }
    return Status::Rejected(
        "bad signature: not by any trusted main key, or over other fields (another branch, "
        "build, seq or time)");
  }
  if (fallback_.empty()) {
    return Status::Rejected(
        "this server has no trusted keys, so as a prod server it refuses every deploy. Fix: "
        "list the public key `molt keys init` printed in the file deploy.keys names, then "
        "SIGHUP moltd");
  }
  if (sig_fallback.empty()) {
    return Status::Rejected(
        "unsigned: this server knows only its fallback key, so it takes deploys signed by it "
        "(--fallback-key or MOLT_FALLBACK_KEY_FILE)");
  }
  if (sig_fallback.size() <= kMaxSignature && loader::Verify(fallback_, message, sig_fallback)) {
    return Status::Ok();
  }
  return Status::Rejected("bad fallback signature: not by the fallback key, or over other fields");
}

json::object TrustedKeys::ToJson() const {
  json::array main, revoked;
  for (const std::string& k : main_) {
    main.emplace_back(loader::Fingerprint(k));
  }
  for (const std::string& k : revoked_) {
    revoked.emplace_back(loader::Fingerprint(k));
  }
  return {{"file", file_},
          {"loaded", main_loaded()},
          {"main", std::move(main)},
          {"revoked", std::move(revoked)},
          {"fallback",
           fallback_.empty() ? json::value(nullptr) : json::value(loader::Fingerprint(fallback_))}};
}

}  // namespace molt::kernel::deploy
