// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/diagnostics.h
//
// Diagnostics: the kernel's health, windowed (spec: enableDiagnostics, §18). Every interval (5 s;
// 1 s in development) a task at kernel priority, which survives the overload it reports on,
// closes a window: the step figures over it (average and longest step, steps per second: the
// server's TPS), the tasks deferred summed over it and the origins most deferred now, the hot
// tasks of the window (time per second), memory (resident, the allocator's bytes in use) and what
// the host adds (network rates). The last window is read by the admin API and the debug tools.
//
// Kernel.Overload: after three consecutive windows with deferred tasks, the window's snapshot
// (one JSON object) is published on Kernel.Overload and a warning is logged, then again every
// window while deferral continues; a window without deferral ends it. The check runs before
// anything else of the window, so no later failure can suppress the alert.
//
//   Diagnostics diag(kernel, {.interval = Diagnostics::kDefaultInterval});
//   diag.last().tps; diag.Json();
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_ADMIN_DIAGNOSTICS_H_
#define MOLT_KERNEL_ADMIN_DIAGNOSTICS_H_

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/scheduler.h"

namespace molt::kernel {
class Kernel;
}

namespace molt::kernel::admin {

// One closed window.
struct DiagnosticsWindow {
  std::uint64_t number = 0;            // 1 for the first window
  double seconds = 0;                  // its length
  double uptime_seconds = 0;           // since diagnostics started
  double budget_ms = 0;                // the last step's budget
  double step_ms = 0;                  // average step in the window
  double step_max_ms = 0;              // longest step in the window
  std::uint64_t steps = 0;             // in the window
  double tps = 0;                      // steps per second in the window
  std::uint64_t tasks_run = 0;         // since boot
  std::uint64_t deferred = 0;          // tasks deferred, summed over the window's steps
  std::string deferred_keys;           // the origins most deferred now: "12x origin, 3x other"
  std::vector<std::string> hot_tasks;  // the window's top 3: "1.25ms/s origin"
  double task_max_ms = 0;              // the longest single task in the window
  std::string task_max_key;
  std::uint64_t resident_bytes = 0;
  std::uint64_t heap_in_use_bytes = 0;
  std::uint32_t deferring_windows =
      0;                  // consecutive windows with deferred tasks, this one included
  bool overload = false;  // Kernel.Overload was published for this window
  std::vector<std::pair<std::string, double>> extra;  // the host's figures
};

struct DiagnosticsOptions {
  Duration interval = std::chrono::seconds(5);
  // Adds the host's named figures to each window (net bytes per second, sessions): the same
  // names in the same order every window.
  std::function<void(std::vector<std::pair<std::string, double>>&)> extend;
  // How far back the series (SeriesJson) goes: what an operator watches during a deploy.
  Duration history = std::chrono::minutes(15);
};

class Diagnostics {
 public:
  static constexpr Duration kDefaultInterval = std::chrono::seconds(5);
  static constexpr Duration kDevelopmentInterval = std::chrono::seconds(1);
  static constexpr std::uint32_t kOverloadWindows = 3;

  // Starts the windows on `kernel`'s scheduler (the first closes one interval from now).
  Diagnostics(Kernel& kernel, DiagnosticsOptions options);
  Diagnostics(const Diagnostics&) = delete;
  Diagnostics& operator=(const Diagnostics&) = delete;
  ~Diagnostics();

  // The last closed window (all zero before the first).
  const DiagnosticsWindow& last() const { return last_; }
  // How long the open window has run (the task profiler's totals cover it).
  Duration open_for() const;
  // last() as one JSON object (the Kernel.Overload argument, the admin API's answer).
  std::string Json() const;
  boost::json::object ToJson() const;  // Json(), before it is serialized
  // The windows closed within the history (15 min), oldest first, as columns of one array each:
  // "time_ms" (Unix time each closed), "tps", "step_ms", "step_max_ms", "deferred" and the
  // host's figures; with "interval_seconds" and "history_seconds". The dashboard's charts.
  boost::json::object SeriesJson() const;
  std::size_t series_size() const { return series_.size(); }

 private:
  void CloseWindow();

  Kernel& kernel_;
  DiagnosticsOptions options_;
  TaskHandle task_;
  TimePoint started_;
  TimePoint window_start_;
  SchedulerStats at_start_;  // the scheduler's counters when the window opened
  DiagnosticsWindow last_;
  struct Point {
    std::int64_t time_ms;
    DiagnosticsWindow window;  // its hot_tasks and deferred_keys cleared: only figures are kept
  };
  std::deque<Point> series_;
  std::size_t series_capacity_;
  std::uint32_t deferring_windows_ = 0;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_DIAGNOSTICS_H_
