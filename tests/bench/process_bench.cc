// SPDX-License-Identifier: Apache-2.0
// Processes (DESIGN.md §11): the fiber yield round trip, spawn + run + finish, and the memory of
// 10,000 sleeping processes, each beside a baseline measured in the same run.
#include <benchmark/benchmark.h>

#include <boost/context/fiber.hpp>
#include <fstream>
#include <vector>

#include "kernel/src/core/process.h"

namespace molt::kernel {
namespace {

constexpr int kProcessBatch = 64;

SchedulerOptions Unbudgeted() {
  SchedulerOptions o;
  o.budget = {std::chrono::seconds(1), std::nullopt};
  o.profile_tasks = false;
  return o;
}

// 64 processes that only yield: one step switches into each and back once.
void BM_Process_YieldRoundTrip(benchmark::State& state) {
  Scheduler scheduler(Unbudgeted());
  std::vector<std::shared_ptr<Process>> procs;
  for (int i = 0; i < kProcessBatch; ++i) {
    procs.push_back(Process::Create(scheduler, [] {
      for (;;) {
        Process::Yield();
      }
      return std::string();
    }));
    (void)procs.back()->Start();
  }
  for (auto _ : state) {
    scheduler.Step();
  }
  state.SetItemsProcessed(state.iterations() * kProcessBatch);
  for (auto& p : procs) {
    p->Kill();
  }
}
BENCHMARK(BM_Process_YieldRoundTrip);

// Baseline: the same 64 steps as reusable scheduler entries that re-queue themselves, no fiber.
void BM_Process_BaselineEntryRequeue(benchmark::State& state) {
  Scheduler scheduler(Unbudgeted());
  std::vector<std::uint64_t> entries(kProcessBatch);
  for (int i = 0; i < kProcessBatch; ++i) {
    std::uint64_t* self = &entries[i];
    entries[i] = scheduler.CreateEntry([&scheduler, self] { scheduler.QueueEntry(*self); },
                                       Priority::kNormal, TaskOrigin());
    scheduler.QueueEntry(entries[i]);
  }
  for (auto _ : state) {
    scheduler.Step();
  }
  state.SetItemsProcessed(state.iterations() * kProcessBatch);
}
BENCHMARK(BM_Process_BaselineEntryRequeue);

// Baseline: a bare Boost.Context fiber ping-pong (the physical floor of a switch pair).
void BM_Process_BaselineRawFiberPingPong(benchmark::State& state) {
  namespace ctx = boost::context;
  ctx::fiber f{std::allocator_arg, FiberStack(), [](ctx::fiber&& caller) {
                 for (;;) {
                   caller = std::move(caller).resume();
                 }
                 return std::move(caller);
               }};
  for (auto _ : state) {
    f = std::move(f).resume();
  }
}
BENCHMARK(BM_Process_BaselineRawFiberPingPong);

// 64 processes spawned, started, run to completion in one step (pooled stacks after warm-up).
void BM_Process_SpawnRunFinish(benchmark::State& state) {
  Scheduler scheduler(Unbudgeted());
  std::int64_t done = 0;
  for (auto _ : state) {
    for (int i = 0; i < kProcessBatch; ++i) {
      auto p = Process::Create(scheduler, [&done] {
        ++done;
        return std::string();
      });
      (void)p->Start();
    }
    scheduler.Step();
  }
  state.SetItemsProcessed(state.iterations() * kProcessBatch);
  benchmark::DoNotOptimize(done);
}
BENCHMARK(BM_Process_SpawnRunFinish);

// Baseline: a raw fiber created on a pooled stack, run once and finished.
void BM_Process_BaselineRawFiberSpawnFinish(benchmark::State& state) {
  namespace ctx = boost::context;
  std::int64_t done = 0;
  for (auto _ : state) {
    ctx::fiber f{std::allocator_arg, FiberStack(), [&done](ctx::fiber&& caller) {
                   ++done;
                   return std::move(caller);
                 }};
    f = std::move(f).resume();
  }
  benchmark::DoNotOptimize(done);
}
BENCHMARK(BM_Process_BaselineRawFiberSpawnFinish);

std::size_t ResidentKiB() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * 4;  // 4 KiB pages
}

// Memory: 10,000 processes asleep on a deadline. Reported as KiB of resident memory per process
// (stack pages touched, the Process object, its scheduler entry and heap slot).
void BM_Process_Memory10kSleeping(benchmark::State& state) {
  for (auto _ : state) {
    Scheduler scheduler(Unbudgeted());
    const std::size_t before = ResidentKiB();
    std::vector<std::shared_ptr<Process>> procs;
    procs.reserve(10000);
    for (int i = 0; i < 10000; ++i) {
      procs.push_back(Process::Create(scheduler, [] {
        Process::Sleep(std::chrono::seconds(3600));
        return std::string();
      }));
      (void)procs.back()->Start();
    }
    scheduler.Step();  // every body runs to its sleep
    const std::size_t after = ResidentKiB();
    state.counters["KiB_per_process"] =
        static_cast<double>(after - before) / static_cast<double>(procs.size());
    state.counters["pending_timers"] = static_cast<double>(scheduler.pending());
    for (auto& p : procs) {
      p->Kill();
    }
  }
}
BENCHMARK(BM_Process_Memory10kSleeping)->Iterations(1);

}  // namespace
}  // namespace molt::kernel
