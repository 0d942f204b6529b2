// SPDX-License-Identifier: Apache-2.0
// StatusRoutes: status, diagnostics, series, errors, tasks, logs, bundles (status_routes.h).
#include "kernel/src/admin/status_routes.h"

#include <unistd.h>

#include <boost/json.hpp>
#include <cmath>

#include "kernel/src/admin/api_answers.h"
#include "kernel/src/admin/debug_bundle.h"
#include "kernel/src/admin/diagnostics.h"
#include "kernel/src/admin/error_watch.h"
#include "kernel/src/admin/log_ring.h"
#include "kernel/src/admin/stats_json.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/network.h"

namespace molt::kernel::admin {
namespace {

namespace json = boost::json;

}  // namespace

void StatusRoutes::Register(RouteTable& table) {
  auto get = [&](const char* path, std::function<json::object(const RouteCall&)> body,
                 bool reads_process = false) {
    table.Add({"GET", path, Role::kViewer, Runs::kKernelThread,
               [body = std::move(body)](RouteCall& call) { call.reply(Json(200, body(call))); },
               nullptr, reads_process});
  };
  get(
      "/api/v1/status", [this](const RouteCall& call) { return StatusJson(call.process); },
      /*reads_process=*/true);
  get("/api/v1/diagnostics", [this](const RouteCall&) { return p_.diagnostics.ToJson(); });
  get("/api/v1/series", [this](const RouteCall&) { return SeriesJson(); });
  get("/api/v1/errors", [this](const RouteCall&) { return ErrorsJson(); });
  get("/api/v1/tasks", [this](const RouteCall&) { return TasksJson(); });
  get("/api/v1/logs", [this](const RouteCall& call) { return LogsJson(call.request); });
  table.Add({"POST", "/api/v1/bundle", Role::kOperator, Runs::kKernelThread,
             [this](RouteCall& call) { call.reply(Bundle(call.request)); }});
}

json::object StatusRoutes::StatusJson(const ProcessFigures& p) const {
  Kernel& k = p_.kernel;
  const KernelStats ks = k.Stats();
  json::object o;
  o["version"] = ks.version;
  o["role"] = Kernel::RoleName(ks.role);
  o["uptime_seconds"] = ToSeconds(RealNow() - started_);
  o["closing"] = p_.closing();
  o["generation"] = p_.plugins.generation();
  o["sessions"] = p_.network.sessions().count();
  o["tps"] = p_.diagnostics.last().tps;  // over the last diagnostics window
  o["scheduler"] = {{"steps", ks.scheduler.steps},
                    {"tasks_run", ks.scheduler.tasks_run},
                    {"tasks_deferred", ks.scheduler.tasks_deferred},
                    {"errors", ks.scheduler.errors},
                    {"last_step_seconds", ToSeconds(ks.scheduler.last_step)},
                    {"budget_seconds", ToSeconds(ks.scheduler.last_budget)}};
  o["process"] = {{"resident_bytes", p.resident_bytes},
                  {"cpu_seconds", p.cpu_seconds},
                  {"open_fds", p.open_fds},
                  {"max_fds", p.max_fds},
                  {"heap_in_use_bytes", p.heap_in_use_bytes}};
  // Every subsystem's own figures (net, generations), as the stats slot gives plugins.
  o["stats"] = k.StatsObject();
  return o;
}

json::object StatusRoutes::ErrorsJson() const {
  const ErrorWatch& watch = p_.errors;
  const ErrorWatch::Counts counts = watch.counts();
  json::array recent;
  for (const ErrorWatch::Entry& e : watch.Recent()) {
    recent.push_back({{"scope", e.scope},
                      {"message", e.message},
                      {"level", LogLevelName(e.level)},
                      {"count", e.count},
                      {"first", IsoTime(e.first)},
                      {"last", IsoTime(e.last)}});
  }
  return {{"window_seconds", std::round(ToSeconds(watch.window()) * 1000) / 1000},
          {"warnings", counts.warnings},
          {"errors", counts.errors},
          {"merged", counts.merged},
          {"recent", std::move(recent)}};
}

json::object StatusRoutes::TasksJson() const {
  json::array tasks;
  for (const TaskProfile& t : p_.kernel.scheduler().TopTasks(20)) {
    tasks.push_back({{"origin", t.key},
                     {"calls", t.calls},
                     {"total_ms", ToSeconds(t.time) * 1000},
                     {"max_ms", ToSeconds(t.max) * 1000}});
  }
  return {{"profiling", p_.kernel.scheduler().profile_tasks()},
          {"since_seconds", ToSeconds(p_.diagnostics.open_for())},
          {"tasks", std::move(tasks)}};
}

json::object StatusRoutes::LogsJson(const HttpRequest& req) const {
  const std::optional<std::uint64_t> since = Number(QueryValue(req.query, "since"));
  const LogRing::Page page = p_.logs.Since(since.value_or(0));
  json::array lines;
  for (const LogRing::Line& l : page.items) {
    lines.push_back({{"seq", l.seq},
                     {"time", IsoTime(l.time)},
                     {"level", LogLevelName(l.level)},
                     {"scope", l.scope},
                     {"message", l.message}});
  }
  return {{"next", page.next}, {"lost", page.lost}, {"lines", std::move(lines)}};
}

json::object StatusRoutes::SeriesJson() const {
  json::object o = p_.diagnostics.SeriesJson();
  const json::array& times = o.at("series").at("time_ms").as_array();
  const std::int64_t since = times.empty() ? 0 : times.front().as_int64();
  json::array swaps;  // oldest first, as the series
  const json::object generations = p_.plugins.StatsObject();
  const json::array& history = generations.at("history").as_array();
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    const std::int64_t at = it->at("time_ms").to_number<std::int64_t>();
    const json::object& r = it->at("report").as_object();
    if (at <
        since - static_cast<std::int64_t>(o.at("interval_seconds").to_number<double>() * 1000)) {
      continue;  // before the series starts
    }
    swaps.push_back({{"time_ms", at},
                     {"ok", r.at("ok")},
                     {"rollback", r.at("rollback")},
                     {"generation", r.at("ok").as_bool() ? r.at("serving") : r.at("generation")},
                     {"reason", r.at("reason")},
                     {"error", r.at("error")}});
  }
  o["swaps"] = std::move(swaps);
  return o;
}

HttpResponse StatusRoutes::Bundle(const HttpRequest& req) {
  std::string reason = QueryValue(req.query, "reason");
  Result<std::string> path = p_.write_bundle(reason.empty() ? "manual" : reason);
  if (!path.ok()) {
    return Error(500, path.status().message());
  }
  LogScope("Admin").Info("debug bundle written to {}", *path);
  return Json(200, json::object{{"path", *path}});
}

std::string StatusRoutes::BundleJson(std::string_view reason) const {
  HttpRequest none;
  const json::object bundle{{"v", 1},
                            {"reason", reason},
                            {"time", IsoTime(std::chrono::system_clock::now())},
                            {"pid", ::getpid()},
                            {"status", StatusJson(ReadMemoryFigures())},
                            {"diagnostics", p_.diagnostics.ToJson()},
                            {"errors", ErrorsJson()},
                            {"generations", p_.plugins.StatsObject()},
                            {"channels", ChannelsJson(p_.network.Snapshot())},
                            {"configuration", RedactedConfigJson(p_.kernel.config())},
                            {"logs", LogsJson(none)}};
  return json::serialize(bundle);
}

}  // namespace molt::kernel::admin
