// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/shipment.cc
//
// Ship in its steps: the flags checked, the deploy sent, the fleet followed, the auto-rollback.
#include "hosts/molt/shipment.h"

#include <unistd.h>

#include <boost/json.hpp>
#include <iostream>
#include <optional>
#include <thread>

#include "hosts/molt/cli.h"
#include "hosts/molt/deploy_outcome.h"
#include "hosts/molt/deploy_sender.h"

namespace molt::cli {
namespace {

// Adds the fleet's report of deployment `d` to `out`, waited for until `deadline`; an exit code
// when the report could not be read (printed).
std::optional<int> FollowFleet(Session& s, const json::value& d, int wait,
                               std::chrono::steady_clock::time_point deadline, Outcome& out) {
  FleetReport fleet = AwaitReport(s, Whole(d, "seq"), deadline);
  if (auto* code = std::get_if<int>(&fleet)) {
    return *code;
  }
  const json::value& report = std::get<json::value>(fleet);
  const json::value& sum = report.at("summary");
  out.json["fleet"] = sum;
  out.json["servers"] = report.at("servers");
  out.text += "\n" + SummaryLine(report);
  if (Whole(sum, "failed") > 0) {
    out.ok = false;
  }
  if (!sum.at("done").as_bool()) {
    out.text += "\nwarning: still pending after " + std::to_string(wait) +
                " s (stuck or slow servers above; molt report " + std::to_string(Whole(d, "seq")) +
                " shows them later)";
  }
  return std::nullopt;
}

// Rolls `branch` back after too many servers failed the build, adding the rollback's outcome to
// `out` (a terminal gets 10 s to keep the new build first); an exit code when the rollback could
// not be sent (printed).
std::optional<int> AutoRollback(Session& s, const std::string& branch, int rollback_at, int wait,
                                Outcome& out) {
  out.text += "\nauto-rollback: at least " + std::to_string(rollback_at) +
              "% of the servers that tried it failed or rolled it back: rolling " + branch +
              " back";
  if (!s.common().json && ::isatty(1)) {
    std::cout << out.text << " in 10 s (Ctrl+C keeps the new build)" << std::endl;
    out.text.clear();
    std::this_thread::sleep_for(std::chrono::seconds(10));
  }
  auto back = SendDeploy(s, "rollback", branch, "", wait);
  if (auto* code = std::get_if<int>(&back)) {
    return *code;
  }
  Posted& rb = std::get<Posted>(back);
  const json::value& rd = rb.status == 409 ? rb.answer : rb.answer.at("deployment");
  Outcome rolled = Describe(rd, rb.status);
  if (rb.status != 409) {
    FleetReport after = AwaitReport(s, Whole(rd, "seq"),
                                    std::chrono::steady_clock::now() + std::chrono::seconds(wait));
    if (auto* r = std::get_if<json::value>(&after)) {
      rolled.json["fleet"] = r->at("summary");
      rolled.text += "\n" + SummaryLine(*r);
    }
  }
  out.json["auto_rollback"] = rolled.json;
  out.text += (out.text.empty() ? "" : "\n") + rolled.text;
  out.ok = false;
  return std::nullopt;
}

}  // namespace

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
  auto posted = SendDeploy(s, kind, branch, std::move(build), wait);
  if (auto* code = std::get_if<int>(&posted)) {
    return *code;
  }
  Posted& first = std::get<Posted>(posted);
  if (first.status == 409) {
    return PrintOutcome(s.common(), first.answer, 409);
  }
  const json::value& d = first.answer.at("deployment");
  if (wait == 0 || kind == "resign") {
    return PrintOutcome(s.common(), d, first.status);
  }
  Outcome out = Describe(d, first.status);
  if (auto code = FollowFleet(s, d, wait, deadline, out)) {
    return *code;
  }
  const json::value& sum = out.json.at("fleet");
  const bool over = Whole(sum, "failed") > 0 && Number(sum.at("failed_pct")) >= rollback_at;
  if (over && p.count("no-auto-rollback") == 0 && kind != "rollback") {
    if (auto code = AutoRollback(s, branch, rollback_at, wait, out)) {
      return *code;
    }
  }
  if (s.common().json) {
    PrintJson(out.json);
  } else if (!out.text.empty()) {
    std::cout << out.text << "\n";
  }
  return out.ok ? kExitOk : kExitFailed;
}

}  // namespace molt::cli
