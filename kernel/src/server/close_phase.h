// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/close_phase.h
//
// ClosePhase: how a server ends (spec: Close phase), from the signal to the last Bye.
//
// Begin(reason, hooks) publishes Kernel.Closing(reason), stops every service in reverse boot
// order and publishes Kernel.Stopped(reason). Each stop is isolated (a failing one is logged and
// the rest still run) and gets at most what is left of the budget (25 s by default); a plugin's
// stop() also gets at most its callback deadline (server.callback_deadline_seconds, as in a
// swap). A stop that runs past either is abandoned where it runs (its host calls are refused from
// then on), and the stops go on; once the budget is spent, the services left are hard-stopped
// without their stop(). Each overrun is named in overruns() and in the line that ends the stops.
//
// The drain (hooks.drain: the final saves) runs once on the kernel thread, beside the stops:
// when they end, or between two stops once `drain_wait` (5 s) has passed since the close,
// whichever comes first (spec: the close drain waits for Kernel.Stopped at most 5 s, so a
// write made in a stop() reaches the final saves unless that stop outlasts the wait).
// hooks.stopped runs after Kernel.Stopped. Whoever runs the close calls Finish() once it is over
// (the drain ended, the sessions ended).
//
// A watchdog thread keeps the times. At the budget, if the stops still run, it warns "close stop
// phase still running after 25s". At `deadline`, if Finish() was not called (the kernel thread
// is stuck in code that has no deadline), it logs so and calls `over_deadline` on its own thread
// (moltd exits there, with kExitCloseCut). A second close, or a close after shutdown, is ignored
// with a log line. The close phase does not call Kernel::Shutdown: sessions and profiles belong
// to their own drains.
//
// Thread safety: Begin() and Finish() on the kernel thread; overruns() after Begin() returned.
#ifndef MOLT_KERNEL_SERVER_CLOSE_PHASE_H_
#define MOLT_KERNEL_SERVER_CLOSE_PHASE_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernel/src/core/kernel.h"

namespace molt::kernel {

inline constexpr Duration kCloseBudget = std::chrono::seconds(25);  // CloseBudgetSeconds
// How long the drain waits for Kernel.Stopped before it saves anyway (spec: 5 s).
inline constexpr Duration kDrainWaitForStopped = std::chrono::seconds(5);

class ClosePhase {
 public:
  struct Limits {
    Duration budget = kCloseBudget;  // every stop together
    Duration drain_wait = kDrainWaitForStopped;
    Duration deadline = Duration::max();  // the whole close; max: the watchdog never cuts it
  };
  struct Hooks {
    std::function<void()> drain;    // once, beside the stops
    std::function<void()> stopped;  // after Kernel.Stopped
  };

  ClosePhase(Kernel& kernel, Limits limits, std::function<void()> over_deadline);
  ClosePhase(const ClosePhase&) = delete;
  ClosePhase& operator=(const ClosePhase&) = delete;
  ~ClosePhase();

  // Runs the close phase for `reason`; false (and a log line) when ignored.
  bool Begin(const std::string& reason, Hooks hooks);
  // The close is over: the watchdog stands down.
  void Finish();
  bool closing() const { return begun_; }
  // The stops that overran, one per service: "NAME (5.0 s)".
  const std::vector<std::string>& overruns() const { return overruns_; }

 private:
  enum class Stage { kIdle, kStopping, kStopped, kFinished };
  void Watch(Duration budget, Duration deadline);
  void Advance(Stage stage);
  void DrainOnce();

  Kernel& kernel_;
  const Limits limits_;
  std::function<void()> over_deadline_;
  bool begun_ = false;
  std::function<void()> drain_;  // cleared once it ran
  std::vector<std::string> overruns_;
  std::mutex mu_;
  std::condition_variable cv_;
  Stage stage_ = Stage::kIdle;  // guarded by mu_
  std::thread watchdog_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_CLOSE_PHASE_H_
