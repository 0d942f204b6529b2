// SPDX-License-Identifier: Apache-2.0
// Analytics on a real kernel with a ManualClock and real files: the flush after the first event,
// sampling (seeded), the per-minute cap, invalid events, the queue's bound, rotation, a failed
// write, and the drain. Every drop is counted by its reason.
#include "kernel/src/analytics/analytics.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernel/src/core/kernel.h"

namespace molt::kernel::analytics {
namespace {

namespace fs = std::filesystem;

class AnalyticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "analytics_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    KernelOptions o;
    o.clock = &clock_;
    kernel_ = std::move(Kernel::Boot(std::move(o))).value();
  }
  void TearDown() override {
    kernel_.reset();
    fs::remove_all(dir_);
  }
  AnalyticsOptions Options() {
    AnalyticsOptions o;
    o.dir = dir_;
    o.seed = 42;
    return o;
  }
  // The lines of events.jsonl, parsed.
  std::vector<boost::json::object> Lines() {
    std::vector<boost::json::object> out;
    std::ifstream in(dir_ + "/events.jsonl");
    for (std::string line; std::getline(in, line);) {
      out.push_back(boost::json::parse(line).as_object());
    }
    return out;
  }
  std::uint64_t Dropped(const Analytics& a, DropReason r) {
    return a.stats().dropped[static_cast<int>(r)];
  }

  ManualClock clock_;
  std::unique_ptr<Kernel> kernel_;
  std::string dir_;
};

TEST_F(AnalyticsTest, EventsAreWrittenAsJsonLinesTenSecondsAfterTheFirstOne) {
  Analytics a(*kernel_, Options());
  ASSERT_TRUE(a.Track("shop", "purchase", "ada", 7, 2.5, R"({"item":"gem"})").ok());
  clock_.Advance(std::chrono::seconds(5));
  ASSERT_TRUE(a.Track("shop", "visit", "", 0, 0, "").ok());
  kernel_->scheduler().Step();
  EXPECT_EQ(a.stats().batches, 0u);  // not due: 10 s after the first event
  clock_.Advance(std::chrono::seconds(5));
  kernel_->scheduler().Step();
  EXPECT_EQ(a.stats().batches, 1u);
  a.Drain();  // waits for the writer
  const std::vector<boost::json::object> lines = Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].at("name").as_string(), "purchase");
  EXPECT_EQ(lines[0].at("plugin").as_string(), "shop");
  EXPECT_EQ(lines[0].at("user").as_string(), "ada");
  EXPECT_EQ(lines[0].at("session").to_number<std::uint64_t>(), 7u);
  EXPECT_EQ(lines[0].at("value").as_double(), 2.5);
  EXPECT_EQ(lines[0].at("fields").at("item").as_string(), "gem");
  EXPECT_GT(lines[0].at("ts_ms").as_int64(), 1'600'000'000'000);
  EXPECT_FALSE(lines[1].contains("user"));  // no session: no user
  EXPECT_FALSE(lines[1].contains("fields"));
  const AnalyticsStats s = a.stats();
  EXPECT_EQ(s.tracked, 2u);
  EXPECT_EQ(s.written, 2u);
  EXPECT_EQ(s.queued, 0u);
  // The next event starts the next 10 s.
  ASSERT_TRUE(a.Track("shop", "visit", "", 0, 1, "").ok());
  clock_.Advance(std::chrono::seconds(9));
  kernel_->scheduler().Step();
  EXPECT_EQ(a.stats().batches, 1u);
}

TEST_F(AnalyticsTest, SamplingKeepsItsShareSeededAndCountsTheRest) {
  AnalyticsOptions o = Options();
  o.sample["tick"] = 0.25;
  o.max_per_minute = 0;  // no cap
  auto run = [&] {
    Analytics a(*kernel_, o);
    int kept = 0;
    for (int i = 0; i < 2000; ++i) {
      const Status s = a.Track("p", "tick", "", 0, i, "");
      kept += s.ok();
      if (!s.ok()) {
        EXPECT_EQ(s.code(), Status::Code::kRejected);
        EXPECT_EQ(s.message(),
                  "analytics event \"tick\" sampled out (analytics.sample keeps "
                  "0.250000)");
      }
    }
    EXPECT_TRUE(a.Track("p", "other", "", 0, 0, "").ok());  // not sampled
    EXPECT_EQ(Dropped(a, DropReason::kSampledOut), static_cast<std::uint64_t>(2000 - kept));
    return kept;
  };
  const int kept = run();
  EXPECT_GT(kept, 400);
  EXPECT_LT(kept, 600);
  EXPECT_EQ(run(), kept);  // the same seed keeps the same events
}

