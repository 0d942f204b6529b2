// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/signal_watcher.h
//
// SignalWatcher: receives SIGINT, SIGTERM, SIGHUP and SIGUSR1 on a thread of its own, so they never
// interrupt the kernel thread (a plugin's sleep or read in the middle of stop() is not cut short by
// EINTR). The constructor blocks them in the calling thread, and so in every thread created after
// it; a dedicated thread waits for them with sigwait and calls `on_signal(signo)` there. The
// destructor stops the thread and restores the previous signal mask.
//
// Thread safety: construct and destroy on the same thread; `on_signal` runs on the watcher's
// thread and must post to the loop for anything touching kernel state.
#ifndef MOLT_KERNEL_SERVER_SIGNAL_WATCHER_H_
#define MOLT_KERNEL_SERVER_SIGNAL_WATCHER_H_

#include <signal.h>

#include <atomic>
#include <functional>
#include <thread>

namespace molt::kernel {

class SignalWatcher {
 public:
  explicit SignalWatcher(std::function<void(int signo)> on_signal);
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;
  ~SignalWatcher();

 private:
  std::function<void(int)> on_signal_;
  sigset_t watched_;
  sigset_t previous_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_SIGNAL_WATCHER_H_
