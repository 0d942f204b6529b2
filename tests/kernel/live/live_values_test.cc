// SPDX-License-Identifier: Apache-2.0
// LiveStore and LiveValues on real SQLite files: overrides stored before they are served, typed
// against their defaults, checked by their plugin, kept across restarts, expired after a week
// with no server online; Config.Changed only for real changes.
#include "kernel/src/live/live_values.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "kernel/src/live/open_live_store.h"

namespace molt::kernel::live {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kDayMs = 24 * 3600 * 1000LL;
// Two plugin instances: their addresses stand in for them.
char instance_a = 0;
char instance_b = 0;
const void* const kOwner = &instance_a;
const void* const kOther = &instance_b;

class LiveValuesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_live_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ + "/live.db";
  }
  void TearDown() override {
    live_.reset();
    fs::remove_all(dir_);
  }
  // A LiveValues whose "kernel thread" is this test's: tasks it posts wait in tasks_.
  LiveValues& Make(std::string path = "") {
    live_.reset();
    LiveOptions o;
    o.path = path.empty() ? path_ : path;
    live_ = std::make_unique<LiveValues>(
        o,
        [this](std::function<void()> fn) {
          std::lock_guard lock(mu_);
          tasks_.push_back(std::move(fn));
          cv_.notify_one();
        },
        [this](const std::string& key, const std::string& value) {
          changed_.push_back(key + "=" + value);
        },
        [this] { return now_ms_.load(); });
    return *live_;
  }
  // Runs the next task posted to the kernel thread (waiting for it).
  void Pump() {
    std::unique_lock lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(20), [&] { return !tasks_.empty(); }));
    std::function<void()> fn = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    fn();
  }
  // Set() through to its answer.
  Result<SetOutcome> Set(const std::string& key, std::optional<std::string> value,
                         const std::string& by = "ada") {
    std::optional<Result<SetOutcome>> out;
    live_->Set(key, std::move(value), by, [&](Result<SetOutcome> r) { out = std::move(r); });
    while (!out) {
      Pump();
    }
    return *out;
  }
  std::vector<LiveChange> History(const std::string& key) {
    std::optional<Result<std::vector<LiveChange>>> out;
    live_->History(key, 100, [&](Result<std::vector<LiveChange>> r) { out = std::move(r); });
    while (!out) {
      Pump();
    }
    EXPECT_TRUE(out->ok()) << out->status().ToString();
    return out->ok() ? **out : std::vector<LiveChange>();
  }
  std::string Get(const std::string& name, const void* owner = kOwner) {
    Result<std::string> v = live_->Get(owner, "shop", name);
    return v.ok() ? *v : "error: " + v.status().message();
  }

  std::string dir_;
  std::string path_;
  std::atomic<std::int64_t> now_ms_{1'800'000'000'000};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::string> changed_;
  std::unique_ptr<LiveValues> live_;
};

TEST_F(LiveValuesTest, ADeclaredValueServesItsDefaultThenTheStoredOverride) {
  LiveValues& live = Make();
  ASSERT_TRUE(live.Open().ok());
  ASSERT_TRUE(live.Declare(kOwner, "shop", "price", " 10 ", {}).ok());
  EXPECT_EQ(Get("price"), "10");  // canonical JSON
  Result<SetOutcome> r = Set("shop.price", "12");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->value, "12");
  EXPECT_EQ(r->change.action, "set");
  EXPECT_EQ(r->change.by, "ada");
  EXPECT_EQ(r->change.at_ms, now_ms_.load());
  EXPECT_EQ(Get("price"), "12");
  EXPECT_EQ(changed_, std::vector<std::string>{"shop.price=12"});
  // The same value again is no change: no event.
  r = Set("shop.price", "12.0");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(changed_.size(), 1u);
  // An unset serves the default again, and that is a change.
  r = Set("shop.price", std::nullopt);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->value, "10");
  EXPECT_EQ(Get("price"), "10");
  EXPECT_EQ(changed_, (std::vector<std::string>{"shop.price=12", "shop.price=10"}));
  const std::vector<LiveChange> h = History("shop.price");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].action, "unset");
  EXPECT_FALSE(h[0].value.has_value());
  EXPECT_EQ(h[2].action, "set");
  EXPECT_EQ(h[2].value.value_or(""), "12");
  EXPECT_GT(h[0].seq, h[2].seq);
  EXPECT_EQ(live.stats().sets, 3u);
}

