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
                                     "or dirty build onto a prod branch");
}

// Prints one deployment's outcome; the exit code it means.
int Report(const Common& common, const json::value& d, int http_status) {
  const std::string result = http_status == 409 ? "refused" : Text(d, "result");
  const std::string reason = http_status == 409 ? Text(d, "error") : Text(d, "reason");
  const bool ok = result == "swapped" || result == "adopted" || result == "recorded" ||
                  result == "pending" || result == "skipped";
  if (common.json) {
    json::object o{{"result", result}};
    if (http_status != 409) {
      o["seq"] = Whole(d, "seq");
      o["build"] = Text(d, "build_id");
      o["sha256"] = Text(d, "build");
      o["branch"] = Text(d, "branch");
      o["kind"] = Text(d, "kind");
      o["protocol"] = Text(d, "protocol");
      o["rollout"] = Whole(d, "rollout");
      if (const json::value* r = d.as_object().if_contains("report"); r != nullptr) {
        o["report"] = *r;
      }
    }
    if (!reason.empty()) {
      o["reason"] = reason;
    }
    PrintJson(o);
    return ok ? kExitOk : kExitFailed;
  }
  if (http_status == 409) {
    std::cout << "refused: " << reason << "\n";
    return kExitFailed;
  }
  std::cout << "#" << Whole(d, "seq") << " " << Text(d, "branch") << ": " << Text(d, "build_id")
            << " ";
  const json::value* report = d.as_object().if_contains("report");
  if (result == "swapped" && report != nullptr && report->is_object()) {
    std::printf("swapped (%s serves, was %s), hold %.3f ms", Text(*report, "serving").c_str(),
                Text(*report, "previous").c_str(), Number(report->at("hold_ms")));
    std::cout.flush();
  } else if (result == "adopted") {
    std::cout << "adopted: it serves already (no swap)";
  } else if (result == "recorded") {
    std::cout << "recorded: the head moved; this server runs another branch";
  } else if (result == "skipped") {
    std::cout << "recorded; this server is " << reason << " and keeps what it serves";
  } else if (result == "pending") {
    std::cout << "deployed; the swap is under way (molt deployments shows its result)";
  } else {
    std::cout << result << (reason.empty() ? "" : ": " + reason);
  }
  const std::string protocol = Text(d, "protocol");
  std::cout << (protocol.empty() ? "" : "; protocol " + protocol) << "\n";
  return ok ? kExitOk : kExitFailed;
}

// deploy, promote, rollback and resign: resolve the build, sign, post, report.
int Ship(Session& s, const std::string& kind, const std::string& branch, std::string build) {
  const cxxopts::ParseResult& p = s.parsed();
  Result<Keys> keys = ReadKeys(p);
  if (!keys.ok()) {
    return Fail(kExitUsage, keys.status().message());
  }
  int wait = 0;
  if (p.count("wait") > 0) {
    wait = p["wait"].as<int>();
    if (wait < 1 || wait > 600) {
      return Fail(kExitUsage, "--wait is 1 to 600 seconds");
    }
  }
  const int rollout =
      p.count("rollout") > 0 ? p["rollout"].as<int>() : 100;  // checked by DeployCommand
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
                      {"rollout", rollout},
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
    const json::value answer = json::parse(a->body, jec);
    if (jec || !answer.is_object()) {
      return Fail(kExitFailed, "moltd answered " + std::to_string(a->status) + ": " + a->body);
    }
    if (a->status == 409 && attempt < 3 &&
        Text(answer, "error").find("was taken already") != std::string::npos) {
      continue;  // another deploy took that seq meanwhile: sign the next one
    }
    if (a->status == 409) {
      return Report(s.common(), answer, 409);
    }
    if (a->status == 401) {
      return Fail(kExitUnreachable, "moltd at " + s.common().server + " refused the admin token");
    }
    if (a->status != 200 && a->status != 202) {
      return Fail(kExitFailed,
                  "moltd answered " + std::to_string(a->status) + ": " + Text(answer, "error"));
    }
    return Report(s.common(), answer.at("deployment"), a->status);
  }
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
