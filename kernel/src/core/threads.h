// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/threads.h
//
// QuietThread(fn): a helper thread (a store's, the analytics writer, a worker) that takes no
// process signal. SIGTERM and SIGHUP are for the server's signal thread (server/signal_watcher.h);
// one taken on a helper thread would run its default action and end the process.
#ifndef MOLT_KERNEL_CORE_THREADS_H_
#define MOLT_KERNEL_CORE_THREADS_H_

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace molt::kernel {

template <class F>
std::thread QuietThread(F&& fn) {
  return std::thread([fn = std::forward<F>(fn)]() mutable {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    fn();
  });
}

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_THREADS_H_
