// SPDX-License-Identifier: Apache-2.0
// Swarm (hosts/molt-bot/swarm.h): molt-bot's clients together against a real moltd serving the
// bundled plugins: connected, joined, run and drained with nothing lost; a signal ends the run;
// a missing channel stops the join. With --udp, against a moltd offering datagram links: every
// step accepted, positions heard, every client's link open, and the server bound each one; and
// against one offering none, the same walk by TCP with no link counted. No timing assertions.
#include "hosts/molt-bot/swarm.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/test_paths.h"

namespace molt::bot {
namespace {

class SwarmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = ::testing::TempDir() + "swarm_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
            std::to_string(::getpid());
    std::filesystem::remove_all(data_);
    moltd_ = std::make_unique<test::Process>(std::vector<std::string>{
        test::kMoltd, "--admin", "off", "-p", test::kPlugins, "-d", data_, "--port", "0"});
    const std::string port = test::ServingPort(*moltd_, test::kBundledPlugins);
    ASSERT_FALSE(port.empty()) << moltd_->output();
    options_.port = std::stoi(port);
    options_.clients = 3;
    options_.join_rate = 100;
  }
  void TearDown() override {
    moltd_.reset();
    std::filesystem::remove_all(data_);
  }

  std::string data_;
  std::unique_ptr<test::Process> moltd_;
  BotOptions options_;
};

TEST_F(SwarmTest, EveryClientJoinsRunsAndGetsEveryEchoBack) {
  options_.verify = true;
  options_.rate = 20;
  options_.duration = 0.5;
  Totals totals;
  Swarm swarm(options_, totals);
  ASSERT_EQ(swarm.Connect(), 0);
  EXPECT_EQ(swarm.size(), 3u);
  ::testing::internal::CaptureStdout();
  const int joined = swarm.Join();
  const std::string said = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(joined, 0);
  EXPECT_EQ(said, "molt-bot: 3/3 clients joined 127.0.0.1:" + std::to_string(options_.port) + "\n");
  const volatile std::sig_atomic_t stop = 0;
  ::testing::internal::CaptureStdout();
  const RunCost cost = swarm.Run(stop);
  ::testing::internal::GetCapturedStdout();
  EXPECT_GE(cost.seconds, options_.duration);
  EXPECT_GT(cost.wakeups, 0u);
  swarm.Drain();
  EXPECT_EQ(swarm.connected(), 3u);
  EXPECT_GT(totals.echoes_sent, 0u);
  EXPECT_EQ(totals.echoes_back, totals.echoes_sent);
  EXPECT_EQ(totals.duplicated + totals.out_of_order + totals.disconnects, 0u);
  swarm.Close();
  EXPECT_EQ(swarm.size(), 0u);
  EXPECT_EQ(totals.disconnects, 0u) << "a client the bot disconnects is not counted as lost";
}

TEST_F(SwarmTest, ASignalEndsTheRunBeforeARound) {
  options_.intents = {"counter.Add"};
  options_.duration = 600;
  Totals totals;
  Swarm swarm(options_, totals);
  ASSERT_EQ(swarm.Connect(), 0);
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(swarm.Join(), 0);
  ::testing::internal::GetCapturedStdout();
  const volatile std::sig_atomic_t stop = 1;
  swarm.Run(stop);
  EXPECT_EQ(totals.intents_sent + totals.intents_refused, 0u);
  swarm.Close();
}

TEST_F(SwarmTest, AChannelTheServerLacksStopsTheJoinWithExitTwo) {
  options_.requests = {"no.Such"};
  Totals totals;
  Swarm swarm(options_, totals);
  ASSERT_EQ(swarm.Connect(), 0);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(swarm.Join(), 2);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("molt-bot: "), std::string::npos);
}

TEST_F(SwarmTest, ControllersThatCannotLoadExitTwo) {
  options_.controllers = data_ + "/no-such-controllers";
  Totals totals;
  Swarm swarm(options_, totals);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(swarm.Connect(), 2);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("molt-bot: --controllers " + data_ +
                                                          "/no-such-controllers: "),
            std::string::npos);
}

