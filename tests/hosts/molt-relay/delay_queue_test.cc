// SPDX-License-Identifier: Apache-2.0
// DelayQueue (hosts/molt-relay/delay_queue.h): copies leave in due order, those due together in
// the order they were queued, none before it is due; what is held is counted per direction.
#include "hosts/molt-relay/delay_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

namespace molt::relay {
namespace {

using std::chrono::milliseconds;

Datagram QueuedDatagram(const std::string& text, Direction direction = Direction::kToServer) {
  return Datagram{direction, SocketAddress(), std::vector<std::uint8_t>(text.begin(), text.end())};
}

std::string TextOf(const std::optional<Datagram>& d) {
  return d ? std::string(d->bytes.begin(), d->bytes.end()) : "(none)";
}

TEST(DelayQueueTest, SendsInDueOrder) {
  DelayQueue queue;
  const DelayQueue::Clock::time_point t0{};
  queue.Push(t0 + milliseconds(30), QueuedDatagram("c"));
  queue.Push(t0 + milliseconds(10), QueuedDatagram("a"));
  queue.Push(t0 + milliseconds(20), QueuedDatagram("b"));
  EXPECT_EQ(queue.NextDue(), t0 + milliseconds(10));
  const auto later = t0 + milliseconds(100);
  EXPECT_EQ(TextOf(queue.PopDue(later)), "a");
  EXPECT_EQ(TextOf(queue.PopDue(later)), "b");
  EXPECT_EQ(TextOf(queue.PopDue(later)), "c");
  EXPECT_EQ(TextOf(queue.PopDue(later)), "(none)");
  EXPECT_FALSE(queue.NextDue().has_value());
}

TEST(DelayQueueTest, CopiesDueTogetherLeaveInTheOrderQueued) {
  DelayQueue queue;
  const DelayQueue::Clock::time_point t0{};
  const std::string order = "the quick brown fox jumps over the lazy dog";
  for (char c : order) {
    queue.Push(t0, QueuedDatagram(std::string(1, c)));
  }
  std::string out;
  while (std::optional<Datagram> d = queue.PopDue(t0)) {
    out += TextOf(d);
  }
  EXPECT_EQ(out, order);
}

TEST(DelayQueueTest, NothingLeavesBeforeItIsDue) {
  DelayQueue queue;
  const DelayQueue::Clock::time_point t0{};
  queue.Push(t0 + milliseconds(10), QueuedDatagram("a"));
  EXPECT_FALSE(queue.PopDue(t0 + milliseconds(9)).has_value());
  EXPECT_EQ(queue.size(), 1u);
  EXPECT_EQ(TextOf(queue.PopDue(t0 + milliseconds(10))), "a");
}

TEST(DelayQueueTest, CountsWhatIsHeldEachWay) {
  DelayQueue queue;
  const DelayQueue::Clock::time_point t0{};
  queue.Push(t0, QueuedDatagram("up", Direction::kToServer));
  queue.Push(t0 + milliseconds(5), QueuedDatagram("down", Direction::kToClient));
  queue.Push(t0 + milliseconds(5), QueuedDatagram("down", Direction::kToClient));
  EXPECT_EQ(queue.size(), 3u);
  EXPECT_EQ(queue.size(Direction::kToServer), 1u);
  EXPECT_EQ(queue.size(Direction::kToClient), 2u);
  queue.PopDue(t0);
  EXPECT_EQ(queue.size(Direction::kToServer), 0u);
  EXPECT_EQ(queue.size(Direction::kToClient), 2u);
}

}  // namespace
}  // namespace molt::relay
