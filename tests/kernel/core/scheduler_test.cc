// SPDX-License-Identifier: Apache-2.0
// Scheduler behaviour on a ManualClock: tasks "take time" by advancing the clock.
#include "kernel/src/core/scheduler.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace molt::kernel {
namespace {

using std::chrono::milliseconds;

class SchedulerTest : public ::testing::Test {
 protected:
  // A fixed 1.5 ms slice unless a test says otherwise.
  Scheduler Make(BudgetPolicy budget = {kDefaultBudget, std::nullopt}, bool stagger = false) {
    SchedulerOptions o;
    o.budget = budget;
    o.clock = &clock_;
    o.stagger_recurring = stagger;
    return Scheduler(o);
  }

  ManualClock clock_;
  std::vector<std::string> log_;
};

TEST_F(SchedulerTest, ScheduledTaskRunsOnNextStep) {
  Scheduler s = Make();
  s.Schedule([&] { log_.push_back("a"); });
  EXPECT_TRUE(log_.empty());
  s.Step();
  EXPECT_EQ(log_, std::vector<std::string>{"a"});
  s.Step();
  EXPECT_EQ(log_.size(), 1u);
}

// Phases (spec: phase schedulers): pre_tick and post_tick are schedulers of their own that a
// step runs just before and just after its tasks.
TEST_F(SchedulerTest, PhasesRunBeforeAndAfterTheTicksTasksInOneStep) {
  Scheduler s = Make();
  EXPECT_EQ(s.FindPhase(Phase::kPreTick), nullptr);  // built on first use
  EXPECT_EQ(&s.ForPhase(Phase::kTick), &s);
  Scheduler& pre = s.ForPhase(Phase::kPreTick);
  Scheduler& post = s.ForPhase(Phase::kPostTick);
  EXPECT_EQ(s.FindPhase(Phase::kPreTick), &pre);
  EXPECT_EQ(&s.ForPhase(Phase::kPreTick), &pre);  // cached
  post.Every(Duration::zero(), [&] { log_.push_back("post"); });
  s.Every(Duration::zero(), [&] { log_.push_back("tick"); });
  pre.Schedule([&] {
    log_.push_back("input");
    s.Schedule([&] { log_.push_back("step reads input"); });  // this tick's step takes it
    pre.Schedule([&] { log_.push_back("next input"); });      // the phase's next step
  });
  s.Step();
  EXPECT_EQ(log_, (std::vector<std::string>{"input", "tick", "step reads input", "post"}));
  log_.clear();
  s.Step();
  EXPECT_EQ(log_, (std::vector<std::string>{"next input", "tick", "post"}));
  EXPECT_EQ(pre.stats().steps, 2u);
  EXPECT_EQ(post.stats().tasks_run, 2u);
}

TEST_F(SchedulerTest, APhaseHasTheFloorAsAFixedBudgetAndItsTimeComesOffTheFrame) {
  Scheduler s = Make(BudgetPolicy{milliseconds(1), milliseconds(16)});
  Scheduler& pre = s.ForPhase(Phase::kPreTick);
  pre.Schedule([&] { clock_.Advance(milliseconds(5)); });
  s.Schedule([] {});
  s.Step();
  EXPECT_EQ(pre.stats().last_budget, milliseconds(1));  // not the frame's slack a second time
  EXPECT_EQ(s.stats().last_budget, milliseconds(11));   // 16 ms less the 5 the phase took
  // post_tick's time comes off the next frame.
  s.ForPhase(Phase::kPostTick).Schedule([&] { clock_.Advance(milliseconds(4)); });
  s.Step();
  EXPECT_EQ(s.NextBudget(), milliseconds(12));
}

TEST_F(SchedulerTest, AnIdlePhaseAddsNoWakeAndABusyOneWakesAtTheTicksPace) {
  SchedulerOptions o;
  o.clock = &clock_;
  o.tick_period = milliseconds(16);
  Scheduler s(o);
  Scheduler& post = s.ForPhase(Phase::kPostTick);
  EXPECT_EQ(s.NextWake(), std::nullopt);
  TaskHandle every = post.Every(Duration::zero(), [&] { log_.push_back("post"); });
  s.Step();
  const TimePoint stepped = clock_.Now();
  ASSERT_TRUE(s.NextWake().has_value());
  EXPECT_EQ(*s.NextWake(), stepped + milliseconds(16));  // paced by the tick, not "now"
  every.Cancel();
  post.After(milliseconds(100), [&] { log_.push_back("later"); });
  EXPECT_EQ(*s.NextWake(), stepped + milliseconds(100));
  clock_.Advance(milliseconds(50));
  s.Step();
  EXPECT_EQ(log_, std::vector<std::string>{"post"});  // not due: the phase was not stepped
  clock_.Advance(milliseconds(50));
  s.Step();
  EXPECT_EQ(log_, (std::vector<std::string>{"post", "later"}));
  EXPECT_EQ(s.NextWake(), std::nullopt);
}

TEST_F(SchedulerTest, APhasesErrorsReachOnErrorWithThePhaseAndCancelAllReachesIt) {
  Scheduler s = Make();
  std::vector<std::string> errors;
  auto c = s.OnError().Connect([&](const TaskError& e) {
    errors.push_back(std::string(PhaseName(e.phase)) + " " + std::string(e.origin) + ": " +
                     std::string(e.message));
  });
  s.ForPhase(Phase::kPreTick)
      .Schedule([] { throw std::runtime_error("bad input"); }, Priority::kNormal,
                TaskOrigin::Named("Input"));
  s.Schedule([] { throw std::runtime_error("bad step"); }, Priority::kNormal,
             TaskOrigin::Named("Step"));
  s.Step();
  EXPECT_EQ(errors, (std::vector<std::string>{"pre_tick Input: bad input", "tick Step: bad step"}));
  s.ForPhase(Phase::kPostTick).Every(Duration::zero(), [&] { log_.push_back("post"); });
  s.CancelAll();
  s.Step();
  EXPECT_TRUE(log_.empty());
  EXPECT_EQ(s.NextWake(), std::nullopt);
}

TEST_F(SchedulerTest, DrainsPrioritiesInOrderAndFifoWithin) {
  Scheduler s = Make();
  s.Schedule([&] { log_.push_back("bg"); }, Priority::kBackground);
  s.Schedule([&] { log_.push_back("low"); }, Priority::kLow);
  s.Schedule([&] { log_.push_back("normal1"); });
  s.Schedule([&] { log_.push_back("high"); }, Priority::kHigh);
  s.Schedule([&] { log_.push_back("normal2"); });
  s.Schedule([&] { log_.push_back("kernel"); }, Priority::kKernel);
  s.Step();
  EXPECT_EQ(log_, (std::vector<std::string>{"kernel", "high", "normal1", "normal2", "low", "bg"}));
}

TEST_F(SchedulerTest, WorkScheduledDuringAStepRunsOnTheNextStep) {
  Scheduler s = Make();
  s.Schedule([&] {
    log_.push_back("first");
    s.Schedule([&] { log_.push_back("second"); }, Priority::kKernel);
  });
  s.Step();
  EXPECT_EQ(log_, std::vector<std::string>{"first"});
  s.Step();
  EXPECT_EQ(log_, (std::vector<std::string>{"first", "second"}));
}

TEST_F(SchedulerTest, CancelPreventsTheRun) {
  Scheduler s = Make();
  TaskHandle h = s.Schedule([&] { log_.push_back("x"); });
  EXPECT_TRUE(h.Pending());
  EXPECT_TRUE(h.Cancel());
  EXPECT_FALSE(h.Pending());
  EXPECT_FALSE(h.Cancel());
  s.Step();
  EXPECT_TRUE(log_.empty());
  EXPECT_EQ(s.stats().tasks_run, 0u);
}

TEST_F(SchedulerTest, HandleIsNotPendingAfterTheRunAndIdsAreNotReused) {
  Scheduler s = Make();
  TaskHandle first = s.Schedule([] {});
  s.Step();
  EXPECT_FALSE(first.Pending());
  TaskHandle second = s.Schedule([&] { log_.push_back("second"); });
  EXPECT_NE(first.id(), second.id());  // same slot, new generation
  EXPECT_FALSE(first.Cancel());        // a stale handle cannot cancel the new task
  s.Step();
  EXPECT_EQ(log_, std::vector<std::string>{"second"});
}

TEST_F(SchedulerTest, AfterRunsAtItsDeadlineNotBefore) {
  Scheduler s = Make();
  s.After(milliseconds(100), [&] { log_.push_back("due"); });
  clock_.Advance(milliseconds(99));
  s.Step();
  EXPECT_TRUE(log_.empty());
  clock_.Advance(milliseconds(1));
  s.Step();
  EXPECT_EQ(log_, std::vector<std::string>{"due"});
  EXPECT_EQ(s.pending(), 0u);
}

TEST_F(SchedulerTest, AfterWithANegativeDelayRunsOnTheNextStep) {
  Scheduler s = Make();
  s.After(milliseconds(-5), [&] { log_.push_back("now"); });
  s.Step();
  EXPECT_EQ(log_, std::vector<std::string>{"now"});
}

TEST_F(SchedulerTest, DueTimersRunInDeadlineOrderAtTheirPriority) {
  Scheduler s = Make();
  s.After(milliseconds(20), [&] { log_.push_back("b"); });
  s.After(milliseconds(10), [&] { log_.push_back("a"); });
  s.After(milliseconds(20), [&] { log_.push_back("c"); });  // same deadline: FIFO
  s.After(
      milliseconds(30), [&] { log_.push_back("kernel"); }, Priority::kKernel);
  clock_.Advance(milliseconds(30));
  s.Step();
  EXPECT_EQ(log_, (std::vector<std::string>{"kernel", "a", "b", "c"}));
}

TEST_F(SchedulerTest, CancelledTimerNeverRunsAndLeavesNothingBehind) {
  Scheduler s = Make();
  TaskHandle h = s.After(milliseconds(10), [&] { log_.push_back("x"); });
  s.After(milliseconds(5), [] {});
  EXPECT_EQ(s.pending(), 2u);
  EXPECT_TRUE(h.Cancel());
  EXPECT_EQ(s.pending(), 1u);
  clock_.Advance(milliseconds(20));
  s.Step();
  EXPECT_TRUE(log_.empty());
}

TEST_F(SchedulerTest, EveryRunsOncePerInterval) {
  Scheduler s = Make();
  int runs = 0;
  s.Every(milliseconds(100), [&] { ++runs; });
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(milliseconds(50));
    s.Step();
  }
  EXPECT_EQ(runs, 5);
}

