// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/close_phase.h
//
// ClosePhase: how a server ends (spec: Close phase). Begin() publishes Kernel.Closing(reason),
// stops every service in reverse boot order (each isolated: a failing stop is logged and the rest
// still run), publishes Kernel.Stopped(reason), then calls `done`. A watchdog thread enforces the
// budget (25 s by default): if the stops are still running then, it logs "close stop phase still
// running after 25s" and calls `over_budget` from the watchdog thread (moltd exits there). A
// second close, or a close after shutdown, is ignored with a log line. The close phase does not
// call Kernel::Shutdown: sessions and profiles belong to their own drains.
//
// Thread safety: Begin() on the kernel thread.
#ifndef MOLT_KERNEL_SERVER_CLOSE_PHASE_H_
#define MOLT_KERNEL_SERVER_CLOSE_PHASE_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "kernel/src/core/kernel.h"

namespace molt::kernel {

inline constexpr Duration kCloseBudget = std::chrono::seconds(25);  // CloseBudgetSeconds

class ClosePhase {
 public:
  ClosePhase(Kernel& kernel, Duration budget, std::function<void()> over_budget);
  ClosePhase(const ClosePhase&) = delete;
  ClosePhase& operator=(const ClosePhase&) = delete;
  ~ClosePhase();

  // Runs the close phase for `reason`; false (and a log line) when ignored.
  bool Begin(const std::string& reason, const std::function<void()>& done);
  bool closing() const { return begun_; }

 private:
  Kernel& kernel_;
  Duration budget_;
  std::function<void()> over_budget_;
  bool begun_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  std::thread watchdog_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_CLOSE_PHASE_H_
