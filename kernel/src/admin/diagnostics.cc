// SPDX-License-Identifier: Apache-2.0
// Diagnostics: windowed health figures and Kernel.Overload.
#include "kernel/src/admin/diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>

#include "kernel/src/admin/metrics.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"

namespace molt::kernel::admin {
namespace {

double Ms(Duration d) { return ToSeconds(d) * 1000; }

}  // namespace

Diagnostics::Diagnostics(Kernel& kernel, DiagnosticsOptions options)
    : kernel_(kernel),
      options_(std::move(options)),
      started_(kernel.scheduler().Now()),
      window_start_(started_),
      at_start_(kernel.scheduler().stats()),
      series_capacity_(static_cast<std::size_t>(
          std::max<std::int64_t>(1, options_.history / std::max(options_.interval, Duration(1))))) {
  kernel_.scheduler().ResetStepMax();
  kernel_.scheduler().ResetProfile();
  task_ = kernel_.scheduler().Every(
      options_.interval, [this] { CloseWindow(); }, Priority::kKernel,
      TaskOrigin::Named("diagnostics"));
}

Diagnostics::~Diagnostics() { task_.Cancel(); }

void Diagnostics::CloseWindow() {
  Scheduler& scheduler = kernel_.scheduler();
  const SchedulerStats& now = scheduler.stats();
  const TimePoint t = scheduler.Now();
  DiagnosticsWindow w;
  w.number = last_.number + 1;
  w.seconds = ToSeconds(t - window_start_);
  w.uptime_seconds = ToSeconds(t - started_);
  w.deferred = now.tasks_deferred_total - at_start_.tasks_deferred_total;
  // The overload check first: nothing later in the window can suppress the alert.
  deferring_windows_ = w.deferred > 0 ? deferring_windows_ + 1 : 0;
  w.deferring_windows = deferring_windows_;
  w.overload = deferring_windows_ >= kOverloadWindows;
  w.steps = now.steps - at_start_.steps;
  w.tps = w.seconds > 0 ? static_cast<double>(w.steps) / w.seconds : 0;
  w.step_ms = w.steps > 0 ? Ms(now.step_time_total - at_start_.step_time_total) /
                                static_cast<double>(w.steps)
                          : 0;
  w.step_max_ms = Ms(now.step_time_max);
  w.budget_ms = Ms(now.last_budget);
  w.tasks_run = now.tasks_run;
  for (const DeferredCount& d : scheduler.TopDeferred(5)) {
    w.deferred_keys += fmt::format("{}{}x {}", w.deferred_keys.empty() ? "" : ", ", d.count, d.key);
  }
  const std::vector<TaskProfile> tasks = scheduler.TopTasks(SIZE_MAX);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (i < 3 && w.seconds > 0) {
      w.hot_tasks.push_back(
          fmt::format("{:.2f}ms/s {}", Ms(tasks[i].time) / w.seconds, tasks[i].key));
    }
    if (Ms(tasks[i].max) > w.task_max_ms) {
      w.task_max_ms = Ms(tasks[i].max);
      w.task_max_key = tasks[i].key;
    }
  }
  const ProcessFigures memory = ReadMemoryFigures();
  w.resident_bytes = memory.resident_bytes;
  w.heap_in_use_bytes = memory.heap_in_use_bytes;
  if (options_.extend) {
    options_.extend(w.extra);
  }
  Point point{WallMs(), w};
  point.window.hot_tasks.clear();
  point.window.deferred_keys.clear();
  point.window.task_max_key.clear();
  series_.push_back(std::move(point));
  if (series_.size() > series_capacity_) {
    series_.pop_front();
  }
  last_ = std::move(w);
  at_start_ = now;
  window_start_ = t;
  scheduler.ResetStepMax();
  scheduler.ResetProfile();
  if (last_.overload) {
    LogScope("molt").Warn(
        "overload: ready tasks were deferred in {} consecutive windows ({} in the last {:.1f} s; "
        "queued now: {}); steps average {:.2f} ms against a {:.2f} ms budget, the longest {:.2f} "
        "ms",
        last_.deferring_windows, last_.deferred, last_.seconds,
        last_.deferred_keys.empty() ? "none" : last_.deferred_keys, last_.step_ms, last_.budget_ms,
        last_.step_max_ms);
    const std::string snapshot = Json();
    const Value args[] = {Value::String(snapshot)};
    kernel_.bus().Publish("Kernel.Overload", args);
  }
}

Duration Diagnostics::open_for() const { return kernel_.scheduler().Now() - window_start_; }

std::string Diagnostics::Json() const { return boost::json::serialize(ToJson()); }

boost::json::object Diagnostics::ToJson() const {
  const DiagnosticsWindow& w = last_;
  boost::json::object o{{"window", w.number},
                        {"seconds", w.seconds},
                        {"uptime_seconds", w.uptime_seconds},
                        {"budget_ms", w.budget_ms},
                        {"step_ms", w.step_ms},
                        {"step_max_ms", w.step_max_ms},
                        {"steps", w.steps},
                        {"tps", w.tps},
                        {"tasks_run", w.tasks_run},
                        {"deferred", w.deferred},
                        {"deferred_keys", w.deferred_keys},
                        {"task_max_ms", w.task_max_ms},
                        {"task_max_key", w.task_max_key},
                        {"resident_bytes", w.resident_bytes},
                        {"heap_in_use_bytes", w.heap_in_use_bytes},
                        {"deferring_windows", w.deferring_windows},
                        {"overload", w.overload}};
  boost::json::array hot;
  for (const std::string& h : w.hot_tasks) {
    hot.emplace_back(h);
  }
  o["hot_tasks"] = std::move(hot);
  for (const auto& [name, value] : w.extra) {
    o[name] = value;
  }
  return o;
}

boost::json::object Diagnostics::SeriesJson() const {
  boost::json::array time_ms, tps, step_ms, step_max_ms, deferred;
  std::vector<std::pair<std::string, boost::json::array>> extra;
  for (const Point& p : series_) {
    time_ms.emplace_back(p.time_ms);
    tps.emplace_back(p.window.tps);
    step_ms.emplace_back(p.window.step_ms);
    step_max_ms.emplace_back(p.window.step_max_ms);
    deferred.emplace_back(p.window.deferred);
    for (std::size_t i = 0; i < p.window.extra.size(); ++i) {
      if (i == extra.size()) {
        extra.emplace_back(p.window.extra[i].first, boost::json::array());
      }
      extra[i].second.emplace_back(p.window.extra[i].second);
    }
  }
  boost::json::object columns{{"time_ms", std::move(time_ms)},
                              {"tps", std::move(tps)},
                              {"step_ms", std::move(step_ms)},
                              {"step_max_ms", std::move(step_max_ms)},
                              {"deferred", std::move(deferred)}};
  for (auto& [name, values] : extra) {
    columns[name] = std::move(values);
  }
  return boost::json::object{{"interval_seconds", ToSeconds(options_.interval)},
                             {"history_seconds", ToSeconds(options_.history)},
                             {"series", std::move(columns)}};
}

}  // namespace molt::kernel::admin