TEST_F(LiveValuesTest, AValueOfAnotherTypeIsRefusedWithTheReason) {
  LiveValues& live = Make();
  ASSERT_TRUE(live.Open().ok());
  ASSERT_TRUE(live.Declare(kOwner, "shop", "count", "3", {}).ok());
  ASSERT_TRUE(live.Declare(kOwner, "shop", "rate", "0.5", {}).ok());
  ASSERT_TRUE(live.Declare(kOwner, "shop", "event", "\"calm\"", {}).ok());
  ASSERT_TRUE(live.Declare(kOwner, "shop", "on", "true", {}).ok());
  ASSERT_TRUE(live.Declare(kOwner, "shop", "drops", "{\"gem\":1}", {}).ok());
  Result<SetOutcome> r = Set("shop.count", "\"many\"");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "live value shop.count: \"many\" is a string, but the default 3 is a whole number");
  r = Set("shop.count", "2.5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "live value shop.count: 2.5 is a number, but the default 3 is a whole number");
  EXPECT_TRUE(Set("shop.count", "7").ok());
  EXPECT_TRUE(Set("shop.rate", "2").ok());     // a whole number is a number
  EXPECT_TRUE(Set("shop.count", "8.0").ok());  // and 8.0 a whole number
  EXPECT_EQ(Get("count"), "8");
  ASSERT_TRUE(live.Declare(kOwner, "shop", "ratio", "1.0", {}).ok());  // any number
  EXPECT_EQ(Get("ratio"), "1.0");
  EXPECT_TRUE(Set("shop.ratio", "2.5").ok());
  EXPECT_EQ(Get("ratio"), "2.5");
  r = Set("shop.on", "1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "live value shop.on: 1 is a whole number, but the default true is true/false");
  r = Set("shop.drops", "[1]");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "live value shop.drops: [1] is an array, but the default {\"gem\":1} is an object");
  r = Set("shop.event", "{");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the value of shop.event is not JSON"), std::string::npos)
      << r.status().message();
  r = Set("shop.event", "null");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unset reverts to the default"), std::string::npos);
  r = Set("shop.nothing", "1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(r.status().message(),
            "no running plugin declares the live value \"shop.nothing\" (molt config get lists "
            "those that do)");
  r = Set("shop.nothing", std::nullopt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "live value \"shop.nothing\" is neither declared nor set");
  EXPECT_EQ(live.stats().refused, 8u);
  EXPECT_EQ(changed_, (std::vector<std::string>{"shop.count=7", "shop.rate=2", "shop.count=8",
                                                "shop.ratio=2.5"}));
  EXPECT_EQ(History("").size(), 4u);  // nothing refused was stored
}

TEST_F(LiveValuesTest, ThePluginsCheckRefusesFailClosed) {
  LiveValues& live = Make();
  ASSERT_TRUE(live.Open().ok());
  int asked = 0;
  ASSERT_TRUE(live.Declare(kOwner, "shop", "price", "10",
                           [&](std::string_view key, std::string_view v) {
                             ++asked;
                             EXPECT_EQ(key, "shop.price");
                             return v == "0" ? Status::Rejected("a price is never 0")
                                             : Status::Ok();
                           })
                  .ok());
  Result<SetOutcome> r = Set("shop.price", "0");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kRejected);
  EXPECT_EQ(r.status().message(),
            "live value shop.price: the plugin refused 0: a price is never 0");
  EXPECT_EQ(Get("price"), "10");
  EXPECT_TRUE(Set("shop.price", "5").ok());
  EXPECT_EQ(asked, 2);
  EXPECT_TRUE(Set("shop.price", std::nullopt).ok());  // an unset is never checked
  EXPECT_EQ(asked, 2);
}