TEST_F(SchedulerTest, EveryZeroRunsEveryStep) {
  Scheduler s = Make();
  int runs = 0;
  s.Every(Duration::zero(), [&] { ++runs; });
  for (int i = 0; i < 4; ++i) {
    s.Step();
  }
  EXPECT_EQ(runs, 4);
}

TEST_F(SchedulerTest, EveryThatFellBehindDoesNotBurst) {
  Scheduler s = Make();
  int runs = 0;
  s.Every(milliseconds(10), [&] { ++runs; });
  clock_.Advance(milliseconds(1000));  // a long stall: 100 intervals missed
  s.Step();
  s.Step();
  EXPECT_EQ(runs, 1);
  clock_.Advance(milliseconds(10));
  s.Step();
  EXPECT_EQ(runs, 2);
}

TEST_F(SchedulerTest, RecurringTaskCancelledFromInsideStops) {
  Scheduler s = Make();
  int runs = 0;
  TaskHandle h;
  h = s.Every(Duration::zero(), [&] {
    if (++runs == 3) {
      EXPECT_TRUE(h.Cancel());
    }
  });
  for (int i = 0; i < 6; ++i) {
    s.Step();
  }
  EXPECT_EQ(runs, 3);
  EXPECT_FALSE(h.Pending());
}