// Runs `swarm` through every phase, its progress lines in `said`.
void RunThrough(Swarm& swarm, std::string& said) {
  ASSERT_EQ(swarm.Connect(), 0);
  ::testing::internal::CaptureStdout();
  const int joined = swarm.Join();
  const volatile std::sig_atomic_t stop = 0;
  if (joined == 0) {
    swarm.Run(stop);
  }
  said = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(joined, 0) << said;
  swarm.Drain();
}

TEST_F(SwarmTest, AWalkWithoutADatagramLinkGoesByTheReliableLinkAndCountsNoLink) {
  options_.udp = true;
  options_.rate = 30;
  options_.duration = 1.2;
  Totals totals;
  Swarm swarm(options_, totals);
  std::string said;
  ASSERT_NO_FATAL_FAILURE(RunThrough(swarm, said));
  EXPECT_EQ(swarm.DatagramLinks(), 0u) << "this moltd runs without --udp";
  EXPECT_NE(said.find("datagram links 0/3 open"), std::string::npos) << said;
  EXPECT_GT(totals.predictions_sent, 0u);
  EXPECT_EQ(totals.predictions_accepted, totals.predictions_sent);
  EXPECT_GT(totals.positions, 0u);
  swarm.Close();
}

// A moltd offering datagram links (--udp), with its admin API to ask where each is bound.
class SwarmWalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = ::testing::TempDir() + "swarm_walk_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
            std::to_string(::getpid());
    std::filesystem::remove_all(data_);
    moltd_ = std::make_unique<test::Process>(
        std::vector<std::string>{test::kMoltd, "--admin", "127.0.0.1:0", "-p", test::kPlugins, "-d",
                                 data_, "--port", "0", "--udp", "127.0.0.1:0"});
    const std::string port = test::ServingPort(*moltd_, test::kBundledPlugins);
    ASSERT_FALSE(port.empty()) << moltd_->output();
    const std::string admin = "admin endpoint on http://127.0.0.1:";
    const std::size_t at = moltd_->output().find(admin);
    ASSERT_NE(at, std::string::npos) << moltd_->output();
    admin_port_ = static_cast<std::uint16_t>(std::stoi(moltd_->output().substr(at + admin.size())));
    options_.port = std::stoi(port);
    options_.clients = 3;
    options_.join_rate = 100;
    options_.udp = true;
    options_.rate = 30;
    options_.duration = 1.2;
  }
  void TearDown() override {
    moltd_.reset();
    std::filesystem::remove_all(data_);
  }

  // How many sessions the server says have a datagram link bound (GET /api/v1/sessions).
  std::size_t BoundLinks() {
    std::string token;
    std::ifstream(data_ + "/admin.token") >> token;
    const std::string body = test::HttpCall(admin_port_, "GET", "/api/v1/sessions", token).body;
    std::size_t bound = 0;
    for (std::size_t at = body.find("\"datagram\":\"1"); at != std::string::npos;
         at = body.find("\"datagram\":\"1", at + 1)) {
      ++bound;
    }
    return bound;
  }

  std::string data_;
  std::unique_ptr<test::Process> moltd_;
  std::uint16_t admin_port_ = 0;
  BotOptions options_;
};

TEST_F(SwarmWalkTest, EveryStepIsAcceptedPositionsComeAndEveryLinkIsOpenAndBound) {
  Totals totals;
  Swarm swarm(options_, totals);
  std::string said;
  ASSERT_NO_FATAL_FAILURE(RunThrough(swarm, said));
  EXPECT_NE(said.find("[1s] 3/3 connected"), std::string::npos) << said;
  EXPECT_NE(said.find("  predictions "), std::string::npos) << "the walk rides the progress line";
  EXPECT_EQ(swarm.DatagramLinks(), 3u);
  EXPECT_EQ(BoundLinks(), 3u) << "the server agrees: each session's link is bound";
  EXPECT_GT(totals.predictions_sent, 0u);
  EXPECT_EQ(totals.predictions_refused, 0u);
  EXPECT_EQ(totals.predictions_accepted, totals.predictions_sent);
  EXPECT_EQ(totals.predictions_rejected + totals.predictions_timed_out, 0u);
  EXPECT_EQ(totals.ack_rtts.size(), totals.predictions_accepted);
  EXPECT_GT(totals.positions, 0u);
  EXPECT_TRUE(WalkedCleanly(totals));
  EXPECT_EQ(totals.disconnects, 0u);
  swarm.Close();
}

}  // namespace
}  // namespace molt::bot
