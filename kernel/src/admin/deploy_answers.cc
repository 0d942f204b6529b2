// SPDX-License-Identifier: Apache-2.0
// The deploy calls' answers: status codes and JSON bodies (deploy_answers.h).
#include "kernel/src/admin/deploy_answers.h"

#include <boost/json.hpp>
#include <map>
#include <string>
#include <utility>

#include "kernel/src/admin/api_answers.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/fleet/fleet.h"

namespace molt::kernel::admin {
namespace {

namespace json = boost::json;

// A stored build as a branch's head names it: the short form (the build may be gone).
json::object HeadJson(const deploy::BranchesView& v, const std::string& sha) {
  auto it = v.builds.find(sha);
  const deploy::StoredBuild* b = it != v.builds.end() ? &it->second : nullptr;
  return {{"sha256", sha},
          {"id", b != nullptr ? b->id : std::string("?")},
          {"channel", b != nullptr ? b->ManifestField("channel") : std::string()},
          {"commit", b != nullptr ? b->ManifestField("commit") : std::string()},
          {"failed_here", b != nullptr && !b->failed_here.empty() ? json::value(b->failed_here)
                                                                  : json::value(nullptr)}};
}

json::object BranchesJson(const deploy::BranchesView& v) {
  json::array branches;
  for (const deploy::Branch& b : v.branches) {
    json::array previous;
    for (const deploy::Branch::Previous& p : b.previous) {
      json::object o = HeadJson(v, p.build);
      o["seq"] = p.seq;
      previous.push_back(std::move(o));
    }
    branches.push_back(json::object{{"name", b.name},
                                    {"seq", b.seq},
                                    {"updated_ms", b.updated_ms},
                                    {"head", HeadJson(v, b.head)},
                                    {"previous", std::move(previous)}});
  }
  json::array refused;
  for (const deploy::Refusals::Refusal& r : v.refusals) {
    refused.push_back(json::object{{"at_ms", r.at_ms}, {"kind", r.kind}, {"reason", r.reason}});
  }
  json::value pinned = nullptr;
  if (v.pin.has_value()) {
    pinned = json::object{{"build", v.pin->build_id},
                          {"sha256", v.pin->sha256},
                          {"by", v.pin->by},
                          {"at_ms", v.pin->at_ms}};
  }
  return {{"branch", v.branch},
          {"rules", v.prod_rules ? "prod" : "dev"},
          {"pin", std::move(pinned)},
          {"seq", v.seq},
          {"next_seq", v.seq + 1},
          {"applied_seq", v.applied_seq},
          {"serving", v.serving},
          {"keys", v.keys.ToJson()},
          {"refusals", std::move(refused)},
          {"branches", std::move(branches)}};
}

}  // namespace

HttpResponse DeployError(const Status& s) {
  switch (s.code()) {
    case Status::Code::kInvalidArgument:
      return Error(400, s.message());
    case Status::Code::kNotFound:
      return Error(404, s.message());
    case Status::Code::kRejected:
      return Json(409, json::object{{"error", s.message()}, {"result", "refused"}});
    case Status::Code::kIoError:
      return Error(503, s.message());
    default:
      return Error(500, s.message());
  }
}

HttpResponse UploadAnswer(const Result<deploy::Uploaded>& r) {
  if (!r.ok()) {
    return DeployError(r.status());
  }
  return Json(r.value().was_new ? 201 : 200, json::object{{"build", r.value().build.ToJson()}});
}

HttpResponse DeployAnswer(const Result<deploy::DeployOutcome>& r) {
  if (!r.ok()) {
    return DeployError(r.status());
  }
  const deploy::DeployOutcome& o = r.value();
  json::object body{{"deployment", o.deployment.ToJson()}};
  if (o.timed_out) {
    body["note"] = "the swap did not finish in time; GET /api/v1/deployments shows its result";
  }
  return Json(o.pending ? 202 : 200, body);
}

HttpResponse PinAnswer(const Result<deploy::PinOutcome>& r) {
  if (!r.ok()) {
    return DeployError(r.status());
  }
  const deploy::PinOutcome& o = r.value();
  if (o.pending) {
    return Json(202,
                json::object{{"result", "pending"}, {"build", o.build_id}, {"sha256", o.sha256}});
  }
  json::object body{
      {"result", o.result}, {"build", o.build_id}, {"sha256", o.sha256}, {"reason", o.reason}};
  std::error_code ec;
  body["report"] = o.report.empty() ? json::value(nullptr) : json::parse(o.report, ec);
  return Json(200, body);
}

HttpResponse ResolveAnswer(const Result<deploy::Resolved>& r) {
  if (!r.ok()) {
    return DeployError(r.status());
  }
  return Json(200,
              json::object{{"build", r.value().build.ToJson()}, {"next_seq", r.value().next_seq}});
}

HttpResponse BuildsAnswer(const Result<std::vector<deploy::StoredBuild>>& r) {
  if (!r.ok()) {
    return DeployError(r.status());
  }
  json::array builds;
  for (const deploy::StoredBuild& b : r.value()) {
    builds.push_back(b.ToJson());
  }
  return Json(200, json::object{{"builds", std::move(builds)}});
}

HttpResponse BranchesAnswer(const Result<deploy::BranchesView>& r) {
  return r.ok() ? Json(200, BranchesJson(r.value())) : DeployError(r.status());
}

HttpResponse DeploymentsAnswer(const Result<std::vector<deploy::Deployment>>& r) {
  if (!r.ok()) {
    return DeployError(r.status());
  }
  json::array out;
  for (const deploy::Deployment& d : r.value()) {
    out.push_back(d.ToJson());
  }
  return Json(200, json::object{{"deployments", std::move(out)}});
}

json::object ResultsJson(const deploy::DeploymentResults& r) {
  json::array results;
  for (const deploy::ServerResult& s : r.results) {
    results.push_back(json::object{
        {"id", s.server_id}, {"result", s.result}, {"reason", s.reason}, {"at_ms", s.at_ms}});
  }
  return {{"deployment", r.deployment.ToJson()}, {"results", std::move(results)}};
}

json::object DeployReport(json::object results, const std::vector<fleet::ServerReport>& servers) {
  const json::object& d = results.at("deployment").as_object();
  const std::uint64_t seq = d.at("seq").to_number<std::uint64_t>();
  const std::string branch(d.at("branch").as_string());
  std::map<std::string, json::object> by_id;
  for (const json::value& v : results.at("results").as_array()) {
    by_id[std::string(v.at("id").as_string())] = v.as_object();
  }
  const std::int64_t now = WallMs();
  std::map<std::string, std::uint64_t> counts;
  json::array rows;
  auto add = [&](const std::string& id, json::object row) {
    ++counts[std::string(row.at("result").as_string())];
    row["id"] = id;
    rows.push_back(std::move(row));
  };
  for (const fleet::ServerReport& s : servers) {
    if (s.branch != branch && by_id.count(s.id) == 0) {
      continue;
    }
    const std::string state = fleet::Fleet::StateAt(s, now);
    json::object row{{"state", state}, {"applied_seq", s.applied_seq}, {"build", s.build}};
    if (auto it = by_id.find(s.id); it != by_id.end()) {
      row["result"] = it->second.at("result");
      row["reason"] = it->second.at("reason");
      row["at_ms"] = it->second.at("at_ms");
      by_id.erase(it);
    } else {
      row["result"] = s.applied_seq >= seq ? "booted" : state == "live" ? "pending" : state;
      row["reason"] = "";
    }
    add(s.id, std::move(row));
  }
  for (auto& [id, r] : by_id) {  // reported, and never heard from since (no heartbeat row)
    r.erase("id");
    r["state"] = "lost";
    add(id, std::move(r));
  }
  const std::uint64_t failed = counts["failed"] + counts["rolled_back"];
  const std::uint64_t tried = failed + counts["swapped"] + counts["adopted"];
  json::object summary{
      {"servers", rows.size()},
      {"tried", tried},
      {"failed", failed},
      {"failed_pct",
       tried == 0 ? 0.0 : 100.0 * static_cast<double>(failed) / static_cast<double>(tried)},
      {"done", counts["pending"] == 0}};
  for (const char* r : {"swapped", "adopted", "booted", "failed", "rolled_back", "skipped",
                        "superseded", "pending", "draining", "lost"}) {
    summary[r] = counts[r];
  }
  return {{"deployment", d}, {"servers", std::move(rows)}, {"summary", std::move(summary)}};
}

}  // namespace molt::kernel::admin
