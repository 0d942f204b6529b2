// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/pin_verbs.cc
//
// molt pin and molt unpin: the build resolved on this server's branch, the canonical pin string
// signed with the operator's keys (signing_keys.h), posted, and the answer reported.
#include "hosts/molt/pin_verbs.h"

#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <variant>

#include "hosts/molt/cli.h"
#include "hosts/molt/session.h"
#include "hosts/molt/signing_keys.h"
#include "kernel/src/loader/signing.h"

namespace molt::cli {
namespace {

namespace loader = kernel::loader;

// pin and unpin: sign for this server's branch, post, report.
int PinOrUnpin(Session& s, bool unpin, const std::string& build) {
  const cxxopts::ParseResult& p = s.parsed();
  Result<SigningKeys> keys = SigningKeys::Read(p);
  if (!keys.ok()) {
    return Fail(kExitUsage, keys.status().message());
  }
  auto branches = s.Call("GET", "/api/v1/branches");
  if (auto* code = std::get_if<int>(&branches)) {
    return *code;
  }
  const std::string branch = Text(std::get<json::value>(branches), "branch");
  std::string sha;
  if (!unpin) {
    auto resolved =
        s.Call("GET", "/api/v1/resolve?branch=" + UrlEncode(branch) + "&build=" + UrlEncode(build));
    if (auto* code = std::get_if<int>(&resolved)) {
      return *code;
    }
    sha = Text(std::get<json::value>(resolved).at("build"), "sha256");
  }
  const auto now =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  const std::string by = p.count("by") > 0     ? p["by"].as<std::string>()
                         : Env("USER").empty() ? ""
                                               : Env("USER");
  json::object body{{"build", sha}, {"sent_ms", now}, {"by", by}};
  if (keys->any()) {
    loader::PinFields f;
    f.branch = branch;
    f.build = sha;
    f.by = by;
    f.sent_ms = now;
    f.unpin = unpin;
    keys->SignInto(loader::CanonicalPin(f), body);
  }
  const int wait = p.count("wait") > 0 ? p["wait"].as<int>() : 60;
  Result<HttpAnswer> a = s.client().Call(
      "POST", std::string("/api/v1/") + (unpin ? "unpin" : "pin") + "?wait=" + std::to_string(wait),
      std::chrono::seconds(wait + 30), json::serialize(body));
  if (!a.ok()) {
    return Fail(kExitUnreachable, a.status().message());
  }
  boost::system::error_code ec;
  const json::value answer = json::parse(a->body, ec);
  if (ec || !answer.is_object()) {
    return Fail(kExitFailed, "moltd answered " + std::to_string(a->status) + ": " + a->body);
  }
  const std::string result = a->status == 409 ? "refused" : Text(answer, "result");
  const std::string reason = a->status == 409 ? Text(answer, "error") : Text(answer, "reason");
  const bool ok = a->status < 300 && result != "failed";
  if (s.common().json) {
    json::object o{{"result", result}, {"build", Text(answer, "build")}, {"branch", branch}};
    if (!reason.empty()) {
      o["reason"] = reason;
    }
    PrintJson(o);
  } else if (!ok) {
    std::cout << result << ": " << reason << "\n";
  } else if (unpin) {
    std::cout << "unpinned: " << Text(answer, "build") << " (the head of " << branch << ") "
              << result << "\n";
  } else {
    std::cout << "pinned to " << Text(answer, "build") << " (" << result << ") until the next "
              << "deploy of " << branch << " reaches this server, or molt unpin\n";
  }
  return ok ? kExitOk : kExitFailed;
}

void AddPinOptions(cxxopts::Options& o) {
  o.add_options()("wait", "seconds to wait for the swap (default 60)", cxxopts::value<int>(), "S")(
      "by", "who pins (default $USER)", cxxopts::value<std::string>())(
      "key", "sign with this main key file (else MOLT_KEY_FILE)", cxxopts::value<std::string>())(
      "fallback-key", "sign with this fallback key file too (else MOLT_FALLBACK_KEY_FILE)",
      cxxopts::value<std::string>());
}

}  // namespace

int PinCommand(int argc, char** argv) {
  Session s("pin",
            "Holds this server on a build some branch was deployed with: molt pin BUILD|#SEQ.\n"
            "It swaps the build in and stays on it until the next deploy of its branch reaches\n"
            "it, molt unpin, or its close (a pin is never stored). Prod-rules servers take only\n"
            "signed pins (--key or MOLT_KEY_FILE), within 120 s of their signing.");
  s.options().add_options()("build", "the build (id, SHA-256 or #SEQ)",
                            cxxopts::value<std::string>());
  AddPinOptions(s.options());
  s.options().parse_positional({"build"});
  s.options().positional_help("BUILD|#SEQ");
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  if (s.parsed().count("build") == 0) {
    return Fail(kExitUsage, "which build? molt pin BUILD|#SEQ (molt deployments lists them)");
  }
  return PinOrUnpin(s, false, s.parsed()["build"].as<std::string>());
}

int UnpinCommand(int argc, char** argv) {
  Session s("unpin", "Ends this server's pin: its branch's head is swapped in again.");
  AddPinOptions(s.options());
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  return PinOrUnpin(s, true, "");
}

}  // namespace molt::cli