TEST_F(LiveValuesTest, DeclarationsAreChecked) {
  LiveValues& live = Make();
  ASSERT_TRUE(live.Open().ok());
  Status s = live.Declare(kOwner, "shop", "a.b", "1", {});
  EXPECT_EQ(s.message(), "live value name \"a.b\": 1..64 of [A-Za-z0-9_-]");
  s = live.Declare(kOwner, "shop", "", "1", {});
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  s = live.Declare(kOwner, "shop", "x", "null", {});
  EXPECT_NE(s.message().find("the default of shop.x is null"), std::string::npos) << s.message();
  s = live.Declare(kOwner, "shop", "x", std::string(70000, ' ') + "1", {});
  EXPECT_NE(s.message().find("a live value is at most 65536"), std::string::npos) << s.message();
  ASSERT_TRUE(live.Declare(kOwner, "shop", "x", "1", {}).ok());
  s = live.Declare(kOwner, "shop", "x", "1", {});
  EXPECT_EQ(s.code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(s.message(), "live value shop.x is declared already");
  EXPECT_EQ(Get("y"),
            "error: live value \"y\" is not declared by this plugin (declare it with "
            "live_declare)");
  EXPECT_EQ(Get("x", kOther),
            "error: live value \"x\" is not declared by this plugin (declare "
            "it with live_declare)");
}

TEST_F(LiveValuesTest, OverridesOutliveTheirDeclarationsAndTheServer) {
  {
    LiveValues& live = Make();
    ASSERT_TRUE(live.Open().ok());
    ASSERT_TRUE(live.Declare(kOwner, "shop", "price", "10", {}).ok());
    ASSERT_TRUE(Set("shop.price", "12").ok());
    live.Forget(kOwner);  // the instance stopped; its override stays
    EXPECT_EQ(live.stats().declared, 0u);
    EXPECT_EQ(live.stats().overrides, 1u);
    const std::vector<LiveView> all = live.List();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_FALSE(all[0].declared);
    ASSERT_TRUE(all[0].override_value.has_value());
    EXPECT_EQ(all[0].override_value->by, "ada");
  }
  // A restart a day later: read at boot, served to the next declaration at once.
  now_ms_ += kDayMs;
  LiveValues& live = Make();
  ASSERT_TRUE(live.Open().ok());
  ASSERT_TRUE(live.Declare(kOther, "shop", "price", "11", {}).ok());
  EXPECT_EQ(Get("price", kOther), "12");
  // A declaration of another type ignores the stored override (with a warning).
  live.Forget(kOther);
  ASSERT_TRUE(live.Declare(kOther, "shop", "price", "\"ten\"", {}).ok());
  EXPECT_EQ(Get("price", kOther), "\"ten\"");
  const std::vector<LiveView> all = live.List();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].override_ignored);
}

TEST_F(LiveValuesTest, OverridesExpireOnlyAfterAWeekWithNoServerOnline) {
  {
    LiveValues& live = Make();
    ASSERT_TRUE(live.Open().ok());
    ASSERT_TRUE(live.Declare(kOwner, "shop", "price", "10", {}).ok());
    ASSERT_TRUE(Set("shop.price", "12").ok());
  }
  now_ms_ += 6 * kDayMs;  // six days off: kept, and the stamp is refreshed
  {
    LiveValues& live = Make();
    ASSERT_TRUE(live.Open().ok());
    EXPECT_EQ(live.stats().overrides, 1u);
    EXPECT_EQ(live.stats().expired, 0u);
  }
  now_ms_ += 6 * kDayMs;  // six more: twelve since the set, six since a server ran
  {
    LiveValues& live = Make();
    ASSERT_TRUE(live.Open().ok());
    EXPECT_EQ(live.stats().overrides, 1u);
  }
  now_ms_ += 7 * kDayMs + 1;  // past a week with nobody online
  LiveValues& live = Make();
  ASSERT_TRUE(live.Open().ok());
  EXPECT_EQ(live.stats().overrides, 0u);
  EXPECT_EQ(live.stats().expired, 1u);
  ASSERT_TRUE(live.Declare(kOwner, "shop", "price", "10", {}).ok());
  EXPECT_EQ(Get("price"), "10");
  const std::vector<LiveChange> h = History("shop.price");
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].action, "expired");
  EXPECT_EQ(h[0].by, "moltd");
}

TEST_F(LiveValuesTest, AStoreThatCannotOpenServesDefaultsAndRefusesSets) {
  LiveValues& live = Make(dir_ + "/no/such/dir/live.db");
  Status s = live.Open();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("live values \"" + dir_ + "/no/such/dir/live.db\" cannot be opened"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("check the data directory's permissions"), std::string::npos);
  ASSERT_TRUE(live.Declare(kOwner, "shop", "price", "10", {}).ok());
  EXPECT_EQ(Get("price"), "10");
  Result<SetOutcome> r = Set("shop.price", "12");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(r.status().message().rfind("this server cannot store live values: live values", 0), 0u)
      << r.status().message();
  EXPECT_FALSE(live.stats().open);
}

TEST_F(LiveValuesTest, AStoreOfANewerLayoutIsRefusedByName) {
  {
    Result<std::unique_ptr<LiveStore>> s = OpenLiveStore(path_);
    ASSERT_TRUE(s.ok());
  }
  sqlite3* db = nullptr;  // a newer moltd wrote layout 9
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "UPDATE meta SET value = 9 WHERE key = 'layout'", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  Result<std::unique_ptr<LiveStore>> s = OpenLiveStore(path_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "live values \"" + path_ +
                                      "\" have layout 9, newer than this moltd's 1: run a newer "
                                      "moltd");
}

}  // namespace
}  // namespace molt::kernel::live
