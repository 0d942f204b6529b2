// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/deploy_verbs.cc
//
// molt deploy, promote, rollback and keys resign: their flags and arguments checked (before a
// server is needed, so a mistake exits 2 without a token), then shipped (shipment.h);
// deploy --widen posts the wider rollout itself.
#include "hosts/molt/deploy_verbs.h"

#include <algorithm>
#include <boost/json.hpp>
#include <string>
#include <variant>

#include "hosts/molt/cli.h"
#include "hosts/molt/deploy_outcome.h"
#include "hosts/molt/session.h"
#include "hosts/molt/shipment.h"

namespace molt::cli {
namespace {

// The flags of every verb that ships a build (Ship and SendDeploy read them).
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
    return PrintOutcome(s.common(), answer, 409);
  }
  if (a->status != 200 && a->status != 202) {
    return Fail(kExitFailed,
                "moltd answered " + std::to_string(a->status) + ": " + Text(answer, "error"));
  }
  return PrintOutcome(s.common(), answer.at("deployment"), a->status);
}

}  // namespace

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

}  // namespace molt::cli
