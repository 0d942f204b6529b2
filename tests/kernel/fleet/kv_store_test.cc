// SPDX-License-Identifier: Apache-2.0
// The key-value store (fleet/kv_store.h): one contract, run against the memory store of a server
// alone and the fleet's PostgreSQL (a real one the test starts): values with get, set,
// compare-and-set, delete and increment, sorted sets read by score, expiry on a clock the test
// moves, and ops refused by name; on PostgreSQL two servers share the keys.
#include "kernel/src/fleet/kv_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "tests/support/postgres.h"

namespace molt::kernel::fleet {
namespace {

// One PostgreSQL for the binary (initdb takes a second), stopped at its exit.
molt::test::PostgresServer* KvPostgres() {
  static molt::test::PostgresServer pg;
  return &pg;
}

// A store whose "kernel thread" is whoever posts (under one lock), on a clock the test moves.
class Store {
 public:
  explicit Store(const std::string& url)
      : kv_(
            url,
            [this](std::function<void()> fn) {
              std::lock_guard lock(mu_);
              fn();
              cv_.notify_all();
            },
            [this] { return now_ms.load(); }) {}
  Status Open() { return kv_.Open(); }
  KvResult Run(KvOp op) {
    std::optional<KvResult> out;
    Status s;
    {
      std::lock_guard lock(mu_);
      s = kv_.Call(std::move(op), [&](KvResult r) { out = std::move(r); });
    }
    if (!s.ok()) {
      KvResult r;
      r.status = s;
      return r;
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return out.has_value(); });
    return out.value_or(KvResult{Status::TimedOut("no answer"), {}, 0, {}});
  }
  KvStats stats() {
    std::lock_guard lock(mu_);
    return kv_.stats();
  }
  std::atomic<std::int64_t> now_ms{1'000'000};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  KvStore kv_;
};

KvOp Op(KvKind kind, std::string key, std::string value = "") {
  KvOp op;
  op.kind = kind;
  op.key = std::move(key);
  op.value = std::move(value);
  return op;
}

class KvStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") {
      ASSERT_TRUE(KvPostgres()->ok()) << KvPostgres()->error();
      url_ = KvPostgres()->NewDatabase();
    }
    a_ = std::make_unique<Store>(url_);
    ASSERT_TRUE(a_->Open().ok());
  }
  std::string url_;
  std::unique_ptr<Store> a_;
};

TEST_P(KvStoreTest, ValuesAreSetReadReplacedOnlyWhenExpectedAndDeleted) {
  EXPECT_EQ(a_->Run(Op(KvKind::kGet, "p/party")).status.code(), Status::Code::kNotFound);
  KvResult set = a_->Run(Op(KvKind::kSet, "p/party", std::string("ada\0bob", 7)));
  ASSERT_TRUE(set.status.ok()) << set.status.ToString();
  KvResult got = a_->Run(Op(KvKind::kGet, "p/party"));
  ASSERT_TRUE(got.status.ok());
  EXPECT_EQ(*got.value, std::string("ada\0bob", 7));  // any bytes
  // Compare-and-set: refused with the value there when it is not the one expected.
  KvOp cas = Op(KvKind::kCas, "p/party", "ada,bob,cy");
  cas.expected = "ada";
  KvResult refused = a_->Run(cas);
  EXPECT_EQ(refused.status.code(), Status::Code::kRejected);
  EXPECT_EQ(refused.status.message(), "the value at \"p/party\" is not the one expected");
  EXPECT_EQ(*refused.value, std::string("ada\0bob", 7));
  cas.expected = std::string("ada\0bob", 7);
  EXPECT_TRUE(a_->Run(cas).status.ok());
  EXPECT_EQ(*a_->Run(Op(KvKind::kGet, "p/party")).value, "ada,bob,cy");
  // While absent: taken once.
  KvOp claim = Op(KvKind::kCas, "p/lock", "me");
  EXPECT_TRUE(a_->Run(claim).status.ok());
  EXPECT_EQ(a_->Run(claim).status.code(), Status::Code::kRejected);
  EXPECT_EQ(a_->Run(Op(KvKind::kDelete, "p/party")).number, 1);
  EXPECT_EQ(a_->Run(Op(KvKind::kDelete, "p/party")).number, 0);
  EXPECT_EQ(a_->Run(Op(KvKind::kGet, "p/party")).status.code(), Status::Code::kNotFound);
}

