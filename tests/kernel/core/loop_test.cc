// SPDX-License-Identifier: Apache-2.0
// Loop on the real clock and a real io_context. No timing assertions: only counts and order.
#include "kernel/src/core/loop.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "kernel/src/core/scheduler.h"

namespace molt::kernel {
namespace {

using std::chrono::milliseconds;

TEST(LoopTest, IdleLoopNeverWakes) {
  Scheduler scheduler;
  Loop loop(scheduler);
  loop.RunFor(milliseconds(200));
  EXPECT_EQ(loop.wakeups(), 0u);
  EXPECT_EQ(scheduler.stats().steps, 0u);
}

TEST(LoopTest, TimerWakesOnceForOneDeadline) {
  Scheduler scheduler;
  Loop loop(scheduler);
  int runs = 0;
  scheduler.After(milliseconds(20), [&] {
    ++runs;
    loop.Stop();
  });
  loop.RunFor(std::chrono::seconds(10));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(loop.wakeups(), 1u);
}

TEST(LoopTest, ScheduledWorkRunsAndTheLoopGoesIdleAfterwards) {
  Scheduler scheduler;
  Loop loop(scheduler);
  std::vector<int> order;
  loop.Post([&] {
    scheduler.Schedule([&] {
      order.push_back(1);
      scheduler.Schedule([&] { order.push_back(2); });
    });
  });
  loop.RunFor(milliseconds(300));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(loop.wakeups(), 2u);  // one step each, then nothing: idle costs no wakeups
}

TEST(LoopTest, EarlierDeadlineRearmsTheTimer) {
  Scheduler scheduler;
  Loop loop(scheduler);
  std::vector<int> order;
  scheduler.After(std::chrono::seconds(30), [&] { order.push_back(30); });
  scheduler.After(milliseconds(10), [&] {
    order.push_back(1);
    loop.Stop();
  });
  loop.RunFor(std::chrono::seconds(10));
  EXPECT_EQ(order, std::vector<int>{1});
}

TEST(LoopTest, PostFromAnotherThreadRunsOnTheLoop) {
  Scheduler scheduler;
  Loop loop(scheduler);
  std::thread::id ran_on;
  std::thread poster([&] {
    loop.Post([&] {
      ran_on = std::this_thread::get_id();
      loop.Stop();
    });
  });
  loop.RunFor(std::chrono::seconds(10));
  poster.join();
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(loop.stopped());
}

TEST(LoopTest, RecurringTaskKeepsRunningUntilCancelled) {
  Scheduler scheduler;
  Loop loop(scheduler);
  int runs = 0;
  TaskHandle h;
  h = scheduler.Every(milliseconds(5), [&] {
    if (++runs == 3) {
      h.Cancel();
      scheduler.After(milliseconds(50), [&] { loop.Stop(); });
    }
  });
  loop.RunFor(std::chrono::seconds(10));
  EXPECT_EQ(runs, 3);
}

}  // namespace
}  // namespace molt::kernel
