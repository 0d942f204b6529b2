// SPDX-License-Identifier: Apache-2.0
// CallbackRunner: a plugin callback on a thread of its own, waited for with a deadline.
#include "kernel/src/abi/callback_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <thread>

namespace molt::kernel::abi {
namespace {

// How long the runner spins for its next call before it sleeps (a swap's calls come back to
// back), and how long the waiting side spins before it sleeps (it has nothing else to do: the
// kernel thread waits in a hold).
constexpr Duration kRunnerSpin = std::chrono::microseconds(50);
constexpr Duration kWaiterSpin = std::chrono::milliseconds(10);

// Longer than this is no deadline at all (and RealNow() + it would overflow).
constexpr Duration kForever = std::chrono::hours(24 * 365);

inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until `ready` or `until` passed.
template <class Ready>
void SpinUntil(TimePoint until, Ready&& ready) {
  while (!ready()) {
    for (int i = 0; i < 32; ++i) {
      Pause();
    }
    if (RealNow() >= until) {
      return;
    }
  }
}

}  // namespace

struct CallbackRunner::Call {
  std::function<molt_status_t()> fn;
  std::mutex baton;  // held by each host call, and by the waiting thread but while it waits
  std::condition_variable cv;
  bool done = false;       // under baton
  bool abandoned = false;  // under baton
  molt_status_t code = MOLT_OK;
  std::atomic<bool> finished{false};  // `done`, for the waiting thread's spin
};

struct CallbackRunner::Worker {
  std::mutex mu;
  std::condition_variable cv;
  std::shared_ptr<Call> job;  // under mu
  std::atomic<bool> pending{false};
  std::atomic<TimePoint::rep> hot_until{0};  // Prime(): spin, do not sleep, until then
  bool quit = false;                         // under mu
  std::thread thread;
};

namespace {

// The call this thread runs for a runner (null elsewhere), and how deep its host calls nest.
thread_local CallbackRunner::Call* t_call = nullptr;
thread_local int t_host_depth = 0;

void WorkerLoop(const std::shared_ptr<CallbackRunner::Worker>& w) {
  for (;;) {
    std::shared_ptr<CallbackRunner::Call> call;
    const TimePoint hot =
        TimePoint(TimePoint::duration(w->hot_until.load(std::memory_order_relaxed)));
    SpinUntil(std::max(RealNow() + kRunnerSpin, hot),
              [&] { return w->pending.load(std::memory_order_acquire); });
    {
      std::unique_lock lock(w->mu);
      w->cv.wait(lock, [&] {
        return w->job != nullptr || w->quit ||
               w->hot_until.load(std::memory_order_relaxed) > RealNow().time_since_epoch().count();
      });
      if (w->quit) {
        return;
      }
      if (w->job == nullptr) {
        continue;  // primed: spin for the call that comes
      }
      call = std::move(w->job);
      w->pending.store(false, std::memory_order_relaxed);
    }
    t_call = call.get();
    const molt_status_t code = call->fn();
    t_call = nullptr;
    bool left = false;
    {
      std::lock_guard lock(call->baton);
      left = call->abandoned;
      call->code = code;
      call->done = true;
    }
    call->finished.store(true, std::memory_order_release);
    call->cv.notify_one();
    if (left) {
      return;  // the runner gave this thread up at the deadline; it has another one now
    }
  }
}

}  // namespace

CallbackRunner::~CallbackRunner() {
  if (worker_ != nullptr) {
    {
      std::lock_guard lock(worker_->mu);
      worker_->quit = true;
    }
    worker_->cv.notify_one();
    worker_->thread.join();
  }
}

void CallbackRunner::Start() {
  if (worker_ == nullptr) {
    worker_ = std::make_shared<Worker>();
    worker_->thread = std::thread([w = worker_] { WorkerLoop(w); });
  }
}

void CallbackRunner::Prime(Duration hot) {
  Start();
  {
    std::lock_guard lock(worker_->mu);
    worker_->hot_until.store((RealNow() + hot).time_since_epoch().count(),
                             std::memory_order_relaxed);
  }
  worker_->cv.notify_one();
}

CallbackRunner::Outcome CallbackRunner::Run(Duration limit, std::function<molt_status_t()> fn) {
  Start();
  auto call = std::make_shared<Call>();
  call->fn = std::move(fn);
  {
    std::lock_guard lock(worker_->mu);
    worker_->job = call;
    worker_->pending.store(true, std::memory_order_release);
  }
  worker_->cv.notify_one();
  SpinUntil(RealNow() + std::min(limit, kWaiterSpin),
            [&] { return call->finished.load(std::memory_order_acquire); });
  std::unique_lock lock(call->baton);
  const auto done = [&] { return call->done; };
  if (limit >= kForever) {
    call->cv.wait(lock, done);
  } else if (!call->cv.wait_until(lock, RealNow() + limit, done)) {
    call->abandoned = true;  // no host call is in flight: this thread holds the baton
    lock.unlock();
    worker_->thread.detach();  // the thread holds its Worker and its Call
    worker_.reset();
    ++abandoned_;
    return {false, MOLT_OK};
  }
  return {true, call->code};
}

CallbackRunner::HostCall::HostCall() {
  Call* c = t_call;
  if (c == nullptr || t_host_depth++ > 0) {
    return;  // not a runner's thread, or nested in a host call that holds the baton
  }
  lock_ = std::unique_lock(c->baton);
  if (c->abandoned) {
    refused_ = true;
    lock_.unlock();
  }
}

CallbackRunner::HostCall::~HostCall() {
  if (t_call != nullptr) {
    --t_host_depth;
  }
}

}  // namespace molt::kernel::abi