TEST_F(SchedulerTest, BudgetDefersTheRestToTheNextStep) {
  Scheduler s = Make();  // 1.5 ms
  for (int i = 0; i < 5; ++i) {
    s.Schedule([&, i] {
      log_.push_back(std::to_string(i));
      clock_.Advance(milliseconds(1));
    });
  }
  s.Step();  // 0 runs (1 ms < 1.5), 1 runs (2 ms), then the budget is spent
  EXPECT_EQ(log_, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(s.stats().tasks_deferred, 3u);
  s.Step();
  EXPECT_EQ(log_.size(), 4u);
  s.Step();
  EXPECT_EQ(log_.size(), 5u);
  EXPECT_EQ(s.stats().tasks_deferred, 0u);
  EXPECT_EQ(s.stats().tasks_run, 5u);
  EXPECT_EQ(s.stats().steps_deferring, 2u);  // the first two steps left tasks waiting
}

TEST_F(SchedulerTest, EveryStepsTimeLandsInTheStepHistogram) {
  Scheduler s = Make();
  s.Schedule([] {});
  s.Step();  // a quick step: the first bucket (100 µs)
  s.Schedule([&] { clock_.Advance(milliseconds(3)); });
  s.Step();  // over 2.5 ms: a bucket above the fifth bound
  const SchedulerStats& st = s.stats();
  std::uint64_t total = 0, slow = 0;
  for (std::size_t i = 0; i < st.step_times.size(); ++i) {
    total += st.step_times[i];
    slow += i >= 5 ? st.step_times[i] : 0;  // bounds[4] is 2.5 ms
  }
  EXPECT_EQ(total, st.steps);
  EXPECT_EQ(st.step_times[0], 1u);
  EXPECT_EQ(slow, 1u);
  EXPECT_GE(st.step_time_total, milliseconds(3));
}

TEST_F(SchedulerTest, BudgetIsCheckedBetweenTasksSoALongTaskHoldsTheStep) {
  Scheduler s = Make();
  s.Schedule([&] { clock_.Advance(milliseconds(30)); });
  s.Schedule([&] { log_.push_back("next"); });
  s.Step();
  EXPECT_TRUE(log_.empty());
  EXPECT_EQ(s.stats().last_step, milliseconds(30));
  s.Step();
  EXPECT_EQ(log_, std::vector<std::string>{"next"});
}

TEST_F(SchedulerTest, KernelPriorityIgnoresTheBudget) {
  Scheduler s = Make();
  int kernel_runs = 0;
  for (int i = 0; i < 10; ++i) {
    s.Schedule(
        [&] {
          ++kernel_runs;
          clock_.Advance(milliseconds(1));
        },
        Priority::kKernel);
  }
  s.Schedule([&] { log_.push_back("normal"); });
  s.Step();
  EXPECT_EQ(kernel_runs, 10);
  EXPECT_TRUE(log_.empty());  // the kernel tasks spent the budget
  EXPECT_EQ(s.stats().tasks_deferred, 1u);
}

TEST_F(SchedulerTest, BackgroundRunsOnlyOnSpareBudget) {
  Scheduler s = Make();
  s.Schedule([&] { clock_.Advance(milliseconds(2)); });
  s.Schedule([&] { log_.push_back("bg"); }, Priority::kBackground);
  s.Step();
  EXPECT_TRUE(log_.empty());
  s.Step();  // nothing else queued: spare budget
  EXPECT_EQ(log_, std::vector<std::string>{"bg"});
}

TEST_F(SchedulerTest, BackgroundWaitsWhileHigherQueuesStillHoldWork) {
  Scheduler s = Make();
  for (int i = 0; i < 3; ++i) {
    s.Schedule([&] { clock_.Advance(milliseconds(1)); }, Priority::kLow);
  }
  s.Schedule([&] { log_.push_back("bg"); }, Priority::kBackground);
  s.Step();  // two lows, budget spent
  EXPECT_TRUE(log_.empty());
  s.Step();  // last low (1 ms), then 0.5 ms spare: background runs
  EXPECT_EQ(log_, std::vector<std::string>{"bg"});
}

TEST_F(SchedulerTest, ThrowingTaskGoesToOnErrorAndTheRestStillRun) {
  Scheduler s = Make();
  std::vector<std::string> errors;
  s.OnError().Connect([&](const TaskError& e) {
    errors.push_back(std::string(e.origin) + " | " + std::string(e.message));
  });
  s.Schedule([] { throw std::runtime_error("boom"); }, Priority::kNormal,
             TaskOrigin::Named("Exploder"));
  s.Schedule([&] { log_.push_back("after"); });
  EXPECT_NO_THROW(s.Step());
  EXPECT_EQ(errors, std::vector<std::string>{"Exploder | boom"});
  EXPECT_EQ(log_, std::vector<std::string>{"after"});
  EXPECT_EQ(s.stats().errors, 1u);
}

TEST_F(SchedulerTest, NonStandardExceptionIsReportedToo) {
  Scheduler s = Make();
  std::string message;
  s.OnError().Connect([&](const TaskError& e) { message = std::string(e.message); });
  s.Schedule([] { throw 42; });
  s.Step();
  EXPECT_EQ(message, "unknown exception");
}

TEST_F(SchedulerTest, ProfilerAttributesTimeCallsAndMaxToOrigins) {
  Scheduler s = Make({milliseconds(100), std::nullopt});
  const TaskOrigin mover = TaskOrigin::Named("Process Mover");
  const TaskOrigin saver = TaskOrigin::Named("Autosave");
  s.Schedule([&] { clock_.Advance(milliseconds(3)); }, Priority::kNormal, mover);
  s.Schedule([&] { clock_.Advance(milliseconds(1)); }, Priority::kNormal, mover);
  s.Schedule([&] { clock_.Advance(milliseconds(2)); }, Priority::kNormal, saver);
  s.Step();
  std::vector<TaskProfile> top = s.TopTasks(5);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].key, "Process Mover");
  EXPECT_EQ(top[0].time, milliseconds(4));
  EXPECT_EQ(top[0].calls, 2u);
  EXPECT_EQ(top[0].max, milliseconds(3));
  EXPECT_EQ(top[1].key, "Autosave");
  EXPECT_EQ(s.TopTasks(1).size(), 1u);
  s.ResetProfile();
  EXPECT_TRUE(s.TopTasks(5).empty());
}

