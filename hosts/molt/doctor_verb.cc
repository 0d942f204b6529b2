// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/doctor_verb.cc
//
// molt doctor: each check printed as it runs (FAIL, warn or ok), or all of them as JSON.
#include "hosts/molt/doctor_verb.h"

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "hosts/molt/cli.h"
#include "hosts/molt/session.h"
#include "kernel/src/loader/signing.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;
namespace loader = kernel::loader;

// A deployment of the server's branch still pending that no swap is settling: its deploy was
// cut (a kill mid-deploy) and the boot after it could not settle it (docs/deploys.md).
constexpr std::int64_t kStuckPendingMs = 10 * 60 * 1000;

template <class Check>
void Deployments(Session& s, const std::string& branch, const Check& check) {
  Result<HttpAnswer> a = s.client().Call(
      "GET", "/api/v1/deployments?limit=100&branch=" + UrlEncode(branch), std::chrono::seconds(10));
  boost::system::error_code ec;
  const json::value v = a.ok() && a->status == 200 ? json::parse(a->body, ec) : json::value();
  if (!v.is_object() || !v.as_object().contains("deployments")) {
    check(
        "deployments", "warn",
        "cannot be read: " + (a.ok() ? "HTTP " + std::to_string(a->status) : a.status().message()));
    return;
  }
  const auto& list = v.at("deployments").as_array();
  std::uint64_t newest = 0;
  for (const json::value& d : list) {
    newest = std::max(newest, Whole(d, "seq"));
  }
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  std::string stuck;
  for (const json::value& d : list) {
    const auto at = static_cast<std::int64_t>(Whole(d, "at_ms"));
    if (Text(d, "result") == "pending" &&
        (Whole(d, "seq") < newest || now - at > kStuckPendingMs)) {
      stuck += (stuck.empty() ? "" : ", ") + ("#" + std::to_string(Whole(d, "seq"))) + " (" +
               Age(at) + ")";
    }
  }
  check("deployments", stuck.empty() ? "ok" : "FAIL",
        stuck.empty() ? "none of " + branch + " left pending"
                      : "left pending by a deploy that was cut, and not settled: " + stuck +
                            " (moltd settles them when it starts: restart it, and read its log "
                            "if they stay)");
}

}  // namespace

int DoctorCommand(int argc, char** argv) {
  Session s("doctor",
            "Checks what deploys need: the server answers and takes the token, its rules and "
            "keys, your signing key, and moltd for molt build. Exits 1 when a check fails.");
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  int failures = 0;
  json::array checks;
  auto check = [&](const std::string& what, const std::string& level, const std::string& note) {
    failures += level == "FAIL" ? 1 : 0;
    checks.push_back(json::object{{"check", what}, {"level", level}, {"note", note}});
    if (!s.common().json) {
      std::printf("%-5s %s%s\n", level.c_str(), what.c_str(),
                  note.empty() ? "" : (": " + note).c_str());
    }
  };
  Result<HttpAnswer> a = s.client().Call("GET", "/api/v1/branches", std::chrono::seconds(10));
  json::value branches;
  if (!a.ok()) {
    check("server", "FAIL", a.status().message());
  } else if (a->status == 401) {
    check("server", "ok", "moltd answers at " + s.common().server);
    check("token", "FAIL", "refused: pass that server's token (MOLT_TOKEN, --token-file, --data)");
  } else {
    check("server", "ok", "moltd answers at " + s.common().server);
    check("token", "ok", "");
    boost::system::error_code ec;
    branches = json::parse(a->body, ec);
  }
  std::vector<std::string> trusted;
  if (branches.is_object()) {
    const json::value& keys = branches.at("keys");
    for (const json::value& k : keys.at("main").as_array()) {
      trusted.emplace_back(k.as_string());
    }
    const bool prod = Text(branches, "rules") == "prod";
    const bool any = !trusted.empty() || keys.at("fallback").is_string();
    check("rules", prod && !any ? "FAIL" : "ok",
          "branch " + Text(branches, "branch") + ", " + Text(branches, "rules") + " rules" +
              (prod && !any ? ": no trusted keys, so every deploy is refused (list a public key "
                              "in the file deploy.keys names, then SIGHUP moltd)"
                            : ", " + std::to_string(trusted.size()) + " main key(s)"));
  }
  if (branches.is_object()) {
    Deployments(s, Text(branches, "branch"), check);
  }
  std::string key_file = Env("MOLT_KEY_FILE");
  if (key_file.empty() && !Env("HOME").empty()) {
    key_file = Env("HOME") + "/.config/molt/keys/main.key";
  }
  Result<loader::PrivateKey> key = loader::ReadPrivateKey(key_file);
  if (!key.ok()) {
    check("signing key", "warn", key.status().message() + " (molt keys init makes one)");
  } else {
    const std::string fp = loader::Fingerprint(loader::PublicKeyOf(*key).value());
    const bool listed = std::find(trusted.begin(), trusted.end(), fp) != trusted.end();
    check("signing key", listed || trusted.empty() ? "ok" : "warn",
          key_file + " (" + fp + ")" +
              (listed            ? ", trusted by the server"
               : trusted.empty() ? ""
                                 : ", not among the server's main keys"));
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const bool moltd = !ec && fs::exists(self.parent_path() / "moltd", ec);
  check("moltd", moltd || !Env("MOLTD").empty() ? "ok" : "warn",
        moltd ? (self.parent_path() / "moltd").string()
              : "not beside molt: molt build needs --moltd PATH or MOLTD");
  if (s.common().json) {
    PrintJson(json::object{{"checks", std::move(checks)}, {"ok", failures == 0}});
  }
  return failures == 0 ? kExitOk : kExitFailed;
}

}  // namespace molt::cli
