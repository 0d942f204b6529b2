// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/callback_runner.h
//
// CallbackRunner: a plugin callback with a deadline (DESIGN.md §6: every callback a swap makes
// has one). Run(limit, fn) runs `fn`, the call into the plugin, on the runner's thread while the
// calling thread (the kernel thread) waits for it. The plugin still runs alone, as it would on
// the kernel thread, and its host calls work as usual: each one holds the call's baton
// (HostCall), which the waiting thread gives up only while it waits.
//
// A call that returns within `limit` is just that. Past it the waiting thread takes the baton
// back for good (after any host call in flight returned): the call is *abandoned*. It may still
// be running, on a thread the runner then leaves to it (the next call gets a new one); every host
// call it makes from then on is refused without touching the kernel, and nothing it returns
// reaches anyone. Whatever `fn` captured must therefore outlive the wait (own it: shared_ptr).
//
// The hand-off spins before it sleeps, both ways (the runner 50 us after a call, or as long as
// Prime() asked; the waiting thread up to 10 ms, since it has nothing else to do), so a callback
// that returns at once costs about a microsecond rather than two thread wake-ups.
//
// Thread safety: Run() from one thread at a time (the kernel thread); HostCall from the thread a
// call runs on.
#ifndef MOLT_KERNEL_ABI_CALLBACK_RUNNER_H_
#define MOLT_KERNEL_ABI_CALLBACK_RUNNER_H_

#include <molt/molt.h>

#include <functional>
#include <memory>
#include <mutex>

#include "kernel/src/core/clock.h"

namespace molt::kernel::abi {

class CallbackRunner {
 public:
  CallbackRunner() = default;
  CallbackRunner(const CallbackRunner&) = delete;
  CallbackRunner& operator=(const CallbackRunner&) = delete;
  // Stops the thread; one still in an abandoned call is left to finish on its own.
  ~CallbackRunner();

  struct Outcome {
    bool returned = false;   // false: abandoned at the deadline
    molt_status_t code = 0;  // what fn returned
  };
  Outcome Run(Duration limit, std::function<molt_status_t()> fn);
  // Calls are coming (a swap is a step away): the runner's thread wakes now and spins for the
  // next one for up to `hot`, so the first call of the swap does not wait for it to wake.
  void Prime(Duration hot);

  // Calls abandoned so far (each leaves a thread that may still run).
  std::size_t abandoned() const { return abandoned_; }

  struct Call;  // one call's baton and outcome (callback_runner.cc)
  struct Worker;
  // What a host call made on a runner's thread holds while it runs: the call's baton. On any
  // other thread (the kernel thread) it holds nothing and `refused` is false.
  class HostCall {
   public:
    HostCall();
    ~HostCall();
    HostCall(const HostCall&) = delete;
    HostCall& operator=(const HostCall&) = delete;
    // The call it belongs to was abandoned: the host call must return without touching anything.
    bool refused() const { return refused_; }

   private:
    std::unique_lock<std::mutex> lock_;
    bool refused_ = false;
  };

 private:
  void Start();  // the thread, when there is none

  std::shared_ptr<Worker> worker_;  // started by the first Run(); replaced after an abandon
  std::size_t abandoned_ = 0;
};

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_CALLBACK_RUNNER_H_
