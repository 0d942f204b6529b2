// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/deploy_outcome.cc
//
// A deployment's outcome and a fleet report's summary, as text and JSON.
#include "hosts/molt/deploy_outcome.h"

#include <boost/json.hpp>
#include <cstdio>
#include <iostream>

#include "hosts/molt/session.h"

namespace molt::cli {

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

int PrintOutcome(const Common& common, const json::value& d, int http_status) {
  const Outcome o = Describe(d, http_status);
  if (common.json) {
    PrintJson(o.json);
  } else {
    std::cout << o.text << "\n";
  }
  return o.ok ? kExitOk : kExitFailed;
}

std::string SummaryLine(const json::value& report) {
  const json::value& sum = report.at("summary");
  std::string line = std::to_string(Whole(sum, "servers")) + " server(s):";
  bool first = true;
  for (const char* r : {"swapped", "adopted", "booted", "skipped", "superseded", "failed",
                        "rolled_back", "pending", "draining", "lost"}) {
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

}  // namespace molt::cli
