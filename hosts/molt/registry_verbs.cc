// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/registry_verbs.cc
//
// molt builds, branches, deployments and report: the deploy registry's lists as tables (or their
// JSON with --json).
#include "hosts/molt/registry_verbs.h"

#include <boost/json.hpp>
#include <cstdint>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include "hosts/molt/cli.h"
#include "hosts/molt/deploy_outcome.h"
#include "hosts/molt/session.h"

namespace molt::cli {

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

}  // namespace molt::cli