TEST_F(SchedulerTest, DefaultOriginNamesTheCodeThatScheduled) {
  Scheduler s = Make();
  s.Schedule([] {});
  s.Step();
  ASSERT_EQ(s.TopTasks(1).size(), 1u);
  EXPECT_NE(s.TopTasks(1)[0].key.find("SchedulerTest_DefaultOriginNamesTheCodeThatScheduled"),
            std::string::npos)
      << s.TopTasks(1)[0].key;
}

TEST_F(SchedulerTest, ProfileTasksOffRecordsNothing) {
  Scheduler s = Make();
  s.SetProfileTasks(false);
  s.Schedule([&] { clock_.Advance(milliseconds(1)); });
  s.Step();
  EXPECT_TRUE(s.TopTasks(5).empty());
  EXPECT_EQ(s.stats().tasks_run, 1u);
}

TEST_F(SchedulerTest, TopDeferredCountsQueuedTasksByOrigin) {
  Scheduler s = Make();
  s.Schedule([&] { clock_.Advance(milliseconds(5)); }, Priority::kNormal, TaskOrigin::Named("Hog"));
  for (int i = 0; i < 3; ++i) {
    s.Schedule([] {}, Priority::kNormal, TaskOrigin::Named("Starved"));
  }
  s.Schedule([] {}, Priority::kLow, TaskOrigin::Named("Other"));
  s.Step();
  std::vector<DeferredCount> top = s.TopDeferred(5);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].key, "Starved");
  EXPECT_EQ(top[0].count, 3u);
  EXPECT_EQ(top[1].key, "Other");
  EXPECT_EQ(s.stats().tasks_deferred, 4u);
}