TEST_F(AnalyticsTest, ThePerMinuteCapRefusesTheRestOfTheMinute) {
  AnalyticsOptions o = Options();
  o.max_per_minute = 3;
  Analytics a(*kernel_, o);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(a.Track("p", "e", "", 0, i, "").ok());
  }
  const Status over = a.Track("p", "e", "", 0, 3, "");
  EXPECT_EQ(over.code(), Status::Code::kRejected);
  EXPECT_EQ(over.message(),
            "analytics event \"e\" over the cap of 3 a minute (analytics.max_per_minute)");
  EXPECT_EQ(Dropped(a, DropReason::kOverCap), 1u);
  clock_.Advance(std::chrono::minutes(1));
  EXPECT_TRUE(a.Track("p", "e", "", 0, 4, "").ok());
}

TEST_F(AnalyticsTest, AnInvalidEventIsRefusedNamingWhatIsWrong) {
  Analytics a(*kernel_, Options());
  Status s = a.Track("p", "has space", "", 0, 0, "");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "analytics event name \"has space\" is not 1 to 64 of [A-Za-z0-9_:-] (no '.': the "
            "configuration's analytics.sample.<name> names it)");
  EXPECT_FALSE(a.Track("p", "shop.buy", "", 0, 0, "").ok());
  EXPECT_FALSE(a.Track("p", std::string(65, 'a'), "", 0, 0, "").ok());
  s = a.Track("p", "e", "", 0, std::nan(""), "");
  EXPECT_EQ(s.message(), "analytics event \"e\": its value is not a finite number");
  s = a.Track("p", "e", "", 0, 0, "[1,2]");
  EXPECT_EQ(s.message(),
            "analytics event \"e\": its fields are not a JSON object of at most 4096 bytes (5 "
            "bytes)");
  s = a.Track("p", "e", "", 0, 0, "{\"a\":");
  EXPECT_NE(s.message().find("(5 bytes: "), std::string::npos) << s.message();
  s = a.Track("p", "e", "", 0, 0, "{\"a\":\"" + std::string(4100, 'x') + "\"}");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(Dropped(a, DropReason::kInvalid), 7u);
  EXPECT_EQ(a.stats().tracked, 0u);
}

TEST_F(AnalyticsTest, BeyondTheQueuesBoundEventsAreRefusedAndCounted) {
  AnalyticsOptions o = Options();
  o.max_queue = 2;
  Analytics a(*kernel_, o);
  EXPECT_TRUE(a.Track("p", "e", "", 0, 0, "").ok());
  EXPECT_TRUE(a.Track("p", "e", "", 0, 0, "").ok());
  const Status s = a.Track("p", "e", "", 0, 0, "");
  EXPECT_EQ(s.message(), "analytics event \"e\": 2 events wait to be written already");
  EXPECT_EQ(Dropped(a, DropReason::kQueueFull), 1u);
  a.Drain();
  EXPECT_TRUE(a.Track("p", "e", "", 0, 0, "").ok());  // written: room again
}

TEST_F(AnalyticsTest, TheFileRotatesBySizeAndKeepsTheNewestRotatedFiles) {
  AnalyticsOptions o = Options();
  o.rotate_bytes = 4096;
  o.keep_files = 2;
  o.max_per_minute = 0;
  Analytics a(*kernel_, o);
  const std::string fields = "{\"pad\":\"" + std::string(1000, 'x') + "\"}";
  for (int batch = 0; batch < 6; ++batch) {
    for (int i = 0; i < 5; ++i) {  // about 5 KiB a batch: one rotation before each next write
      ASSERT_TRUE(a.Track("p", "e", "", 0, batch, fields).ok());
    }
    a.Drain();
  }
  EXPECT_EQ(a.stats().written, 30u);
  EXPECT_EQ(a.stats().rotations, 5u);
  int rotated = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
    rotated += e.path().filename().string().rfind("events-", 0) == 0;
  }
  EXPECT_EQ(rotated, 2);
  EXPECT_EQ(Lines().size(), 5u);  // the newest batch, in events.jsonl
}

TEST_F(AnalyticsTest, AWriteThatFailsCountsItsEventsAsDroppedAndSaysWhy) {
  std::ofstream(dir_) << "a file where the directory should be";
  {
    Analytics a(*kernel_, Options());
    ASSERT_TRUE(a.Track("p", "e", "", 0, 0, "").ok());
    ASSERT_TRUE(a.Track("p", "e", "", 0, 0, "").ok());
    a.Drain();
    const AnalyticsStats s = a.stats();
    EXPECT_EQ(s.written, 0u);
    EXPECT_EQ(s.dropped[static_cast<int>(DropReason::kFailed)], 2u);
    EXPECT_EQ(s.queued, 0u);
    EXPECT_NE(s.last_error.find("2 analytics events not written to " + dir_ + "/events.jsonl: "),
              std::string::npos)
        << s.last_error;
  }
  fs::remove(dir_);
}

TEST_F(AnalyticsTest, TheDestructorWritesWhatIsQueued) {
  {
    Analytics a(*kernel_, Options());
    ASSERT_TRUE(a.Track("p", "last", "", 0, 1, "").ok());
  }  // the close: no flush was due yet
  const std::vector<boost::json::object> lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("name").as_string(), "last");
}

}  // namespace
}  // namespace molt::kernel::analytics