TEST_P(KvStoreTest, IncrementsAddWholeNumbersAndRefuseAnythingElse) {
  KvOp inc = Op(KvKind::kIncrement, "p/online");
  inc.number = 5;
  EXPECT_EQ(a_->Run(inc).number, 5);
  inc.number = -2;
  EXPECT_EQ(a_->Run(inc).number, 3);
  EXPECT_EQ(*a_->Run(Op(KvKind::kGet, "p/online")).value, "3");
  a_->Run(Op(KvKind::kSet, "p/name", "ada"));
  inc.key = "p/name";
  KvResult bad = a_->Run(inc);
  EXPECT_EQ(bad.status.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(bad.status.message(),
            "the value at \"p/name\" is not a whole number: increment needs one (or no value)");
  inc.number = 1.5;
  EXPECT_EQ(a_->Run(inc).status.message(),
            "key-value call on \"p/name\": increment adds a whole number");
}

TEST_P(KvStoreTest, SortedSetsAreReadByScoreEitherWay) {
  for (auto [member, score] : {std::pair{"ada", 30.0}, std::pair{"bob", 10.0},
                               std::pair{"cy", 20.0}, std::pair{"dee", 20.0}}) {
    KvOp add = Op(KvKind::kZAdd, "p/board", member);
    add.number = score;
    ASSERT_TRUE(a_->Run(add).status.ok());
  }
  KvOp again = Op(KvKind::kZAdd, "p/board", "bob");
  again.number = 40;  // a new score replaces the old
  ASSERT_TRUE(a_->Run(again).status.ok());
  KvOp range = Op(KvKind::kZRange, "p/board");
  range.number = -INFINITY;
  range.number2 = INFINITY;
  range.descending = true;
  range.limit = 3;
  KvResult top = a_->Run(range);
  ASSERT_TRUE(top.status.ok()) << top.status.ToString();
  ASSERT_EQ(top.entries.size(), 3u);
  EXPECT_EQ(top.entries[0].member, "bob");
  EXPECT_EQ(top.entries[0].score, 40);
  EXPECT_EQ(top.entries[1].member, "ada");
  EXPECT_EQ(top.entries[2].member, "cy");  // ties by member
  range.descending = false;
  range.number = 15;
  range.number2 = 25;
  range.limit = 0;  // 100
  KvResult mid = a_->Run(range);
  ASSERT_EQ(mid.entries.size(), 2u);
  EXPECT_EQ(mid.entries[0].member, "cy");
  EXPECT_EQ(mid.entries[1].member, "dee");
  EXPECT_EQ(a_->Run(Op(KvKind::kZRemove, "p/board", "cy")).number, 1);
  EXPECT_EQ(a_->Run(Op(KvKind::kZRemove, "p/board", "cy")).number, 0);
  EXPECT_EQ(a_->Run(range).entries.size(), 1u);
}

TEST_P(KvStoreTest, ExpiredKeysReadAsAbsent) {
  KvOp set = Op(KvKind::kSet, "p/ticket", "x");
  set.ttl_ms = 1000;
  ASSERT_TRUE(a_->Run(set).status.ok());
  KvOp add = Op(KvKind::kZAdd, "p/queue", "ada");
  add.number = 1;
  add.ttl_ms = 1000;
  ASSERT_TRUE(a_->Run(add).status.ok());
  a_->now_ms += 999;
  EXPECT_TRUE(a_->Run(Op(KvKind::kGet, "p/ticket")).status.ok());
  a_->now_ms += 1;
  EXPECT_EQ(a_->Run(Op(KvKind::kGet, "p/ticket")).status.code(), Status::Code::kNotFound);
  KvOp range = Op(KvKind::kZRange, "p/queue");
  range.number = -INFINITY;
  range.number2 = INFINITY;
  EXPECT_TRUE(a_->Run(range).entries.empty());
  // An expired key is absent to compare-and-set and increment too.
  KvOp claim = Op(KvKind::kCas, "p/ticket", "mine");
  EXPECT_TRUE(a_->Run(claim).status.ok());
  // The default ttl is 300 s.
  a_->now_ms += 299'000;
  EXPECT_TRUE(a_->Run(Op(KvKind::kGet, "p/ticket")).status.ok());
  a_->now_ms += 1'000;
  EXPECT_FALSE(a_->Run(Op(KvKind::kGet, "p/ticket")).status.ok());
}

TEST_P(KvStoreTest, BadOpsAreRefusedByNameBeforeTheStore) {
  EXPECT_EQ(a_->Run(Op(KvKind::kGet, "")).status.message(),
            "key-value call on \"\": a key is 1 to 256 bytes");
  EXPECT_EQ(a_->Run(Op(KvKind::kGet, "p/a\tb")).status.message(),
            "key-value call on \"p/a\tb\": a key has no control characters");
  EXPECT_EQ(a_->Run(Op(KvKind::kSet, "p/big", std::string(65537, 'x'))).status.message(),
            "key-value call on \"p/big\": a value or a member is at most 65536 bytes");
  KvOp add = Op(KvKind::kZAdd, "p/board", "ada");
  add.number = NAN;
  EXPECT_EQ(a_->Run(add).status.message(),
            "key-value call on \"p/board\": a score is a finite number");
  EXPECT_EQ(a_->stats().calls, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, KvStoreTest, ::testing::Values("memory", "postgres"),
                         [](const auto& info) { return info.param; });

TEST(PgKvStoreTest, ServersOfAFleetShareTheKeysAndOneIncrementIsNeverLost) {
  ASSERT_TRUE(KvPostgres()->ok()) << KvPostgres()->error();
  const std::string url = KvPostgres()->NewDatabase();
  Store a(url), b(url);
  ASSERT_TRUE(a.Open().ok());
  ASSERT_TRUE(b.Open().ok());
  ASSERT_TRUE(a.Run(Op(KvKind::kSet, "p/event", "festival")).status.ok());
  EXPECT_EQ(*b.Run(Op(KvKind::kGet, "p/event")).value, "festival");
  KvOp inc = Op(KvKind::kIncrement, "p/count");
  inc.number = 1;
  std::thread ta([&] {
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(a.Run(inc).status.ok());
    }
  });
  std::thread tb([&] {
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(b.Run(inc).status.ok());
    }
  });
  ta.join();
  tb.join();
  EXPECT_EQ(*a.Run(Op(KvKind::kGet, "p/count")).value, "100");
}

}  // namespace
}  // namespace molt::kernel::fleet