TEST_F(SchedulerTest, StaggerRecurringSpreadsFirstDeadlinesWithinTheInterval) {
  Scheduler s = Make({kDefaultBudget, std::nullopt}, /*stagger=*/true);
  const TimePoint start = clock_.Now();
  std::vector<TimePoint> first_runs(8, TimePoint::max());
  for (int i = 0; i < 8; ++i) {
    s.Every(milliseconds(100), [&, i] {
      if (first_runs[i] == TimePoint::max()) {
        first_runs[i] = clock_.Now();
      }
    });
  }
  for (int t = 0; t < 100; ++t) {
    clock_.Advance(milliseconds(1));
    s.Step();
  }
  std::vector<TimePoint> sorted = first_runs;
  std::sort(sorted.begin(), sorted.end());
  for (TimePoint t : first_runs) {
    EXPECT_GT(t, start);
    EXPECT_LE(t, start + milliseconds(100));
  }
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end()) << "first runs coincide";
}

TEST_F(SchedulerTest, WithoutStaggerFirstDeadlineIsOneInterval) {
  Scheduler s = Make();
  int runs = 0;
  s.Every(milliseconds(100), [&] { ++runs; });
  clock_.Advance(milliseconds(99));
  s.Step();
  EXPECT_EQ(runs, 0);
  clock_.Advance(milliseconds(1));
  s.Step();
  EXPECT_EQ(runs, 1);
}

