// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/serial_thread.h
//
// SerialThread: a helper thread that runs posted tasks one at a time, in order of when they are
// due (the deploy thread, the live values' store). It takes no process signal (threads.h).
//
//   SerialThread thread;
//   thread.Start();
//   thread.Post([] { ... });                                   // as soon as it is free
//   thread.At(std::chrono::steady_clock::now() + 1h, [] { ... });  // not before then
//   thread.Stop();                                             // the tasks not yet run are dropped
//
// Thread safety: Post/At from any thread; Start/Stop from the owner's.
#ifndef MOLT_KERNEL_CORE_SERIAL_THREAD_H_
#define MOLT_KERNEL_CORE_SERIAL_THREAD_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "kernel/src/core/threads.h"

namespace molt::kernel {

class SerialThread {
 public:
  using Clock = std::chrono::steady_clock;

  SerialThread() = default;
  ~SerialThread() { Stop(); }
  SerialThread(const SerialThread&) = delete;
  SerialThread& operator=(const SerialThread&) = delete;

  void Start() {
    thread_ = QuietThread([this] { Run(); });
  }
  void Post(std::function<void()> fn) { At(Clock::now(), std::move(fn)); }
  void At(Clock::time_point when, std::function<void()> fn) {
    {
      std::lock_guard lock(mu_);
      tasks_.emplace(when, std::move(fn));
    }
    cv_.notify_one();
  }
  // Ends the thread after the task it runs; the tasks not yet run are dropped.
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) {
      thread_.join();
    }
  }

 private:
  void Run() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      if (tasks_.empty()) {
        cv_.wait(lock);
        continue;
      }
      auto first = tasks_.begin();
      if (first->first > Clock::now()) {
        cv_.wait_until(lock, first->first);
        continue;
      }
      std::function<void()> fn = std::move(first->second);
      tasks_.erase(first);
      lock.unlock();
      fn();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<Clock::time_point, std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_SERIAL_THREAD_H_
