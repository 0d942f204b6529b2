// SPDX-License-Identifier: Apache-2.0
// RefusalLog (kernel/src/net/refusal_log.h) alone: one line per reason per interval, the rest
// counted into the next with the latest address and text.
#include "kernel/src/net/refusal_log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"

namespace molt::kernel::net {
namespace {

using std::chrono::seconds;

class RefusalLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sink_ = Logger::Get().AddSink([this](const LogEntry& e) {
      if (e.message.find("refused") != std::string_view::npos) {
        std::lock_guard<std::mutex> lock(mu_);
        lines_.emplace_back(e.message);
      }
    });
  }
  std::vector<std::string> Lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(lines_, {});
  }

  const TimePoint t0_ = TimePoint(std::chrono::hours(1));
  std::mutex mu_;
  std::vector<std::string> lines_;
  Logger::Registration sink_;
};

TEST_F(RefusalLogTest, TheFirstRefusalOfAReasonIsLoggedAtOnceAndTheRestCountedIntoOneLine) {
  RefusalLog log(10);
  EXPECT_FALSE(log.Note("ServerFull", "10.0.0.1", "the server is full", t0_));
  EXPECT_EQ(Lines(), std::vector<std::string>{
                         "refused a connection from 10.0.0.1 (ServerFull): the server is full"});
  EXPECT_TRUE(log.Note("ServerFull", "10.0.0.2", "full, again", t0_ + seconds(1)));
  EXPECT_TRUE(log.Note("ServerFull", "10.0.0.3", "full, still", t0_ + seconds(2)));
  EXPECT_TRUE(log.waiting());
  log.Flush(false, t0_ + seconds(9));  // the interval has not ended
  EXPECT_TRUE(Lines().empty());
  log.Flush(false, t0_ + seconds(10));
  EXPECT_EQ(Lines(), std::vector<std::string>{
                         "refused 2 more connection(s) (ServerFull) within 10 s "
                         "(net.refusal_log_seconds); the latest from 10.0.0.3: full, still"});
  EXPECT_FALSE(log.waiting());
}

TEST_F(RefusalLogTest, ReasonsAreCountedApartAndFlushingAllWritesEveryCount) {
  RefusalLog log(10);
  log.Note("ServerFull", "10.0.0.1", "full", t0_);
  log.Note("RateLimited", "10.0.0.1", "slow down", t0_);
  EXPECT_EQ(Lines().size(), 2u);
  log.Note("ServerFull", "10.0.0.1", "full", t0_);
  log.Note("RateLimited", "10.0.0.1", "slow down", t0_);
  log.Flush(/*all=*/true, t0_);
  EXPECT_EQ(Lines().size(), 2u);
  EXPECT_FALSE(log.waiting());
}

TEST_F(RefusalLogTest, AReasonQuietForTheIntervalIsLoggedAtOnceAgain) {
  RefusalLog log(10);
  log.Note("BadHello", "10.0.0.1", "bad", t0_);
  EXPECT_FALSE(log.Note("BadHello", "10.0.0.2", "bad again", t0_ + seconds(11)));
  EXPECT_EQ(Lines().size(), 2u);
}

}  // namespace
}  // namespace molt::kernel::net
