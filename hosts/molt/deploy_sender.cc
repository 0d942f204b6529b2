// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/deploy_sender.cc
//
// SendDeploy in its steps: the upload of a build file, the signed body, the post and its retry.
#include "hosts/molt/deploy_sender.h"

#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "hosts/molt/cli.h"
#include "hosts/molt/signing_keys.h"
#include "kernel/src/loader/signing.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;
namespace loader = kernel::loader;

// Uploads the build file at `path` (a progress line on a terminal for one over 1 MB); the
// SHA-256 the server stored it under, or the exit code of a failure already printed.
std::variant<int, std::string> UploadBuild(Session& s, const std::string& path) {
  std::error_code ec;
  const std::uint64_t size = fs::file_size(path, ec);
  const bool show = !s.common().json && size > (1u << 20) && ::isatty(2);
  auto progress = [&](std::uint64_t sent, std::uint64_t total) {
    if (show) {
      std::fprintf(stderr, "\ruploading %s: %3d%% of %s", fs::path(path).filename().c_str(),
                   static_cast<int>(sent * 100 / std::max<std::uint64_t>(total, 1)),
                   Megabytes(total).c_str());
    }
  };
  auto up =
      s.Answered(s.client().Upload("/api/v1/builds", path, progress, std::chrono::seconds(600)));
  if (show) {
    std::fprintf(stderr, "\n");
  }
  if (auto* code = std::get_if<int>(&up)) {
    return *code;
  }
  return Text(std::get<json::value>(up).at("build"), "sha256");
}

// The body of a `kind` of `target` (the resolved build) to `branch` under `seq`, signed with
// `keys` when there are any.
json::object DeployBody(const Session& s, const std::string& kind, const std::string& branch,
                        const json::value& target, std::uint64_t seq, const SigningKeys& keys) {
  const cxxopts::ParseResult& p = s.parsed();
  const int rollout = p.count("rollout") > 0 ? p["rollout"].as<int>() : 100;  // checked before
  const std::string by = p.count("by") > 0     ? p["by"].as<std::string>()
                         : Env("USER").empty() ? ""
                                               : Env("USER");
  const auto now =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  json::object body{{"branch", branch},
                    {"rollout", kind == "deploy" ? rollout : 100},
                    {kind == "rollback" ? "to" : "build", Text(target, "sha256")},
                    {"sent_ms", now},
                    {"force", p.count("force") > 0},
                    {"message", p["message"].as<std::string>()},
                    {"by", by}};
  if (keys.any()) {
    loader::DeployFields f;
    f.branch = branch;
    f.build = Text(target, "sha256");
    f.build_id = Text(target, "id");
    f.seq = seq;
    f.commit = Text(target, "commit");
    f.channel = Text(target, "channel");
    f.sent_ms = now;
    f.reason = loader::DeployReasonField(kind);
    body["seq"] = seq;
    keys.SignInto(loader::CanonicalDeploy(f), body);
  }
  return body;
}

}  // namespace

std::variant<int, Posted> SendDeploy(Session& s, const std::string& kind, const std::string& branch,
                                     std::string build, int wait) {
  Result<SigningKeys> keys = SigningKeys::Read(s.parsed());
  if (!keys.ok()) {
    return Fail(kExitUsage, keys.status().message());
  }
  std::error_code ec;
  if (kind != "rollback" && fs::is_regular_file(build, ec)) {
    auto sha = UploadBuild(s, build);
    if (auto* code = std::get_if<int>(&sha)) {
      return *code;
    }
    build = std::get<std::string>(sha);
  }
  for (int attempt = 0;; ++attempt) {
    auto resolved =
        s.Call("GET", "/api/v1/resolve?branch=" + UrlEncode(branch) + "&build=" + UrlEncode(build) +
                          (kind == "rollback" ? "&rollback=1" : ""));
    if (auto* code = std::get_if<int>(&resolved)) {
      return *code;
    }
    const json::value& target = std::get<json::value>(resolved).at("build");
    const std::uint64_t seq = Whole(std::get<json::value>(resolved), "next_seq");
    const json::object body = DeployBody(s, kind, branch, target, seq, *keys);
    Result<HttpAnswer> a = s.client().Call(
        "POST", "/api/v1/" + kind + (wait > 0 ? "?wait=" + std::to_string(wait) : ""),
        std::chrono::seconds(wait + 30), json::serialize(body));
    if (!a.ok()) {
      return Fail(kExitUnreachable, a.status().message());
    }
    boost::system::error_code jec;
    json::value answer = json::parse(a->body, jec);
    if (jec || !answer.is_object()) {
      return Fail(kExitFailed, "moltd answered " + std::to_string(a->status) + ": " + a->body);
    }
    if (a->status == 409 && attempt < 3 &&
        Text(answer, "error").find("was taken already") != std::string::npos) {
      continue;  // another deploy took that seq meanwhile: sign the next one
    }
    if (a->status == 401) {
      return Fail(kExitUnreachable, "moltd at " + s.common().server + " refused the admin token");
    }
    if (a->status != 200 && a->status != 202 && a->status != 409) {
      return Fail(kExitFailed,
                  "moltd answered " + std::to_string(a->status) + ": " + Text(answer, "error"));
    }
    return Posted{a->status, std::move(answer)};
  }
}

}  // namespace molt::cli
