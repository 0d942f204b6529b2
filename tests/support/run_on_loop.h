// SPDX-License-Identifier: Apache-2.0
// File: tests/support/run_on_loop.h
//
// RunOnLoop: from a test's client thread, runs `fn` on the thread running `loop` (the kernel
// thread) and waits until it has run.
#ifndef MOLT_TESTS_SUPPORT_RUN_ON_LOOP_H_
#define MOLT_TESTS_SUPPORT_RUN_ON_LOOP_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "kernel/src/core/loop.h"

namespace molt::test {

inline void RunOnLoop(kernel::Loop& loop, const std::function<void()>& fn) {
  std::atomic<bool> done{false};
  loop.Post([&] {
    fn();
    done = true;
  });
  while (!done.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace molt::test

#endif  // MOLT_TESTS_SUPPORT_RUN_ON_LOOP_H_
