// SPDX-License-Identifier: Apache-2.0
// Worker jobs (workers/pool.h): the round trip of one job from the kernel thread to a worker and
// back (Submit, a worker runs it, its ending posted back and run), beside a baseline in the same
// run: a raw std::thread handed a function under a mutex and condition variable, answering the
// same way. And a fork_join of a CPU-bound job on 1 worker and on 2, for the speed-up on this
// machine's 2 cores. Results: docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "kernel/src/workers/pool.h"

namespace molt::kernel::workers {
namespace {

// The kernel thread's queue, as Loop::Post feeds it: the bench thread waits on it.
class Inbox {
 public:
  WorkerPool::Post post() {
    return [this](std::function<void()> fn) {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(fn));
      cv_.notify_one();
    };
  }
  // Runs what arrives until `*done`.
  void RunUntil(const bool* done) {
    while (!*done) {
      std::vector<std::function<void()>> batch;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        batch.swap(queue_);
      }
      for (auto& fn : batch) {
        fn();
      }
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::function<void()>> queue_;
};

void BM_Workers_RoundTrip(benchmark::State& state) {
  Inbox inbox;
  WorkerPool pool({1, 100}, inbox.post());
  std::int64_t ran = 0;
  for (auto _ : state) {
    bool done = false;
    Job job;
    job.run = [&ran](std::size_t) {
      ++ran;
      return true;
    };
    job.finished = [&done] { done = true; };
    benchmark::DoNotOptimize(pool.Submit(std::move(job)));
    inbox.RunUntil(&done);
  }
  state.counters["jobs"] = static_cast<double>(ran);
}
BENCHMARK(BM_Workers_RoundTrip)->UseRealTime();

// The same hand-off written by hand: one thread, one mutex, two condition variables.
void BM_Baseline_ThreadCvHandoff(benchmark::State& state) {
  std::mutex mu;
  std::condition_variable to_worker, to_caller;
  std::function<void()> task;
  bool answered = false, quit = false;
  std::int64_t ran = 0;
  std::thread worker([&] {
    std::unique_lock lock(mu);
    for (;;) {
      to_worker.wait(lock, [&] { return task != nullptr || quit; });
      if (quit) {
        return;
      }
      std::function<void()> fn = std::move(task);
      task = nullptr;
      lock.unlock();
      fn();
      lock.lock();
      answered = true;
      to_caller.notify_one();
    }
  });
  for (auto _ : state) {
    std::unique_lock lock(mu);
    answered = false;
    task = [&ran] { ++ran; };
    to_worker.notify_one();
    to_caller.wait(lock, [&] { return answered; });
  }
  {
    std::lock_guard lock(mu);
    quit = true;
  }
  to_worker.notify_one();
  worker.join();
  state.counters["jobs"] = static_cast<double>(ran);
}
BENCHMARK(BM_Baseline_ThreadCvHandoff)->UseRealTime();

// 64 items of about 1.3 ms of arithmetic each, chunked as the ABI's default (4 waves per worker).
void BM_Workers_ForkJoinCpuBound(benchmark::State& state) {
  const std::size_t threads = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t kItems = 64;
  Inbox inbox;
  WorkerPool pool({threads, 100}, inbox.post());
  std::vector<double> out(kItems);
  for (auto _ : state) {
    bool done = false;
    Job job;
    job.items = kItems;
    job.chunk = (kItems + 4 * threads - 1) / (4 * threads);
    job.run = [&out](std::size_t i) {
      double x = static_cast<double>(i);
      for (int k = 0; k < 200000; ++k) {
        x = std::sqrt(x + k);
      }
      out[i] = x;
      return true;
    };
    job.finished = [&done] { done = true; };
    benchmark::DoNotOptimize(pool.Submit(std::move(job)));
    inbox.RunUntil(&done);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Workers_ForkJoinCpuBound)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace molt::kernel::workers
