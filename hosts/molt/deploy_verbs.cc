// SPDX-License-Identifier: Apache-2.0
// molt's deploy verbs (docs/deploys.md): deploy, promote, rollback and the registry's lists, over
// the admin API's deploy calls; deploys signed here, with the operator's key.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <thread>
#include <variant>

#include "hosts/molt/cli.h"
#include "hosts/molt/session.h"
#include "kernel/src/loader/signing.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;
namespace loader = kernel::loader;

std::string Megabytes(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// The key files a deploy is signed with: --key / MOLT_KEY_FILE, --fallback-key /
// MOLT_FALLBACK_KEY_FILE. None: unsigned (a dev server takes that).
struct Keys {
  std::optional<loader::PrivateKey> main;
  std::optional<loader::PrivateKey> fallback;
};

Result<Keys> ReadKeys(const cxxopts::ParseResult& parsed) {
  Keys keys;
  const std::string main =
      parsed.count("key") > 0 ? parsed["key"].as<std::string>() : Env("MOLT_KEY_FILE");
  const std::string fallback = parsed.count("fallback-key") > 0
                                   ? parsed["fallback-key"].as<std::string>()
                                   : Env("MOLT_FALLBACK_KEY_FILE");
  if (!main.empty()) {
    MOLT_ASSIGN_OR_RETURN(keys.main, loader::ReadPrivateKey(main));
  }
  if (!fallback.empty()) {
    MOLT_ASSIGN_OR_RETURN(keys.fallback, loader::ReadPrivateKey(fallback));
  }
  return keys;
}

void AddDeployOptions(cxxopts::Options& o) {
  o.add_options()("wait", "wait for the swap's outcome, up to S seconds (default 60 with --wait)",
                  cxxopts::value<int>()->implicit_value("60"),
                  "S")("message", "what this deploy is for (in the history)",
                       cxxopts::value<std::string>()->default_value(""))(
      "by", "who deploys (default $USER)", cxxopts::value<std::string>())(
      "key", "sign with this main key file (else MOLT_KEY_FILE)", cxxopts::value<std::string>())(
      "fallback-key", "sign with this fallback key file too (else MOLT_FALLBACK_KEY_FILE)",
      cxxopts::value<std::string>())("force",
                                     "take a build that failed on the server, or a dev "
                                     "or dirty build onto a prod branch")(
      "rollback-at",
      "with --wait: roll the branch back when this share of the servers that tried the build "
      "failed or rolled it back (default 20)",
      cxxopts::value<int>(),
      "PCT")("no-auto-rollback", "with --wait: report failures, never roll back");
}

// One deployment's outcome as the CLI shows it: its JSON object, its line, and whether it is a
// success (the exit code it means).
struct Outcome {
  json::object json;
  std::string text;
  bool ok = false;
};

Outcome Describe(const json::value& d, int http_status) {
  Outcome out;
  const std::string result = http_status == 409 ? "refused" : Text(d, "result");
  const std::string reason = http_status == 409 ? Text(d, "error") : Text(d, "reason");
  out.ok = result == "swapped" || result == "adopted" || result == "recorded" ||
           result == "pending" || result == "skipped";
  out.json["result"] = result;
  if (http_status != 409) {
    out.json["seq"] = Whole(d, "seq");
    out.json["build"] = Text(d, "build_id");
    out.json["sha256"] = Text(d, "build");
    out.json["branch"] = Text(d, "branch");
    out.json["kind"] = Text(d, "kind");
    out.json["protocol"] = Text(d, "protocol");
    out.json["rollout"] = Whole(d, "rollout");
    if (const json::value* r = d.as_object().if_contains("report"); r != nullptr) {
      out.json["report"] = *r;
    }
  }
  if (!reason.empty()) {
    out.json["reason"] = reason;
  }
  if (http_status == 409) {
    out.text = "refused: " + reason;
    return out;
  }
  out.text = "#" + std::to_string(Whole(d, "seq")) + " " + Text(d, "branch") + ": " +
             Text(d, "build_id") + " ";
  const json::value* report = d.as_object().if_contains("report");
  if (result == "swapped" && report != nullptr && report->is_object()) {
    char hold[64];
    std::snprintf(hold, sizeof hold, "%.3f ms", Number(report->at("hold_ms")));
    out.text += "swapped (" + Text(*report, "serving") + " serves, was " +
                Text(*report, "previous") + "), hold " + hold;
  } else if (result == "adopted") {
    out.text += "adopted: it serves already (no swap)";
  } else if (result == "recorded") {
    out.text += "recorded: the head moved; this server runs another branch";
  } else if (result == "skipped") {
    out.text += "recorded; this server is " + reason + " and keeps what it serves";
  } else if (result == "pending") {
    out.text += "deployed; the swap is under way (molt deployments shows its result)";
  } else {
    out.text += result + (reason.empty() ? "" : ": " + reason);
  }
  const std::string protocol = Text(d, "protocol");
  out.text += protocol.empty() ? "" : "; protocol " + protocol;
  return out;
}

// Prints one deployment's outcome; the exit code it means.
int Report(const Common& common, const json::value& d, int http_status) {
  const Outcome o = Describe(d, http_status);
  if (common.json) {
    PrintJson(o.json);
  } else {
    std::cout << o.text << "\n";
  }
  return o.ok ? kExitOk : kExitFailed;
}

// A deployment's report: every server of its branch with its result (GET /api/v1/report).
using FleetReport = std::variant<json::value, int>;

// The report of `seq` once every live server of its branch answered, or at `deadline` (polled
// every 200 ms: the spec's 5 s is for a fleet API elsewhere; this one is one indexed query).
FleetReport AwaitReport(Session& s, std::uint64_t seq,
                        std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    FleetReport r = s.Call("GET", "/api/v1/report?seq=" + std::to_string(seq));
    if (std::holds_alternative<int>(r) ||
        std::get<json::value>(r).at("summary").at("done").as_bool() ||
        std::chrono::steady_clock::now() + std::chrono::milliseconds(200) > deadline) {
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// The report's summary line: "3 servers: 2 swapped, 1 skipped; 1 failed (33%)".
std::string SummaryLine(const json::value& report) {
  const json::value& sum = report.at("summary");
  std::string line = std::to_string(Whole(sum, "servers")) + " server(s):";
  bool first = true;
  for (const char* r : {"swapped", "adopted", "booted", "skipped", "failed", "rolled_back",
                        "pending", "draining", "lost"}) {
    if (const std::uint64_t n = Whole(sum, r); n > 0) {
      line += std::string(first ? " " : ", ") + std::to_string(n) + " " + r;
      first = false;
    }
  }
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.0f%%", Number(sum.at("failed_pct")));
  if (Whole(sum, "failed") > 0) {
    line += std::string("; ") + pct + " of those that tried it failed";
  }
  for (const json::value& row : report.at("servers").as_array()) {
    const std::string result = Text(row, "result");
    if (result == "failed" || result == "rolled_back" || result == "pending") {
      line += "\n  " + Text(row, "id") + ": " + result +
              (Text(row, "reason").empty() ? "" : " (" + Text(row, "reason") + ")");
    }
  }
  return line;
}

// deploy, promote, rollback and resign: resolve the build, sign, post; the server's answer (its
// HTTP status and JSON), or the exit code of a failure already told.
struct Posted {
  int status = 0;
  json::value answer;
};
std::variant<int, Posted> Post(Session& s, const std::string& kind, const std::string& branch,
                               std::string build, int wait) {
  const cxxopts::ParseResult& p = s.parsed();
  Result<Keys> keys = ReadKeys(p);
  if (!keys.ok()) {
    return Fail(kExitUsage, keys.status().message());
  }
  const int rollout = p.count("rollout") > 0 ? p["rollout"].as<int>() : 100;  // checked before
  // A build file: uploaded first (the server verifies and stores it), then named by its hash.
  std::error_code ec;
  if (kind != "rollback" && fs::is_regular_file(build, ec)) {
    const std::uint64_t size = fs::file_size(build, ec);
    const bool show = !s.common().json && size > (1u << 20) && ::isatty(2);
    auto progress = [&](std::uint64_t sent, std::uint64_t total) {
      if (show) {
        std::fprintf(stderr, "\ruploading %s: %3d%% of %s", fs::path(build).filename().c_str(),
                     static_cast<int>(sent * 100 / std::max<std::uint64_t>(total, 1)),
                     Megabytes(total).c_str());
      }
    };
    auto up =
        s.Answered(s.client().Upload("/api/v1/builds", build, progress, std::chrono::seconds(600)));
    if (show) {
      std::fprintf(stderr, "\n");
    }
    if (auto* code = std::get_if<int>(&up)) {
      return *code;
    }
    build = Text(std::get<json::value>(up).at("build"), "sha256");
  }
  const std::string by = p.count("by") > 0     ? p["by"].as<std::string>()
                         : Env("USER").empty() ? ""
                                               : Env("USER");
  for (int attempt = 0;; ++attempt) {
    auto resolved =
        s.Call("GET", "/api/v1/resolve?branch=" + UrlEncode(branch) + "&build=" + UrlEncode(build) +
                          (kind == "rollback" ? "&rollback=1" : ""));
    if (auto* code = std::get_if<int>(&resolved)) {
      return *code;
    }
    const json::value& target = std::get<json::value>(resolved).at("build");
    const std::uint64_t seq = Whole(std::get<json::value>(resolved), "next_seq");
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
    if (keys->main || keys->fallback) {
      loader::DeployFields f;
      f.branch = branch;
      f.build = Text(target, "sha256");
      f.build_id = Text(target, "id");
      f.seq = seq;
      f.commit = Text(target, "commit");
      f.channel = Text(target, "channel");
      f.sent_ms = now;
      f.reason = loader::DeployReasonField(kind);
      const std::string message = loader::CanonicalDeploy(f);
      body["seq"] = seq;
      if (keys->main) {
        body["sig"] = loader::Sign(*keys->main, message).value();
      }
      if (keys->fallback) {
        body["sig_fallback"] = loader::Sign(*keys->fallback, message).value();
      }
    }
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

// deploy, promote, rollback and resign, reported. With --wait, every server of the branch is
// waited for (molt report's view); when --rollback-at % or more of those that tried the build
// failed or rolled back it, the branch is rolled back (unless --no-auto-rollback) and the exit
// code is 1 (docs/fleet.md, "Deploy reports").
int Ship(Session& s, const std::string& kind, const std::string& branch, std::string build) {
  const cxxopts::ParseResult& p = s.parsed();
  int wait = 0;
  if (p.count("wait") > 0) {
    wait = p["wait"].as<int>();
    if (wait < 1 || wait > 600) {
      return Fail(kExitUsage, "--wait is 1 to 600 seconds");
    }
  }
  const int rollback_at = p.count("rollback-at") > 0 ? p["rollback-at"].as<int>() : 20;
  if (rollback_at < 1 || rollback_at > 100) {
    return Fail(kExitUsage, "--rollback-at is 1 to 100 (% of the servers that tried the build)");
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait);
  auto posted = Post(s, kind, branch, std::move(build), wait);
  if (auto* code = std::get_if<int>(&posted)) {
    return *code;
  }
  Posted& first = std::get<Posted>(posted);
  if (first.status == 409) {
    return Report(s.common(), first.answer, 409);
  }
  const json::value& d = first.answer.at("deployment");
  Outcome out = Describe(d, first.status);
  if (wait == 0 || kind == "resign") {
    return Report(s.common(), d, first.status);
  }
  FleetReport fleet = AwaitReport(s, Whole(d, "seq"), deadline);
  if (auto* code = std::get_if<int>(&fleet)) {
    return *code;
  }
  const json::value& report = std::get<json::value>(fleet);
  const json::value& sum = report.at("summary");
  out.json["fleet"] = sum;
  out.json["servers"] = report.at("servers");
  out.text += "\n" + SummaryLine(report);
  const std::uint64_t failed = Whole(sum, "failed");
  const bool over = failed > 0 && Number(sum.at("failed_pct")) >= rollback_at;
  if (failed > 0) {
    out.ok = false;
  }
  if (!sum.at("done").as_bool()) {
    out.text += "\nwarning: still pending after " + std::to_string(wait) +
                " s (stuck or slow servers above; molt report " + std::to_string(Whole(d, "seq")) +
                " shows them later)";
  }
  if (over && p.count("no-auto-rollback") == 0 && kind != "rollback") {
    out.text += "\nauto-rollback: at least " + std::to_string(rollback_at) +
                "% of the servers that tried it failed or rolled it back: rolling " + branch +
                " back";
    if (!s.common().json && ::isatty(1)) {
      std::cout << out.text << " in 10 s (Ctrl+C keeps the new build)" << std::endl;
      out.text.clear();
      std::this_thread::sleep_for(std::chrono::seconds(10));
    }
    auto back = Post(s, "rollback", branch, "", wait);
    if (auto* code = std::get_if<int>(&back)) {
      return *code;
    }
    Posted& rb = std::get<Posted>(back);
    const json::value& rd = rb.status == 409 ? rb.answer : rb.answer.at("deployment");
    Outcome rolled = Describe(rd, rb.status);
    if (rb.status != 409) {
      FleetReport after = AwaitReport(
          s, Whole(rd, "seq"), std::chrono::steady_clock::now() + std::chrono::seconds(wait));
      if (auto* r = std::get_if<json::value>(&after)) {
        rolled.json["fleet"] = r->at("summary");
        rolled.text += "\n" + SummaryLine(*r);
      }
    }
    out.json["auto_rollback"] = rolled.json;
    out.text += (out.text.empty() ? "" : "\n") + rolled.text;
    out.ok = false;
  }
  if (s.common().json) {
    PrintJson(out.json);
  } else if (!out.text.empty()) {
    std::cout << out.text << "\n";
  }
  return out.ok ? kExitOk : kExitFailed;
}

// pin and unpin: sign for this server's branch, post, report.
int PinOrUnpin(Session& s, bool unpin, const std::string& build) {
  const cxxopts::ParseResult& p = s.parsed();
  Result<Keys> keys = ReadKeys(p);
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
  if (keys->main || keys->fallback) {
    loader::PinFields f;
    f.branch = branch;
    f.build = sha;
    f.by = by;
    f.sent_ms = now;
    f.unpin = unpin;
    const std::string message = loader::CanonicalPin(f);
    if (keys->main) {
      body["sig"] = loader::Sign(*keys->main, message).value();
    }
    if (keys->fallback) {
      body["sig_fallback"] = loader::Sign(*keys->fallback, message).value();
    }
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

// deploy --widen PCT: the branch head's rollout reaches more servers (the same seq).
int Widen(Session& s, const std::string& branch, int rollout) {
  const cxxopts::ParseResult& p = s.parsed();
  if (rollout < 1 || rollout > 100) {
    return Fail(kExitUsage, "--widen is 1 to 100 (% of the branch's servers)");
  }
  const int wait = p.count("wait") > 0 ? p["wait"].as<int>() : 0;
  const std::string by = p.count("by") > 0 ? p["by"].as<std::string>() : Env("USER");
  const json::object body{{"branch", branch}, {"rollout", rollout}, {"by", by}};
  Result<HttpAnswer> a =
      s.client().Call("POST", "/api/v1/widen" + (wait > 0 ? "?wait=" + std::to_string(wait) : ""),
                      std::chrono::seconds(wait + 30), json::serialize(body));
  if (!a.ok()) {
    return Fail(kExitUnreachable, a.status().message());
  }
  boost::system::error_code ec;
  const json::value answer = json::parse(a->body, ec);
  if (ec || !answer.is_object()) {
    return Fail(kExitFailed, "moltd answered " + std::to_string(a->status) + ": " + a->body);
  }
  if (a->status == 409) {
    return Report(s.common(), answer, 409);
  }
  if (a->status != 200 && a->status != 202) {
    return Fail(kExitFailed,
                "moltd answered " + std::to_string(a->status) + ": " + Text(answer, "error"));
  }
  return Report(s.common(), answer.at("deployment"), a->status);
}

int DeployCommand(int argc, char** argv) {
  Session s("deploy",
            "Deploys a build to a branch: molt deploy BUILD_FILE|BUILD --branch B.\n"
            "A build file is uploaded first (the server verifies and stores it); a BUILD is\n"
            "one the server has (its id, SHA-256 or #SEQ: molt builds). The branch's head\n"
            "moves and a server running it swaps the build in. Prod-rules servers take only\n"
            "deploys signed by a trusted key (--key or MOLT_KEY_FILE). Exits 1 when the deploy\n"
            "was refused, failed or rolled back.\n"
            "A rollout (--rollout PCT, dev rules only: it is not signed) reaches the servers\n"
            "whose bucket (djb2 of the server id, mod 100) is below PCT; the others report\n"
            "skipped and keep what they serve. molt deploy --widen PCT --branch B widens the\n"
            "head's rollout (the same seq, more servers).");
  s.options().add_options()("branch", "the branch to deploy to",
                            cxxopts::value<std::string>()->default_value("prod"))(
      "build", "a build file, or a stored build", cxxopts::value<std::string>())(
      "rollout", "only this share of the branch's servers swap, 1 to 99 (%)", cxxopts::value<int>(),
      "PCT")("widen", "widen the branch head's rollout to PCT, 1 to 100", cxxopts::value<int>(),
             "PCT");
  AddDeployOptions(s.options());
  s.options().parse_positional({"build"});
  s.options().positional_help("BUILD_FILE|BUILD");
  if (auto done = s.ParseFlags(argc, argv)) {
    return *done;
  }
  if (const int pct = s.parsed().count("rollout") > 0 ? s.parsed()["rollout"].as<int>() : 50;
      pct < 1 || pct > 99) {
    return Fail(kExitUsage,
                "--rollout is 1 to 99 (% of the branch's servers; leave it out for all)");
  }
  if (s.parsed().count("widen") > 0) {
    if (s.parsed().count("build") > 0 || s.parsed().count("rollout") > 0) {
      return Fail(kExitUsage,
                  "--widen names no build and no --rollout: molt deploy --widen PCT "
                  "--branch B");
    }
    if (auto done = s.Connect()) {
      return *done;
    }
    return Widen(s, s.parsed()["branch"].as<std::string>(), s.parsed()["widen"].as<int>());
  }
  if (s.parsed().count("build") == 0) {
    return Fail(kExitUsage, "which build? molt deploy BUILD_FILE|BUILD --branch B");
  }
  if (auto done = s.Connect()) {
    return *done;
  }
  return Ship(s, "deploy", s.parsed()["branch"].as<std::string>(),
              s.parsed()["build"].as<std::string>());
}

int PromoteCommand(int argc, char** argv) {
  Session s("promote",
            "Deploys a build the server has to another branch, without a rebuild: molt promote\n"
            "BRANCH BUILD|#SEQ. A prod branch takes only prod builds, even with --force.");
  s.options().add_options()("target", "the branch", cxxopts::value<std::string>())(
      "build", "the build (id, SHA-256 or #SEQ)", cxxopts::value<std::string>());
  AddDeployOptions(s.options());
  s.options().parse_positional({"target", "build"});
  s.options().positional_help("BRANCH BUILD|#SEQ");
  if (auto done = s.ParseFlags(argc, argv)) {
    return *done;
  }
  if (s.parsed().count("build") == 0) {
    return Fail(kExitUsage, "which branch and build? molt promote BRANCH BUILD|#SEQ");
  }
  if (auto done = s.Connect()) {
    return *done;
  }
  return Ship(s, "promote", s.parsed()["target"].as<std::string>(),
              s.parsed()["build"].as<std::string>());
}

int RollbackCommand(int argc, char** argv) {
  Session s("rollback",
            "Deploys a branch's previous build again: molt rollback --branch B [--to BUILD|#SEQ].\n"
            "Without --to, the previous different head of the branch.");
  s.options().add_options()("branch", "the branch to roll back",
                            cxxopts::value<std::string>()->default_value("prod"))(
      "to", "the build to go back to (id, SHA-256 or #SEQ)", cxxopts::value<std::string>());
  AddDeployOptions(s.options());
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  return Ship(s, "rollback", s.parsed()["branch"].as<std::string>(),
              s.parsed().count("to") > 0 ? s.parsed()["to"].as<std::string>() : "");
}

int KeysResignCommand(int argc, char** argv) {
  Session s("keys resign",
            "Re-signs the head of every prod branch (or of --branch B) with the main key\n"
            "(--key or MOLT_KEY_FILE): the same build under a new seq, taken without a swap.\n"
            "After molt keys rotate revoked the old key (and the servers read the new keys:\n"
            "SIGHUP), a head signed by the old one no longer verifies, so a prod server that\n"
            "restarts would pass it over; this signs it again. Exits 1 when one is refused.");
  s.options().add_options()("branch", "only this branch (default: every prod branch)",
                            cxxopts::value<std::string>());
  AddDeployOptions(s.options());
  if (auto done = s.ParseFlags(argc, argv)) {
    return *done;
  }
  if (s.parsed().count("key") == 0 && Env("MOLT_KEY_FILE").empty()) {
    return Fail(kExitUsage, "re-sign with which key? --key FILE (or MOLT_KEY_FILE)");
  }
  if (auto done = s.Connect()) {
    return *done;
  }
  auto r = s.Call("GET", "/api/v1/branches");
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  const std::string only =
      s.parsed().count("branch") > 0 ? s.parsed()["branch"].as<std::string>() : std::string();
  int worst = kExitOk;
  int signed_heads = 0;
  for (const json::value& b : std::get<json::value>(r).at("branches").as_array()) {
    const std::string name = Text(b, "name");
    if (only.empty() ? name != "prod" : name != only) {
      continue;
    }
    ++signed_heads;
    worst = std::max(worst, Ship(s, "resign", name, Text(b.at("head"), "sha256")));
  }
  if (signed_heads == 0) {
    return Fail(kExitFailed, only.empty() ? "the server has no prod branch to re-sign"
                                          : "the server has no branch \"" + only + "\"");
  }
  return worst;
}

int ReportCommand(int argc, char** argv) {
  Session s("report",
            "One deployment on every server of its branch: molt report SEQ. Each server's\n"
            "result (swapped, adopted, booted, skipped, failed, rolled_back; pending while it\n"
            "has not answered, lost when its heartbeats stopped). Exits 1 when a server failed\n"
            "or rolled it back.");
  s.options().add_options()("seq", "the deployment's number (#SEQ or SEQ)",
                            cxxopts::value<std::string>());
  s.options().parse_positional({"seq"});
  s.options().positional_help("SEQ");
  if (auto done = s.ParseFlags(argc, argv)) {
    return *done;
  }
  std::string seq = s.parsed().count("seq") > 0 ? s.parsed()["seq"].as<std::string>() : "";
  if (!seq.empty() && seq[0] == '#') {
    seq.erase(0, 1);
  }
  if (seq.empty() || seq.size() > 18 || seq.find_first_not_of("0123456789") != std::string::npos) {
    return Fail(kExitUsage, "which deployment? molt report SEQ (molt deployments lists them)");
  }
  if (auto done = s.Connect()) {
    return *done;
  }
  auto r = s.Call("GET", "/api/v1/report?seq=" + seq);
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  const json::value& v = std::get<json::value>(r);
  const bool failed = Whole(v.at("summary"), "failed") > 0;
  if (s.common().json) {
    PrintJson(v);
    return failed ? kExitFailed : kExitOk;
  }
  const json::value& d = v.at("deployment");
  std::cout << "#" << Whole(d, "seq") << " " << Text(d, "branch") << ": " << Text(d, "kind") << " "
            << Text(d, "build_id") << " by " << (Text(d, "by").empty() ? "-" : Text(d, "by"))
            << ", " << Age(static_cast<std::int64_t>(Whole(d, "at_ms")))
            << (Whole(d, "rollout") < 100 ? ", rollout " + std::to_string(Whole(d, "rollout")) + "%"
                                          : std::string())
            << "\n";
  std::vector<std::vector<std::string>> rows = {{"SERVER", "RESULT", "STATE", "APPLIED", "REASON"}};
  for (const json::value& row : v.at("servers").as_array()) {
    rows.push_back({Text(row, "id"), Text(row, "result"), Text(row, "state"),
                    row.as_object().contains("applied_seq")
                        ? "#" + std::to_string(Whole(row, "applied_seq"))
                        : "-",
                    Text(row, "reason").empty() ? "-" : Text(row, "reason")});
  }
  PrintTable(rows);
  std::cout << SummaryLine(v).substr(0, SummaryLine(v).find('\n')) << "\n";
  return failed ? kExitFailed : kExitOk;
}

int BuildsCommand(int argc, char** argv) {
  Session s("builds", "The builds the server has stored, newest first.");
  s.options().add_options()("limit", "how many", cxxopts::value<int>()->default_value("20"));
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  auto r = s.Call("GET", "/api/v1/builds?limit=" + std::to_string(s.parsed()["limit"].as<int>()));
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  const json::value& v = std::get<json::value>(r);
  if (s.common().json) {
    PrintJson(v);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {
      {"SHA256", "ID", "BRANCH", "CHANNEL", "PLUGINS", "SIZE", "ADDED", "FAILED HERE"}};
  for (const json::value& b : v.at("builds").as_array()) {
    rows.push_back({Text(b, "sha256").substr(0, 12), Text(b, "id"), Text(b, "branch"),
                    Text(b, "channel") + (b.at("dirty").as_bool() ? " (dirty)" : ""),
                    std::to_string(b.at("plugins").as_array().size()), Megabytes(Whole(b, "bytes")),
                    Age(static_cast<std::int64_t>(Whole(b, "added_ms"))),
                    Text(b, "failed_here").empty() ? "-" : Text(b, "failed_here")});
  }
  PrintTable(rows);
  return kExitOk;
}

int BranchesCommand(int argc, char** argv) {
  Session s("branches", "The branches and their heads; * marks the branch this server runs.");
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  auto r = s.Call("GET", "/api/v1/branches");
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  const json::value& v = std::get<json::value>(r);
  if (s.common().json) {
    PrintJson(v);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {
      {"", "BRANCH", "HEAD", "SEQ", "UPDATED", "PREVIOUS"}};
  for (const json::value& b : v.at("branches").as_array()) {
    std::string previous;
    for (const json::value& p : b.at("previous").as_array()) {
      previous +=
          (previous.empty() ? "" : ", ") + Text(p, "id") + " #" + std::to_string(Whole(p, "seq"));
    }
    rows.push_back({Text(b, "name") == Text(v, "branch") ? "*" : "", Text(b, "name"),
                    Text(b.at("head"), "id"), "#" + std::to_string(Whole(b, "seq")),
                    Age(static_cast<std::int64_t>(Whole(b, "updated_ms"))),
                    previous.empty() ? "-" : previous});
  }
  PrintTable(rows);
  const json::value& keys = v.at("keys");
  const json::value& pin = v.at("pin");
  std::cout << "this server: branch " << Text(v, "branch") << ", " << Text(v, "rules")
            << " rules, applied #" << Whole(v, "applied_seq") << ", "
            << (pin.is_object()
                    ? "pinned to " + Text(pin, "build") + " by " + Text(pin, "by") + ", "
                    : std::string())
            << keys.at("main").as_array().size() << " main key(s)"
            << (keys.at("fallback").is_string() ? ", a fallback key" : "") << ", "
            << v.at("refusals").as_array().size() << " recent refusal(s)\n";
  return kExitOk;
}

int DeploymentsCommand(int argc, char** argv) {
  Session s("deployments", "The deploy history, newest first.");
  s.options().add_options()("branch", "one branch only", cxxopts::value<std::string>())(
      "limit", "how many (1 to 100)", cxxopts::value<int>()->default_value("20"));
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  std::string target = "/api/v1/deployments?limit=" + std::to_string(s.parsed()["limit"].as<int>());
  if (s.parsed().count("branch") > 0) {
    target += "&branch=" + UrlEncode(s.parsed()["branch"].as<std::string>());
  }
  auto r = s.Call("GET", target);
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  const json::value& v = std::get<json::value>(r);
  if (s.common().json) {
    PrintJson(v);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {
      {"SEQ", "BRANCH", "KIND", "BUILD", "RESULT", "BY", "WHEN", "MESSAGE / REASON"}};
  for (const json::value& d : v.at("deployments").as_array()) {
    const std::string note = Text(d, "reason").empty() ? Text(d, "message") : Text(d, "reason");
    rows.push_back({"#" + std::to_string(Whole(d, "seq")), Text(d, "branch"), Text(d, "kind"),
                    Text(d, "build_id"), Text(d, "result"),
                    Text(d, "by").empty() ? "-" : Text(d, "by"),
                    Age(static_cast<std::int64_t>(Whole(d, "at_ms"))), note});
  }
  PrintTable(rows);
  return kExitOk;
}

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