TEST_F(SchedulerTest, FrameAwareBudgetIsTheSlackAfterExternalWork) {
  Scheduler s = Make(BudgetPolicy{kDefaultBudget, kDefaultTargetFrame});
  EXPECT_EQ(s.NextBudget(), std::chrono::microseconds(16500));
  s.ChargeExternal(milliseconds(5));
  EXPECT_EQ(s.NextBudget(), std::chrono::microseconds(11500));
  s.Step();
  EXPECT_EQ(s.stats().last_budget, std::chrono::microseconds(11500));
  EXPECT_EQ(s.NextBudget(), std::chrono::microseconds(16500));  // charges reset every step
}

TEST_F(SchedulerTest, FrameAwareBudgetNeverDropsBelowTheFloorAndALateFrameGetsIt) {
  Scheduler s = Make(BudgetPolicy{kDefaultBudget, kDefaultTargetFrame});
  s.ChargeExternal(milliseconds(16));
  EXPECT_EQ(s.NextBudget(), std::chrono::microseconds(1500));
  s.ChargeExternal(milliseconds(30));  // already late
  EXPECT_EQ(s.NextBudget(), std::chrono::microseconds(1500));
}

TEST_F(SchedulerTest, FrameAwareBudgetLetsAnIdleFrameDrainBacklog) {
  Scheduler s = Make(BudgetPolicy{kDefaultBudget, kDefaultTargetFrame});
  int runs = 0;
  for (int i = 0; i < 20; ++i) {
    s.Schedule([&] {
      ++runs;
      clock_.Advance(milliseconds(1));
    });
  }
  s.Step();
  EXPECT_EQ(runs, 17);  // 16.5 ms of slack: runs until 17 ms
}

TEST_F(SchedulerTest, NextWakeIsEmptyWhenIdle) {
  Scheduler s = Make();
  EXPECT_FALSE(s.NextWake().has_value());
  TaskHandle h = s.After(milliseconds(50), [] {});
  ASSERT_TRUE(s.NextWake().has_value());
  EXPECT_EQ(*s.NextWake(), clock_.Now() + milliseconds(50));
  h.Cancel();
  EXPECT_FALSE(s.NextWake().has_value());
}

TEST_F(SchedulerTest, StepsArePacedOneTickApart) {
  Scheduler s = Make();
  s.Schedule([] {});
  EXPECT_LE(*s.NextWake(), clock_.Now());  // never stepped: now
  s.Step();
  s.Schedule([] {});
  EXPECT_EQ(*s.NextWake(), clock_.Now() + kDefaultTickPeriod);
  s.After(milliseconds(1), [] {});
  EXPECT_EQ(*s.NextWake(), clock_.Now() + kDefaultTickPeriod);
}

