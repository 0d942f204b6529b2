// SPDX-License-Identifier: Apache-2.0
// MemoryKv (kernel/src/fleet/memory_kv.h): the key-value backend of a server alone, called
// directly (no store thread) on times the test picks: expiry on every read, compare-and-set,
// increments, sorted sets by score, and what a sweep drops.
#include "kernel/src/fleet/memory_kv.h"

#include <gtest/gtest.h>

#include <string>

namespace molt::kernel::fleet {
namespace {

KvOp MemOp(KvKind kind, std::string key, std::string value = "", std::int64_t ttl_ms = 1000) {
  KvOp op;
  op.kind = kind;
  op.key = std::move(key);
  op.value = std::move(value);
  op.ttl_ms = ttl_ms;
  op.limit = 100;
  return op;
}

TEST(MemoryKvTest, AValueReadsUntilItsExpiryThenIsAbsent) {
  MemoryKv kv;
  ASSERT_TRUE(kv.Run(MemOp(KvKind::kSet, "a", "1"), 0).status.ok());
  EXPECT_EQ(kv.Run(MemOp(KvKind::kGet, "a"), 999).value, "1");
  const KvResult gone = kv.Run(MemOp(KvKind::kGet, "a"), 1000);
  EXPECT_EQ(gone.status.code(), Status::Code::kNotFound);
  EXPECT_EQ(gone.status.message(), "no value at \"a\"");
}

TEST(MemoryKvTest, CompareAndSetReplacesOnlyTheExpectedValueAndTellsTheOneThere) {
  MemoryKv kv;
  KvOp create = MemOp(KvKind::kCas, "k", "first");  // expected: absent
  ASSERT_TRUE(kv.Run(create, 0).status.ok());
  EXPECT_EQ(kv.Run(create, 0).status.code(), Status::Code::kRejected) << "present now";
  KvOp swap = MemOp(KvKind::kCas, "k", "second");
  swap.expected = "nope";
  const KvResult refused = kv.Run(swap, 0);
  EXPECT_EQ(refused.status.message(), "the value at \"k\" is not the one expected");
  EXPECT_EQ(refused.value, "first");
  swap.expected = "first";
  EXPECT_TRUE(kv.Run(swap, 0).status.ok());
  EXPECT_EQ(kv.Run(MemOp(KvKind::kGet, "k"), 0).value, "second");
  EXPECT_TRUE(kv.Run(create, 5000).status.ok()) << "an expired value reads as absent";
}

TEST(MemoryKvTest, IncrementsCountFromNothingAndRefuseTextAndOverflow) {
  MemoryKv kv;
  KvOp add = MemOp(KvKind::kIncrement, "n");
  add.number = 5;
  EXPECT_EQ(kv.Run(add, 0).number, 5);
  EXPECT_EQ(kv.Run(add, 0).value, "10");
  ASSERT_TRUE(kv.Run(MemOp(KvKind::kSet, "t", "ten"), 0).status.ok());
  add.key = "t";
  EXPECT_EQ(kv.Run(add, 0).status.message(),
            "the value at \"t\" is not a whole number: increment needs one (or no value)");
  ASSERT_TRUE(kv.Run(MemOp(KvKind::kSet, "big", "9223372036854775807"), 0).status.ok());
  add.key = "big";
  EXPECT_EQ(kv.Run(add, 0).status.message(),
            "incrementing \"big\" overflows a 64-bit whole number");
}

TEST(MemoryKvTest, SortedSetsAreRangedByScoreEitherWayUpToTheLimit) {
  MemoryKv kv;
  for (auto [member, score] : {std::pair{"b", 2.0}, {"a", 2.0}, {"c", 1.0}, {"d", 9.0}}) {
    KvOp add = MemOp(KvKind::kZAdd, "board", member);
    add.number = score;
    ASSERT_TRUE(kv.Run(add, 0).status.ok());
  }
  KvOp range = MemOp(KvKind::kZRange, "board");
  range.number = 0;
  range.number2 = 5;
  KvResult up = kv.Run(range, 0);
  ASSERT_EQ(up.entries.size(), 3u);
  EXPECT_EQ(up.entries[0].member, "c");
  EXPECT_EQ(up.entries[1].member, "a") << "equal scores by member";
  EXPECT_EQ(up.entries[2].member, "b");
  range.descending = true;
  range.limit = 2;
  KvResult down = kv.Run(range, 0);
  ASSERT_EQ(down.entries.size(), 2u);
  EXPECT_EQ(down.entries[0].member, "a");
  EXPECT_EQ(down.entries[1].member, "b");
  EXPECT_EQ(kv.Run(MemOp(KvKind::kZRemove, "board", "a"), 0).number, 1);
  EXPECT_EQ(kv.Run(MemOp(KvKind::kZRemove, "board", "a"), 0).number, 0);
  EXPECT_TRUE(kv.Run(range, 1000).entries.empty()) << "expired with the set";
}

TEST(MemoryKvTest, ASweepDropsWhatExpired) {
  MemoryKv kv;
  KvOp add = MemOp(KvKind::kZAdd, "board", "a");
  ASSERT_TRUE(kv.Run(add, 0).status.ok());
  // An expired set is still held until the sweep: a delete finds it there.
  EXPECT_EQ(kv.Run(MemOp(KvKind::kDelete, "board"), 2000).number, 1);
  ASSERT_TRUE(kv.Run(add, 0).status.ok());
  ASSERT_TRUE(kv.Sweep(2000).ok());
  EXPECT_EQ(kv.Run(MemOp(KvKind::kDelete, "board"), 2000).number, 0);
}

}  // namespace
}  // namespace molt::kernel::fleet
