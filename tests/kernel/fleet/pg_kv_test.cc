// SPDX-License-Identifier: Apache-2.0
// PgKv (kernel/src/fleet/pg_kv.h): the key-value backend on the fleet's PostgreSQL (a real one the
// test starts), called directly (no store thread) on times the test picks: the tables created
// once for two servers, values, locked increments, sorted sets by score, and what a sweep
// deletes.
#include "kernel/src/fleet/pg_kv.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/postgres.h"

namespace molt::kernel::fleet {
namespace {

molt::test::PostgresServer& PgKvServer() {
  static molt::test::PostgresServer server;
  return server;
}

KvOp PgOp(KvKind kind, std::string key, std::string value = "", std::int64_t ttl_ms = 1000) {
  KvOp op;
  op.kind = kind;
  op.key = std::move(key);
  op.value = std::move(value);
  op.ttl_ms = ttl_ms;
  op.limit = 100;
  return op;
}

class PgKvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(PgKvServer().ok()) << PgKvServer().error();
    url_ = PgKvServer().NewDatabase();
    a_ = std::make_unique<PgKv>(url_);
    ASSERT_TRUE(a_->Open().ok());
  }
  // Rows in `table`, read on a connection of the test's own.
  std::int64_t Rows(const std::string& table) {
    store::PgConnection db(url_, "the test's view");
    EXPECT_TRUE(db.Connect(false).ok());
    Result<store::PgRows> r = db.Query("SELECT count(*) FROM " + table, "counting");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->Int(0, 0) : -1;
  }
  std::string url_;
  std::unique_ptr<PgKv> a_;
};

TEST_F(PgKvTest, TwoServersShareTheKeysAndCompareAndSetTellsTheValueThere) {
  PgKv b(url_);
  ASSERT_TRUE(b.Open().ok()) << "the tables exist: the second opens them";
  ASSERT_TRUE(a_->Run(PgOp(KvKind::kSet, "k", std::string("bin\0ary", 7)), 0).status.ok());
  EXPECT_EQ(b.Run(PgOp(KvKind::kGet, "k"), 999).value, std::string("bin\0ary", 7));
  KvOp swap = PgOp(KvKind::kCas, "k", "next");
  swap.expected = "nope";
  const KvResult refused = b.Run(swap, 0);
  EXPECT_EQ(refused.status.message(), "the value at \"k\" is not the one expected");
  EXPECT_EQ(refused.value, std::string("bin\0ary", 7));
  EXPECT_EQ(a_->Run(PgOp(KvKind::kGet, "k"), 1000).status.code(), Status::Code::kNotFound);
}

TEST_F(PgKvTest, IncrementsCountFromNothingAndRefuseText) {
  KvOp add = PgOp(KvKind::kIncrement, "n");
  add.number = 5;
  EXPECT_EQ(a_->Run(add, 0).number, 5);
  EXPECT_EQ(a_->Run(add, 0).value, "10");
  ASSERT_TRUE(a_->Run(PgOp(KvKind::kSet, "t", "ten"), 0).status.ok());
  add.key = "t";
  EXPECT_EQ(a_->Run(add, 0).status.message(),
            "the value at \"t\" is not a whole number: increment needs one (or no value)");
  EXPECT_EQ(a_->Run(PgOp(KvKind::kGet, "t"), 0).value, "ten") << "rolled back";
}

TEST_F(PgKvTest, SortedSetsAreRangedByScoreEitherWay) {
  for (auto [member, score] : {std::pair{"b", 2.0}, {"a", 2.0}, {"c", 1.0}}) {
    KvOp add = PgOp(KvKind::kZAdd, "board", member);
    add.number = score;
    ASSERT_TRUE(a_->Run(add, 0).status.ok());
  }
  KvOp range = PgOp(KvKind::kZRange, "board");
  range.number = 0;
  range.number2 = 5;
  range.descending = true;
  KvResult down = a_->Run(range, 0);
  ASSERT_TRUE(down.status.ok()) << down.status.ToString();
  ASSERT_EQ(down.entries.size(), 3u);
  EXPECT_EQ(down.entries[0].member, "a");
  EXPECT_DOUBLE_EQ(down.entries[0].score, 2.0);
  EXPECT_EQ(down.entries[2].member, "c");
  EXPECT_EQ(a_->Run(PgOp(KvKind::kZRemove, "board", "c"), 0).number, 1);
}

TEST_F(PgKvTest, ASweepDeletesTheExpiredRows) {
  ASSERT_TRUE(a_->Run(PgOp(KvKind::kSet, "short", "1", 10), 0).status.ok());
  ASSERT_TRUE(a_->Run(PgOp(KvKind::kSet, "long", "1", 5000), 0).status.ok());
  KvOp add = PgOp(KvKind::kZAdd, "board", "a", 10);
  ASSERT_TRUE(a_->Run(add, 0).status.ok());
  ASSERT_EQ(Rows("molt_kv"), 2);
  ASSERT_TRUE(a_->Sweep(100).ok());
  EXPECT_EQ(Rows("molt_kv"), 1);
  EXPECT_EQ(Rows("molt_kv_sorted"), 0);
}

// A connection a restart broke (pg_ctl -m fast, or -m immediate, which tells no client) fails
// the call in hand with an I/O error the caller tries again, and the next call makes it again.
TEST_F(PgKvTest, ARestartedDatabaseFailsOneCallAsAnIoErrorAndTheNextWorks) {
  for (const auto how : {molt::test::PostgresServer::Stopping::kFast,
                         molt::test::PostgresServer::Stopping::kImmediate}) {
    ASSERT_TRUE(a_->Run(PgOp(KvKind::kSet, "k", "v"), 0).status.ok());
    PgKvServer().Restart(how);
    KvResult first = a_->Run(PgOp(KvKind::kGet, "k"), 0);
    if (!first.status.ok()) {
      EXPECT_EQ(first.status.code(), Status::Code::kIoError) << first.status.ToString();
      first = a_->Run(PgOp(KvKind::kGet, "k"), 0);
    }
    ASSERT_TRUE(first.status.ok()) << first.status.ToString();
    EXPECT_EQ(first.value, "v");
  }
}

}  // namespace
}  // namespace molt::kernel::fleet
