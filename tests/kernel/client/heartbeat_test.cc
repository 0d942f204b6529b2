// SPDX-License-Identifier: Apache-2.0
// Heartbeat (kernel/src/client/heartbeat.h) on times the test picks: a ping every period,
// numbered; the round trip from the echo of the latest ping only, averaged; the silence that
// ends a link.
#include "kernel/src/client/heartbeat.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

namespace molt::kernel::client {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TimePoint kBeatStart = TimePoint() + std::chrono::hours(1);

TEST(HeartbeatTest, APingIsDueEveryPeriodNumberedInTurn) {
  Heartbeat beat;
  beat.Start(milliseconds(500), kBeatStart);
  EXPECT_FALSE(beat.Due(kBeatStart + milliseconds(499)).has_value());
  std::optional<Heartbeat::Ping> first = beat.Due(kBeatStart + milliseconds(500));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->seq, 1u);
  EXPECT_EQ(first->time_ns, static_cast<std::uint64_t>(
                                (kBeatStart + milliseconds(500)).time_since_epoch().count()));
  EXPECT_EQ(beat.next_ping(), kBeatStart + milliseconds(1000));
  EXPECT_FALSE(beat.Due(kBeatStart + milliseconds(600)).has_value());
  EXPECT_EQ(beat.Due(kBeatStart + milliseconds(1200))->seq, 2u);
}

TEST(HeartbeatTest, TheRoundTripComesFromTheLatestPingsEchoAveraged) {
  Heartbeat beat;
  beat.Start(seconds(1), kBeatStart);
  const Heartbeat::Ping one = *beat.Due(kBeatStart + seconds(1));
  beat.OnPong(one.seq, one.time_ns, kBeatStart + seconds(1) + milliseconds(80));
  EXPECT_NEAR(beat.rtt(), 0.080, 1e-9);
  const Heartbeat::Ping two = *beat.Due(kBeatStart + seconds(2));
  beat.OnPong(one.seq, one.time_ns, kBeatStart + seconds(2) + milliseconds(5));  // a stale echo
  EXPECT_NEAR(beat.rtt(), 0.080, 1e-9);
  beat.OnPong(two.seq, 0, kBeatStart + seconds(2) + milliseconds(5));  // no time: no sample
  beat.OnPong(two.seq, two.time_ns, kBeatStart + seconds(2) + milliseconds(160));
  EXPECT_NEAR(beat.rtt(), (0.080 * 7 + 0.160) / 8, 1e-9);
}

TEST(HeartbeatTest, SilenceOfThreePeriodsAndTwoSecondsIsALostLink) {
  Heartbeat beat;
  beat.Start(seconds(1), kBeatStart);
  beat.Received(kBeatStart);
  EXPECT_EQ(beat.silence(), seconds(5));
  EXPECT_EQ(beat.silent_at(), kBeatStart + seconds(5));
  EXPECT_FALSE(beat.Silent(kBeatStart + seconds(5)));
  EXPECT_TRUE(beat.Silent(kBeatStart + seconds(5) + milliseconds(1)));
  beat.Received(kBeatStart + seconds(4));
  EXPECT_FALSE(beat.Silent(kBeatStart + seconds(6)));
}

}  // namespace
}  // namespace molt::kernel::client
