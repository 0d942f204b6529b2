// SPDX-License-Identifier: Apache-2.0
// SqliteLiveStore (kernel/src/live/sqlite_live_store.h): the live values of a server alone, in a
// real live.db in a temporary directory: overrides and their history in seq order, what a
// reopened file still holds, expiry only after a ttl with no server online, and the refusals
// that name the file.
#include "kernel/src/live/sqlite_live_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace molt::kernel::live {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kLiveDayMs = 24 * 3600 * 1000LL;

class SqliteLiveStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_sqlite_live_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ + "/live.db";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<SqliteLiveStore> Open() {
    Result<std::unique_ptr<SqliteLiveStore>> s = SqliteLiveStore::Open(path_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  std::string dir_;
  std::string path_;
};

TEST_F(SqliteLiveStoreTest, OverridesAndTheirHistoryOutliveTheFileBeingClosed) {
  {
    std::unique_ptr<SqliteLiveStore> s = Open();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->shared_url(), "") << "a server's own";
    LiveChange one = s->Write("shop.price", "12", "ada", 2000).value();
    LiveChange two = s->Write("shop.tax", "0.2", "bo", 3000).value();
    LiveChange three = s->Write("shop.price", std::nullopt, "ada", 4000).value();
    EXPECT_EQ(one.action, "set");
    EXPECT_EQ(one.seq + 1, two.seq);
    EXPECT_EQ(two.seq + 1, three.seq);
    EXPECT_EQ(three.action, "unset");
    EXPECT_FALSE(three.value.has_value());
  }
  std::unique_ptr<SqliteLiveStore> s = Open();
  ASSERT_NE(s, nullptr);
  std::vector<StoredValue> all = s->Overrides().value();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].key, "shop.tax");
  EXPECT_EQ(all[0].value, "0.2");
  EXPECT_EQ(all[0].by, "bo");
  EXPECT_EQ(all[0].at_ms, 3000);
  std::vector<LiveChange> h = s->History("shop.price", 10).value();
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].action, "unset");  // newest first
  EXPECT_EQ(*h[1].value, "12");
  EXPECT_EQ(s->History("", 10).value().size(), 3u);
  std::vector<LiveChange> since = s->Since(h[1].seq, 10).value();
  ASSERT_EQ(since.size(), 2u);
  EXPECT_EQ(since[0].key, "shop.tax");  // oldest first
  EXPECT_EQ(s->Since(h[1].seq, 1).value().size(), 1u);
}

TEST_F(SqliteLiveStoreTest, OverridesExpireOnlyAfterTheTtlWithNoServerOnline) {
  std::unique_ptr<SqliteLiveStore> s = Open();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ExpireIfIdle(1000, kLiveDayMs).value(), 0u);  // nothing yet; stamped
  ASSERT_TRUE(s->Write("shop.price", "12", "ada", 2000).ok());
  ASSERT_TRUE(s->Stamp(1000 + kLiveDayMs).ok());  // a server online a day later
  EXPECT_EQ(s->ExpireIfIdle(1000 + 2 * kLiveDayMs, kLiveDayMs).value(), 0u) << "within the ttl";
  EXPECT_EQ(s->ExpireIfIdle(1000 + 4 * kLiveDayMs, kLiveDayMs).value(), 1u);
  EXPECT_TRUE(s->Overrides().value().empty());
  const LiveChange expired = s->History("", 1).value()[0];
  EXPECT_EQ(expired.action, "expired");
  EXPECT_EQ(expired.by, "moltd");
  EXPECT_EQ(expired.at_ms, 1000 + 4 * kLiveDayMs);
}

TEST_F(SqliteLiveStoreTest, AFileThatCannotBeOpenedIsRefusedNamingIt) {
  path_ = dir_ + "/no/such/dir/live.db";
  Result<std::unique_ptr<SqliteLiveStore>> s = SqliteLiveStore::Open(path_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kIoError);
  EXPECT_NE(s.status().message().find("live values \"" + path_ + "\" cannot be opened"),
            std::string::npos)
      << s.status().message();
}

}  // namespace
}  // namespace molt::kernel::live