TEST_F(SchedulerTest, WakeListenerHearsOnlyTransitionsOutsideSteps) {
  Scheduler s = Make();
  int wakes = 0;
  s.SetWakeListener([&] { ++wakes; });
  s.Schedule([] {});
  s.Schedule([] {});  // already has work: no second wake
  EXPECT_EQ(wakes, 1);
  s.Step();
  s.After(milliseconds(100), [] {});
  EXPECT_EQ(wakes, 2);
  s.After(milliseconds(200), [] {});  // later than the armed deadline: no wake
  EXPECT_EQ(wakes, 2);
  s.After(milliseconds(10), [] {});  // earlier: wake
  EXPECT_EQ(wakes, 3);
  s.Schedule([&] { s.Schedule([] {}); });
  const int before_step = wakes;
  s.Step();  // scheduling inside a step never calls the listener
  EXPECT_EQ(wakes, before_step);
}

TEST_F(SchedulerTest, EntryQueuedTwiceRunsOnce) {
  Scheduler s = Make();
  int runs = 0;
  const std::uint64_t entry =
      s.CreateEntry([&] { ++runs; }, Priority::kNormal, TaskOrigin::Named("Process Walker"));
  EXPECT_TRUE(s.QueueEntry(entry));
  EXPECT_FALSE(s.QueueEntry(entry));
  s.Step();
  EXPECT_EQ(runs, 1);
  s.Step();
  EXPECT_EQ(runs, 1);  // idle until queued again
  EXPECT_TRUE(s.QueueEntry(entry));
  s.Step();
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(s.ReleaseEntry(entry));
  EXPECT_FALSE(s.QueueEntry(entry));
}

TEST_F(SchedulerTest, EntryQueuedFromItsOwnRunRunsNextStepOnce) {
  Scheduler s = Make();
  int runs = 0;
  std::uint64_t entry = 0;
  entry = s.CreateEntry(
      [&] {
        ++runs;
        EXPECT_TRUE(s.QueueEntry(entry));
        EXPECT_FALSE(s.QueueEntry(entry));
      },
      Priority::kNormal, TaskOrigin::Named("Process Loop"));
  s.QueueEntry(entry);
  s.Step();
  EXPECT_EQ(runs, 1);
  s.Step();
  EXPECT_EQ(runs, 2);
  s.ReleaseEntry(entry);
  s.Step();
  EXPECT_EQ(runs, 2);
}

TEST_F(SchedulerTest, ReleasingAQueuedEntryDropsItsRun) {
  Scheduler s = Make();
  int runs = 0;
  const std::uint64_t entry = s.CreateEntry([&] { ++runs; }, Priority::kNormal, TaskOrigin());
  s.QueueEntry(entry);
  s.ReleaseEntry(entry);
  s.Step();
  EXPECT_EQ(runs, 0);
}

TEST_F(SchedulerTest, DestroyingTheSchedulerReleasesPendingCallables) {
  auto token = std::make_shared<int>(0);
  {
    Scheduler s = Make();
    s.Schedule([token] {});
    s.After(milliseconds(10), [token] {});
    s.Every(milliseconds(10), [token] {});
    EXPECT_EQ(token.use_count(), 4);
  }
  EXPECT_EQ(token.use_count(), 1);
}

TEST_F(SchedulerTest, FinishedTasksReleaseTheirCaptures) {
  auto token = std::make_shared<int>(0);
  Scheduler s = Make();
  s.Schedule([token] {});
  TaskHandle h = s.After(milliseconds(10), [token] {});
  EXPECT_EQ(token.use_count(), 3);
  s.Step();
  EXPECT_EQ(token.use_count(), 2);
  h.Cancel();
  EXPECT_EQ(token.use_count(), 1);
}

}  // namespace
}  // namespace molt::kernel
