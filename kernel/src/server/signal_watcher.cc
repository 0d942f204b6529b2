// SPDX-License-Identifier: Apache-2.0
// SignalWatcher: blocked signals + one sigwait thread; woken for shutdown with pthread_kill.
#include "kernel/src/server/signal_watcher.h"

#include <pthread.h>

namespace molt::kernel {

SignalWatcher::SignalWatcher(std::function<void(int)> on_signal)
    : on_signal_(std::move(on_signal)) {
  sigemptyset(&watched_);
  sigaddset(&watched_, SIGINT);
  sigaddset(&watched_, SIGTERM);
  sigaddset(&watched_, SIGHUP);
  sigaddset(&watched_, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &watched_, &previous_);
  thread_ = std::thread([this] {
    for (;;) {
      int signo = 0;
      if (sigwait(&watched_, &signo) != 0) {
        continue;
      }
      if (stopping_.load()) {
        return;
      }
      on_signal_(signo);
    }
  });
}

SignalWatcher::~SignalWatcher() {
  stopping_.store(true);
  pthread_kill(thread_.native_handle(), SIGTERM);  // blocked everywhere: sigwait takes it
  thread_.join();
  // Drop a signal that arrived after the last sigwait, then restore the caller's mask.
  sigset_t pending;
  sigpending(&pending);
  const timespec zero{0, 0};
  while (sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM) ||
         sigismember(&pending, SIGHUP) || sigismember(&pending, SIGUSR1)) {
    sigtimedwait(&watched_, nullptr, &zero);
    sigpending(&pending);
  }
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

}  // namespace molt::kernel
