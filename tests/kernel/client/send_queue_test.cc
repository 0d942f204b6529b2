// SPDX-License-Identifier: Apache-2.0
// SendQueue: the client's outbound frames, released in order no faster than the server accepts
// them (its transport budget and each channel's rate), on a manual clock.
#include "kernel/src/client/send_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

namespace molt::kernel::client {
namespace {

using std::chrono::milliseconds;

// A frame of `size` bytes whose first byte says which it is.
std::vector<std::uint8_t> FrameOf(std::uint8_t tag, std::size_t size = 8) {
  std::vector<std::uint8_t> f(size, 0);
  f[0] = tag;
  return f;
}

// The tags of the frames in `bytes` (every frame `size` bytes long).
std::vector<int> Tags(const std::vector<std::uint8_t>& bytes, std::size_t size = 8) {
  std::vector<int> tags;
  for (std::size_t at = 0; at < bytes.size(); at += size) {
    tags.push_back(bytes[at]);
  }
  return tags;
}

class SendQueueTest : public ::testing::Test {
 protected:
  // A budget of `messages` per second with a burst of `burst`, bytes plentiful.
  void Messages(double per_second, double burst) {
    q_.SetBudget({1e9, 1e9, per_second, burst}, now_);
  }
  std::vector<std::uint8_t> Release() {
    std::vector<std::uint8_t> out;
    q_.Release(now_, &out);
    return out;
  }

