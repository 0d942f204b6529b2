// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/loop.h
//
// Loop: the kernel thread's event loop. It owns the Boost.Asio io_context that carries network
// I/O, and steps a Scheduler on it: one steady_timer armed for Scheduler::NextWake() only while
// work exists, so an idle host arms nothing and wakes zero times per second. Asio stays out of this
// header (io_context is forward-declared); code that needs it includes <boost/asio/io_context.hpp>.
//
//   Scheduler scheduler(options);
//   Loop loop(scheduler);
//   loop.Post([&] { ... });   // from any thread
//   loop.Run();               // on the kernel thread, until Stop()
//
// Thread safety: Post() and Stop() are safe from any thread (signal handlers excluded: post from a
// signal-handling thread instead). Everything else runs on the thread that calls Run().
#ifndef MOLT_KERNEL_CORE_LOOP_H_
#define MOLT_KERNEL_CORE_LOOP_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "kernel/src/core/clock.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace molt::kernel {

class Scheduler;

class Loop {
 public:
  explicit Loop(Scheduler& scheduler);
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;
  ~Loop();

  boost::asio::io_context& io();

  // Runs handlers and scheduler steps until Stop(). Returns at once if already stopped.
  void Run();
  // Runs until Stop() or until `timeout` passes, whichever comes first (tests).
  void RunFor(Duration timeout);
  // Makes Run() return after the handler in progress. Idempotent.
  void Stop();
  bool stopped() const;

  // Runs `fn` on the loop thread.
  void Post(std::function<void()> fn);

  // Scheduler steps driven by the timer so far (the idle test counts these).
  std::uint64_t wakeups() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_LOOP_H_
