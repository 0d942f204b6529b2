// SPDX-License-Identifier: Apache-2.0
// HandshakeSlots (kernel/src/net/handshake_slots.h) alone: the per-address handshake rate, the
// half-open connections oldest first, each address's share.
#include "kernel/src/net/handshake_slots.h"

#include <gtest/gtest.h>

#include <chrono>

#include "net_parts_fixture.h"

namespace molt::kernel::net {
namespace {

const TimePoint kT0 = TimePoint(std::chrono::hours(1));

TEST(HandshakeSlotsTest, AnAddressMayStartTwiceItsRateAtOnceThenIsToldWhenTheNextComes) {
  HandshakeSlots slots(2);  // 2 a second, 4 at once
  double retry = -1;
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(slots.TakeRate("10.0.0.1", kT0, &retry)) << i;
  }
  EXPECT_FALSE(slots.TakeRate("10.0.0.1", kT0, &retry));
  EXPECT_NEAR(retry, 0.5, 1e-9);
  EXPECT_TRUE(slots.TakeRate("10.0.0.2", kT0, &retry));  // each address has its own
  EXPECT_TRUE(slots.TakeRate("10.0.0.1", kT0 + std::chrono::milliseconds(500), &retry));
}

TEST(HandshakeSlotsTest, TheOldestOfAnAddressIsNamedOnceItHoldsItsShare) {
  HandshakeSlots slots(100);
  MemoryPeer a1("10.0.0.1"), b1("10.0.0.2"), a2("10.0.0.1");
  slots.Enter(a1);
  slots.Enter(b1);
  EXPECT_EQ(slots.OldestOf("10.0.0.1", 2), nullptr);
  slots.Enter(a2);
  EXPECT_EQ(slots.OldestOf("10.0.0.1", 2), &a1);
  EXPECT_EQ(slots.OldestOf("10.0.0.2", 2), nullptr);
  EXPECT_EQ(slots.OldestOf("10.0.0.3", 1), nullptr);
  EXPECT_EQ(slots.size(), 3u);
}

TEST(HandshakeSlotsTest, WhenFullTheConnectionThatWaitedLongestIsNamed) {
  HandshakeSlots slots(100);
  MemoryPeer a("10.0.0.1"), b("10.0.0.2"), c("10.0.0.3");
  slots.Enter(a);
  slots.Enter(b);
  EXPECT_EQ(slots.OldestWhenFull(3), nullptr);
  slots.Enter(c);
  EXPECT_EQ(slots.OldestWhenFull(3), &a);
  slots.Leave(a);
  EXPECT_EQ(slots.OldestWhenFull(2), &b);
}

TEST(HandshakeSlotsTest, LeavingTwiceGivesBackOneSlotAndFreesTheAddressShare) {
  HandshakeSlots slots(100);
  MemoryPeer a1("10.0.0.1"), a2("10.0.0.1");
  slots.Enter(a1);
  slots.Enter(a2);
  slots.Leave(a1);
  slots.Leave(a1);
  EXPECT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots.OldestOf("10.0.0.1", 1), &a2);
  slots.Leave(a2);
  EXPECT_EQ(slots.size(), 0u);
  EXPECT_EQ(slots.OldestOf("10.0.0.1", 1), nullptr);
}

}  // namespace
}  // namespace molt::kernel::net
