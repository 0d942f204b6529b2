// SPDX-License-Identifier: Apache-2.0
// Hot paths of the kernel core (DESIGN.md §11), each beside a baseline measured in the same run:
// a plain std::function call doing the same user work. Results: docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <functional>
#include <vector>

#include "kernel/src/core/bus.h"
#include "kernel/src/core/hooks.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/core/token_bucket.h"

namespace molt::kernel {
namespace {

// Baseline: the cheapest way to call user code through type erasure.
void BM_Baseline_StdFunctionCall(benchmark::State& state) {
  std::int64_t sum = 0;
  std::function<void(std::int64_t)> fn = [&sum](std::int64_t v) { sum += v; };
  benchmark::DoNotOptimize(fn);
  for (auto _ : state) {
    fn(1);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(sum);
}
BENCHMARK(BM_Baseline_StdFunctionCall);

void BM_Bus_PublishPreResolved_1Sub(benchmark::State& state) {
  Bus bus;
  std::int64_t sum = 0;
  bus.Subscribe("Combat.Kill", [&sum](std::string_view, Args args) { sum += args[0].as.i; });
  Bus::Topic* topic = bus.Resolve("Combat.Kill");
  const Value args[] = {Value::Int(1)};
  for (auto _ : state) {
    bus.Publish(topic, args);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(sum);
}
BENCHMARK(BM_Bus_PublishPreResolved_1Sub);

void BM_Bus_PublishByString_1Sub(benchmark::State& state) {
  Bus bus;
  std::int64_t sum = 0;
  bus.Subscribe("Combat.Kill", [&sum](std::string_view, Args args) { sum += args[0].as.i; });
  const Value args[] = {Value::Int(1)};
  std::string_view topic = "Combat.Kill";
  benchmark::DoNotOptimize(topic);
  for (auto _ : state) {
    bus.Publish(topic, args);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(sum);
}
BENCHMARK(BM_Bus_PublishByString_1Sub);

// Baseline for the chain: three std::function validators called in a loop.
void BM_Baseline_ThreeStdFunctions(benchmark::State& state) {
  std::vector<std::function<bool(std::int64_t)>> chain;
  for (int i = 0; i < 3; ++i) {
    chain.push_back([](std::int64_t v) { return v < 100; });
  }
  std::int64_t v = 1;
  benchmark::DoNotOptimize(v);
  for (auto _ : state) {
    bool ok = true;
    for (auto& f : chain) {
      if (!f(v)) {
        ok = false;
        break;
      }
    }
    benchmark::DoNotOptimize(ok);
  }
}
BENCHMARK(BM_Baseline_ThreeStdFunctions);

// Arg 1: chain timing on, as while the dashboard's wire inspector is open (two clock reads).
void BM_Hooks_Fire_3Validators(benchmark::State& state) {
  Hooks hooks;
  hooks.SetTiming(state.range(0) != 0);
  for (int i = 0; i < 3; ++i) {
    hooks.On(
        "Intent.UseItem", [](HookContext& c) { return c.args[0].as.i < 100; }, 10 * i);
  }
  Hooks::Point* point = hooks.Resolve("Intent.UseItem");
  Value args[] = {Value::Int(1)};
  HookContext ctx{.args = args, .session = 1};
  for (auto _ : state) {
    HookResult r = hooks.Fire(point, ctx);
    benchmark::DoNotOptimize(r.passed);
  }
}
BENCHMARK(BM_Hooks_Fire_3Validators)->ArgName("timed")->Arg(0)->Arg(1);

// Baseline for the bucket: the clock is read once per tick, so a take is arithmetic only.
void BM_Baseline_IncrementCounter(benchmark::State& state) {
  std::int64_t counter = 0;
  for (auto _ : state) {
    ++counter;
    benchmark::DoNotOptimize(counter);
  }
}
BENCHMARK(BM_Baseline_IncrementCounter);

void BM_TokenBucket_Take(benchmark::State& state) {
  TimePoint now = RealNow();
  TokenBucket bucket(1e12, 1e12, now);  // never empty: measure the take, not refusals
  for (auto _ : state) {
    now += std::chrono::nanoseconds(1);
    bool ok = bucket.Take(now);
    benchmark::DoNotOptimize(ok);
  }
}
BENCHMARK(BM_TokenBucket_Take);

// Schedule `batch` tasks, then one step runs them all. Reported per task.
void ScheduleAndStep(benchmark::State& state, bool profile) {
  SchedulerOptions options;
  options.budget = {std::chrono::seconds(1), std::nullopt};
  options.profile_tasks = profile;
  Scheduler scheduler(options);
  std::int64_t sum = 0;
  const int batch = static_cast<int>(state.range(0));
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) {
      scheduler.Schedule([&sum] { ++sum; });
    }
    scheduler.Step();
  }
  state.SetItemsProcessed(state.iterations() * batch);
  benchmark::DoNotOptimize(sum);
}

void BM_Scheduler_ScheduleStep_Profiled(benchmark::State& state) { ScheduleAndStep(state, true); }
BENCHMARK(BM_Scheduler_ScheduleStep_Profiled)->Arg(1)->Arg(64);

void BM_Scheduler_ScheduleStep_Unprofiled(benchmark::State& state) {
  ScheduleAndStep(state, false);
}
BENCHMARK(BM_Scheduler_ScheduleStep_Unprofiled)->Arg(1)->Arg(64);

// Phases (ABI 1.5): `batch` tasks scheduled in post_tick, then one step of the main scheduler runs
// them after its own (none here). Reported per task, beside ScheduleStep on the main one.
void BM_Scheduler_PostTickScheduleStep_Unprofiled(benchmark::State& state) {
  SchedulerOptions options;
  options.budget = {std::chrono::seconds(1), std::nullopt};
  options.profile_tasks = false;
  Scheduler scheduler(options);
  Scheduler& post = scheduler.ForPhase(Phase::kPostTick);
  std::int64_t sum = 0;
  const int batch = static_cast<int>(state.range(0));
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) {
      post.Schedule([&sum] { ++sum; });
    }
    scheduler.Step();
  }
  state.SetItemsProcessed(state.iterations() * batch);
  benchmark::DoNotOptimize(sum);
}
BENCHMARK(BM_Scheduler_PostTickScheduleStep_Unprofiled)->Arg(1)->Arg(64);

// What phases cost a tick that has no work in them: one main task a step, with both phases
// built and idle (Arg 1) or never built (Arg 0, the baseline in the same run).
void BM_Scheduler_StepWithIdlePhases(benchmark::State& state) {
  SchedulerOptions options;
  options.budget = {std::chrono::seconds(1), std::nullopt};
  options.profile_tasks = false;
  Scheduler scheduler(options);
  if (state.range(0) != 0) {
    (void)scheduler.ForPhase(Phase::kPreTick);
    (void)scheduler.ForPhase(Phase::kPostTick);
  }
  std::int64_t sum = 0;
  for (auto _ : state) {
    scheduler.Schedule([&sum] { ++sum; });
    scheduler.Step();
    benchmark::DoNotOptimize(scheduler.NextWake());
  }
  benchmark::DoNotOptimize(sum);
}
BENCHMARK(BM_Scheduler_StepWithIdlePhases)->Arg(0)->Arg(1);

// Baseline: a vector of std::function filled and drained, the floor of any deferred-call queue.
void BM_Baseline_VectorOfFunctions(benchmark::State& state) {
  std::vector<std::function<void()>> queue;
  queue.reserve(64);
  std::int64_t sum = 0;
  const int batch = static_cast<int>(state.range(0));
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) {
      queue.emplace_back([&sum] { ++sum; });
    }
    for (auto& f : queue) {
      f();
    }
    queue.clear();
  }
  state.SetItemsProcessed(state.iterations() * batch);
  benchmark::DoNotOptimize(sum);
}
BENCHMARK(BM_Baseline_VectorOfFunctions)->Arg(1)->Arg(64);

// The cycle-counter read the scheduler makes per task, and steady_clock for comparison.
void BM_Clock_RealTicks(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(RealTicks());
  }
}
BENCHMARK(BM_Clock_RealTicks);

void BM_Clock_SteadyClockNow(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::chrono::steady_clock::now());
  }
}
BENCHMARK(BM_Clock_SteadyClockNow);

}  // namespace
}  // namespace molt::kernel
