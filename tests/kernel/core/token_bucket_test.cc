// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/core/token_bucket.h"

#include <gtest/gtest.h>

#include <limits>

namespace molt::kernel {
namespace {

using std::chrono::milliseconds;

TEST(TokenBucketTest, StartsFullAndRefusesOnceTheBurstIsSpent) {
  ManualClock clock;
  TokenBucket bucket(/*rate=*/30, /*burst=*/5, clock.Now());
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(bucket.Take(clock.Now())) << i;
  }
  EXPECT_FALSE(bucket.Take(clock.Now()));
}

TEST(TokenBucketTest, RefillsAtTheRate) {
  ManualClock clock;
  TokenBucket bucket(10, 1, clock.Now());
  EXPECT_TRUE(bucket.Take(clock.Now()));
  clock.Advance(milliseconds(99));
  EXPECT_FALSE(bucket.Take(clock.Now()));
  clock.Advance(milliseconds(1));
  EXPECT_TRUE(bucket.Take(clock.Now()));
}

TEST(TokenBucketTest, NeverHoldsMoreThanTheBurst) {
  ManualClock clock;
  TokenBucket bucket(100, 3, clock.Now());
  clock.Advance(std::chrono::hours(1));
  EXPECT_DOUBLE_EQ(bucket.Available(clock.Now()), 3.0);
}

TEST(TokenBucketTest, TakesSeveralTokensAtOnce) {
  ManualClock clock;
  TokenBucket bucket(1, 10, clock.Now());
  EXPECT_TRUE(bucket.Take(clock.Now(), 7));
  EXPECT_FALSE(bucket.Take(clock.Now(), 4));  // refused: nothing taken
  EXPECT_TRUE(bucket.Take(clock.Now(), 3));
}

TEST(TokenBucketTest, InfiniteRateNeverLimits) {
  ManualClock clock;
  TokenBucket bucket(std::numeric_limits<double>::infinity(), 1, clock.Now());
  for (int i = 0; i < 1000; ++i) {
    clock.Advance(std::chrono::nanoseconds(1));
    EXPECT_TRUE(bucket.Take(clock.Now()));
  }
  // Also many takes at one instant (a batch of frames shares one clock reading).
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(bucket.Take(clock.Now()));
  }
  EXPECT_TRUE(bucket.unlimited());
}

TEST(TokenBucketTest, TimeGoingBackwardsRefillsNothing) {
  ManualClock clock;
  TokenBucket bucket(1000, 1, clock.Now());
  EXPECT_TRUE(bucket.Take(clock.Now()));
  clock.Advance(milliseconds(-500));
  EXPECT_FALSE(bucket.Take(clock.Now()));
}

TEST(TokenBucketTest, ReportsTheWaitForTheNextToken) {
  ManualClock clock;
  TokenBucket bucket(4, 1, clock.Now());
  EXPECT_DOUBLE_EQ(bucket.SecondsUntil(clock.Now()), 0.0);
  bucket.Take(clock.Now());
  EXPECT_DOUBLE_EQ(bucket.SecondsUntil(clock.Now()), 0.25);
  EXPECT_DOUBLE_EQ(bucket.rate(), 4.0);
  EXPECT_DOUBLE_EQ(bucket.burst(), 1.0);
}

TEST(TokenBucketTest, BurstBelowOneIsRaisedToOne) {
  ManualClock clock;
  TokenBucket bucket(10, 0, clock.Now());
  EXPECT_TRUE(bucket.Take(clock.Now()));
  EXPECT_FALSE(bucket.Take(clock.Now()));
}

}  // namespace
}  // namespace molt::kernel
