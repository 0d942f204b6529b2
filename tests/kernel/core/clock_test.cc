// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/core/clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace molt::kernel {
namespace {

TEST(ClockTest, ManualClockMovesOnlyWhenTold) {
  ManualClock clock;
  const TimePoint t0 = clock.Now();
  EXPECT_EQ(clock.Now(), t0);
  clock.Advance(std::chrono::milliseconds(5));
  EXPECT_EQ(clock.Now() - t0, std::chrono::milliseconds(5));
  EXPECT_EQ(clock.Ticks(), static_cast<std::uint64_t>(clock.Now().time_since_epoch().count()));
  EXPECT_EQ(clock.TicksPerSecond(), 1e9);
}

TEST(ClockTest, RealTicksAreMonotonicAndMatchTheCalibratedRate) {
  const std::uint64_t t0 = RealTicks();
  const TimePoint n0 = RealNow();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::uint64_t t1 = RealTicks();
  const TimePoint n1 = RealNow();
  ASSERT_GT(t1, t0);
  const double tick_seconds = static_cast<double>(t1 - t0) / RealTicksPerSecond();
  const double wall_seconds = std::chrono::duration<double>(n1 - n0).count();
  // A loose bound: this checks the calibration's order of magnitude, not the machine's speed.
  EXPECT_NEAR(tick_seconds / wall_seconds, 1.0, 0.1);
}

TEST(ClockTest, SecondsConvertBothWays) {
  EXPECT_EQ(Seconds(0.0165), std::chrono::microseconds(16500));
  EXPECT_DOUBLE_EQ(ToSeconds(std::chrono::milliseconds(1500)), 1.5);
}

}  // namespace
}  // namespace molt::kernel
