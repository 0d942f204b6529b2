// SPDX-License-Identifier: Apache-2.0
// PgLiveStore (kernel/src/live/pg_live_store.h): the live values' store on a fleet's PostgreSQL
// (a real one the test starts) keeps the SQLite store's promises: overrides, history, seqs in
// order across two servers, expiry with no server online, and a newer layout refused.
#include "kernel/src/live/pg_live_store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/postgres.h"

namespace molt::kernel::live {
namespace {

constexpr std::int64_t kPgDayMs = 24 * 3600 * 1000LL;

class PgLiveStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pg_ = new molt::test::PostgresServer(); }
  static void TearDownTestSuite() {
    delete pg_;
    pg_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(pg_->ok()) << pg_->error();
    url_ = pg_->NewDatabase();
  }
  static molt::test::PostgresServer* pg_;
  std::string url_;
};
molt::test::PostgresServer* PgLiveStoreTest::pg_ = nullptr;

TEST_F(PgLiveStoreTest, TheStoreKeepsOverridesAHistoryInOrderAndExpiresIdleOnes) {
  Result<std::unique_ptr<PgLiveStore>> a = PgLiveStore::Open(url_);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ((*a)->shared_url(), url_);
  Result<std::unique_ptr<PgLiveStore>> b = PgLiveStore::Open(url_);  // another server
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*a)->ExpireIfIdle(1000, kPgDayMs).value(), 0u);  // nothing yet; stamped
  LiveChange one = (*a)->Write("shop.price", "12", "ada", 2000).value();
  LiveChange two = (*b)->Write("shop.tax", "0.2", "bo", 3000).value();
  LiveChange three = (*a)->Write("shop.price", std::nullopt, "ada", 4000).value();
  EXPECT_EQ(one.seq + 1, two.seq);
  EXPECT_EQ(two.seq + 1, three.seq);
  EXPECT_EQ(three.action, "unset");
  std::vector<StoredValue> all = (*b)->Overrides().value();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].key, "shop.tax");
  EXPECT_EQ(all[0].by, "bo");
  std::vector<LiveChange> h = (*b)->History("shop.price", 10).value();
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].action, "unset");  // newest first
  EXPECT_FALSE(h[0].value.has_value());
  EXPECT_EQ(*h[1].value, "12");
  std::vector<LiveChange> since = (*b)->Since(one.seq, 10).value();
  ASSERT_EQ(since.size(), 2u);
  EXPECT_EQ(since[0].key, "shop.tax");  // oldest first
  // Within the ttl of the last stamp nothing expires; past it every override does, recorded.
  EXPECT_EQ((*a)->ExpireIfIdle(1000 + kPgDayMs, kPgDayMs).value(), 0u);
  EXPECT_EQ((*b)->ExpireIfIdle(1000 + 3 * kPgDayMs, kPgDayMs).value(), 1u);
  EXPECT_TRUE((*a)->Overrides().value().empty());
  EXPECT_EQ((*a)->History("", 1).value()[0].action, "expired");
}

TEST_F(PgLiveStoreTest, TablesOfANewerLayoutAreRefusedNamingTheFix) {
  ASSERT_TRUE(PgLiveStore::Open(url_).ok());
  const std::string db = url_.substr(url_.rfind('=') + 1);
  pg_->Psql("UPDATE molt_schema SET version = 7 WHERE name = 'live'", db);
  Result<std::unique_ptr<PgLiveStore>> s = PgLiveStore::Open(url_);
  ASSERT_EQ(s.status().code(), Status::Code::kFailedPrecondition) << s.status().ToString();
  EXPECT_NE(s.status().message().find("the live values' tables in host="), std::string::npos)
      << s.status().message();
}

}  // namespace
}  // namespace molt::kernel::live
