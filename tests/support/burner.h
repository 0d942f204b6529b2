// SPDX-License-Identifier: Apache-2.0
// File: tests/support/burner.h
//
// Burner: an overloaded kernel thread, made for real. It keeps `tasks` tasks of `each` of busy
// work queued on a scheduler, each queuing the next as it ends, so every step's budget (a
// server's 16.5 ms) runs out with work left waiting and the steps fill the thread's time. Stop()
// it, then run the loop until idle(), before the scheduler or the burner goes.
//
//   molt::test::Burner burner(kernel_->scheduler());
//   ...
//   burner.Stop();
//   RunUntil([&] { return burner.idle(); });
//
// Thread safety: the scheduler's thread, but for the constructor (before the loop runs).
#ifndef MOLT_TESTS_SUPPORT_BURNER_H_
#define MOLT_TESTS_SUPPORT_BURNER_H_

#include <chrono>

#include "kernel/src/core/scheduler.h"

namespace molt::test {

class Burner {
 public:
  explicit Burner(kernel::Scheduler& scheduler, int tasks = 3,
                  std::chrono::microseconds each = std::chrono::milliseconds(10))
      : scheduler_(scheduler), each_(each) {
    for (int i = 0; i < tasks; ++i) {
      Queue();
    }
  }
  Burner(const Burner&) = delete;
  Burner& operator=(const Burner&) = delete;

  // No task queues another from now on.
  void Stop() { burning_ = false; }
  // Whether none is queued any more (after Stop).
  bool idle() const { return queued_ == 0; }

 private:
  void Queue() {
    ++queued_;
    scheduler_.Schedule([this] {
      --queued_;
      const auto until = std::chrono::steady_clock::now() + each_;
      while (std::chrono::steady_clock::now() < until) {
      }
      if (burning_) {
        Queue();
      }
    });
  }

  kernel::Scheduler& scheduler_;
  std::chrono::microseconds each_;
  bool burning_ = true;
  int queued_ = 0;
};

}  // namespace molt::test

#endif  // MOLT_TESTS_SUPPORT_BURNER_H_
