// SPDX-License-Identifier: Apache-2.0
// Live values on a fleet's PostgreSQL (a real one the test starts): servers sharing it hear each
// other's sets and unsets at once. The store itself is tested in pg_live_store_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernel/src/live/live_store.h"
#include "kernel/src/live/live_values.h"
#include "tests/support/postgres.h"

namespace molt::kernel::live {
namespace {

class PgLiveTest : public ::testing::Test {
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
molt::test::PostgresServer* PgLiveTest::pg_ = nullptr;

// One server's LiveValues: its kernel thread is whoever posts (under one lock); what it hears
// of changes is kept.
struct Server {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> changed;
  std::unique_ptr<LiveValues> live;

  void Open(const std::string& url) {
    LiveOptions o;
    o.path = url;
    live = std::make_unique<LiveValues>(
        o,
        [this](std::function<void()> fn) {
          std::lock_guard lock(mu);
          fn();
          cv.notify_all();
        },
        [this](const std::string& key, const std::string& value) {
          changed.push_back(key + "=" + value);
        },
        [] {
          return std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
              .count();
        });
    ASSERT_TRUE(live->Open().ok());
    std::lock_guard lock(mu);
    ASSERT_TRUE(live->Declare(this, "shop", "price", "10", {}).ok());
  }
  bool Heard(const std::string& what) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] {
      return std::find(changed.begin(), changed.end(), what) != changed.end();
    });
  }
  std::string Price() {
    std::lock_guard lock(mu);
    return live->Get(this, "shop", "price").value();
  }
  Result<SetOutcome> Set(std::optional<std::string> value) {
    std::optional<Result<SetOutcome>> out;
    {
      std::lock_guard lock(mu);
      live->Set("shop.price", std::move(value), "ada",
                [&](Result<SetOutcome> r) { out = std::move(r); });
    }
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(20), [&] { return out.has_value(); });
    return out.value_or(Status::TimedOut("no answer"));
  }
};

TEST_F(PgLiveTest, ServersSharingTheStoreHearEachOthersChangesAtOnce) {
  Server a, b;
  a.Open(url_);
  b.Open(url_);
  Result<SetOutcome> set = a.Set("12");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_TRUE(a.Heard("shop.price=12"));
  EXPECT_TRUE(b.Heard("shop.price=12")) << "b hears a's set by NOTIFY (the poll is 60 s)";
  EXPECT_EQ(b.Price(), "12");
  ASSERT_TRUE(b.Set(std::nullopt).ok());  // b's unset: a serves the default again
  EXPECT_TRUE(a.Heard("shop.price=10"));
  EXPECT_EQ(a.Price(), "10");
  // A server started later serves what the others set.
  ASSERT_TRUE(a.Set("15").ok());
  Server c;
  c.Open(url_);
  EXPECT_EQ(c.Price(), "15");
  // Each change was heard once on each server (its own applied as it was made).
  std::lock_guard lock(a.mu);
  EXPECT_EQ(a.changed,
            (std::vector<std::string>{"shop.price=12", "shop.price=10", "shop.price=15"}));
}

}  // namespace
}  // namespace molt::kernel::live