  TimePoint now_ = TimePoint() + std::chrono::hours(1);
  SendQueue q_;
};

TEST(SendQueueBudgetTest, KeepsBelowTheServersRatesAndWithinAQuarterOfItsBurst) {
  SendQueue::ServerLimits server;  // the defaults: 8192 B and 64 messages per tick, 60 Hz
  server.burst_ticks = 4;
  SendQueue::Budget b = SendQueue::ForServer(server);
  EXPECT_DOUBLE_EQ(b.messages_per_second, 0.95 * 64 * 60);
  EXPECT_DOUBLE_EQ(b.bytes_per_second, 0.95 * 8192 * 60);
  EXPECT_DOUBLE_EQ(b.messages_burst, 64);  // a quarter of 4 ticks
  EXPECT_DOUBLE_EQ(b.bytes_burst, 8192);
  // A server that does not announce its burst is taken at one tick; the byte burst still holds
  // the largest frame the server accepts, or such a frame could never leave.
  server.burst_ticks = 1;
  server.max_frame_bytes = 16384;
  b = SendQueue::ForServer(server);
  EXPECT_DOUBLE_EQ(b.messages_burst, 16);
  EXPECT_DOUBLE_EQ(b.bytes_burst, 16384);
  server.tick_rate = 0.5;  // the server refills at least once a second
  EXPECT_DOUBLE_EQ(SendQueue::ForServer(server).messages_per_second, 0.95 * 64);
}

TEST_F(SendQueueTest, ReleasesTheBurstAtOnceThenAtTheRateInOrder) {
  Messages(100, 3);  // one message every 10 ms after a burst of 3
  for (std::uint8_t i = 1; i <= 6; ++i) {
    q_.Push(FrameOf(i), std::uint16_t{1});
  }
  EXPECT_EQ(Tags(Release()), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(q_.frames(), 3u);
  EXPECT_EQ(q_.bytes(), 24u);
  EXPECT_TRUE(Release().empty());
  EXPECT_EQ(q_.NextRelease(now_), now_ + milliseconds(10));
  now_ += milliseconds(10);
  EXPECT_EQ(Tags(Release()), std::vector<int>{4});
  now_ += milliseconds(25);
  EXPECT_EQ(Tags(Release()), (std::vector<int>{5, 6}));
  EXPECT_TRUE(q_.empty());
  EXPECT_EQ(q_.NextRelease(now_), std::nullopt);
}

TEST_F(SendQueueTest, BytesAreBudgetedToo) {
  q_.SetBudget({1000, 100, 1e9, 1e9}, now_);  // 1000 B/s, 100 B at once
  q_.Push(FrameOf(1, 60), std::uint16_t{1});
  q_.Push(FrameOf(2, 60), std::uint16_t{1});
  EXPECT_EQ(Release().size(), 60u);
  EXPECT_EQ(q_.NextRelease(now_), now_ + milliseconds(20));  // 20 more bytes at 1000 B/s
  now_ += milliseconds(20);
  EXPECT_EQ(Release().size(), 60u);
}

// A frame that goes by the datagram link draws on the same budgets (the server charges both
// links' frames to one): taken while they allow it, refused (nothing taken) when it would wait,
// and what it took delays the queue's own frames.
TEST_F(SendQueueTest, AFrameSentAnotherWayTakesFromTheSameBudgetsOrIsRefused) {
  Messages(100, 2);
  q_.SetChannelRate(7, 10, 1, now_);  // channel 7: 10 a second, one at once
  EXPECT_TRUE(q_.TakeNow(8, 7, now_));
  EXPECT_FALSE(q_.TakeNow(8, 7, now_));  // channel 7's burst is spent
  EXPECT_TRUE(q_.TakeNow(8, 1, now_));   // the transport's second
  EXPECT_FALSE(q_.TakeNow(8, 1, now_));  // and the transport's burst is spent
  q_.Push(FrameOf(1), std::uint16_t{1});
  EXPECT_TRUE(Release().empty());  // the datagrams took its turn
  now_ += milliseconds(10);
  EXPECT_EQ(Tags(Release()), std::vector<int>{1});
  now_ += milliseconds(100);
  EXPECT_TRUE(q_.TakeNow(8, 7, now_));  // channel 7 refilled
}

TEST_F(SendQueueTest, ControlFramesGoAheadOfTheAppsAndKeepTheirOwnOrder) {
  Messages(100, 2);
  q_.Push(FrameOf(1), std::uint16_t{1});
  q_.Push(FrameOf(2), std::uint16_t{1});
  q_.Push(FrameOf(3), std::uint16_t{1});
  q_.Push(FrameOf(10), std::nullopt);                      // a pong
  q_.Push(FrameOf(11), std::nullopt);                      // a ping
  EXPECT_EQ(Tags(Release()), (std::vector<int>{10, 11}));  // the whole burst
  now_ += milliseconds(20);
  EXPECT_EQ(Tags(Release()), (std::vector<int>{1, 2}));
  now_ += milliseconds(10);
  EXPECT_EQ(Tags(Release()), std::vector<int>{3});
}

// A channel's frames leave at the transport budget's shares of its rate and burst (95%, a quarter
// of the burst, at least one): what the server's bucket refills, with the margin jitter takes.
TEST_F(SendQueueTest, AChannelsFramesLeaveAtAShareOfItsRateAndBurst) {
  Messages(1e6, 1e6);                       // the transport allows anything
  q_.SetChannelRate(7, 10, 8, now_);        // channel 7: 10 per second, burst 8: paced 9.5, 2
  q_.SetChannelRate(8, INFINITY, 0, now_);  // channel 8: unlimited, not paced
  q_.Push(FrameOf(1), std::uint16_t{7});
  q_.Push(FrameOf(2), std::uint16_t{7});
  q_.Push(FrameOf(3), std::uint16_t{7});
  q_.Push(FrameOf(4), std::uint16_t{8});  // behind channel 7's third: order is kept
  EXPECT_EQ(Tags(Release()), (std::vector<int>{1, 2}));
  const std::optional<TimePoint> next = q_.NextRelease(now_);
  ASSERT_TRUE(next.has_value());
  EXPECT_GT(*next, now_ + milliseconds(100));  // 1 / 9.5 s, not 1 / 10
  EXPECT_LE(*next, now_ + milliseconds(107));
  now_ += milliseconds(100);
  EXPECT_TRUE(Release().empty());
  now_ += milliseconds(7);
  EXPECT_EQ(Tags(Release()), (std::vector<int>{3, 4}));
  q_.SetChannelRate(9, 0.5, 1, now_);  // a quarter of a burst of 1 is still 1
  q_.Push(FrameOf(5), std::uint16_t{9});
  EXPECT_EQ(Tags(Release()), std::vector<int>{5});
  q_.ClearChannelRates();
  for (std::uint8_t i = 0; i < 5; ++i) {
    q_.Push(FrameOf(i), std::uint16_t{7});
  }
  EXPECT_EQ(Release().size(), 40u);  // no longer paced
}

TEST_F(SendQueueTest, ANewSessionDropsTheAppsFramesOnly) {
  Messages(100, 0);  // nothing may go yet
  q_.Push(FrameOf(1), std::uint16_t{1});
  q_.Push(FrameOf(2, 16), std::nullopt);
  q_.Push(FrameOf(3), std::uint16_t{2});
  q_.DropApp();
  EXPECT_EQ(q_.frames(), 1u);
  EXPECT_EQ(q_.bytes(), 16u);
  q_.Clear();
  EXPECT_TRUE(q_.empty());
  EXPECT_EQ(q_.bytes(), 0u);
}

TEST_F(SendQueueTest, WakesComeInBatchesAndBeforeABudgetEverythingGoes) {
  SendQueue fresh;  // no Welcome yet: nothing is paced
  for (std::uint8_t i = 0; i < 100; ++i) {
    fresh.Push(FrameOf(i), std::uint16_t{1});
  }
  std::vector<std::uint8_t> out;
  EXPECT_EQ(fresh.Release(now_, &out), 100u);
  Messages(1e5, 1);  // one message every 10 us: woken every millisecond, not every 10 us
  q_.Push(FrameOf(1), std::uint16_t{1});
  q_.Push(FrameOf(2), std::uint16_t{1});
  EXPECT_EQ(Release().size(), 8u);
  EXPECT_EQ(q_.NextRelease(now_), now_ + SendQueue::kBatch);
  q_.SetBudget({1e9, 1e9, 0, 1}, now_);  // a rate of zero: parked an hour at most, not forever
  Release();
  q_.Push(FrameOf(3), std::uint16_t{1});
  Release();
  EXPECT_EQ(q_.NextRelease(now_), now_ + std::chrono::hours(1));
}

}  // namespace
}  // namespace molt::kernel::client
