// SPDX-License-Identifier: Apache-2.0
// Swarm (hosts/molt-bot/swarm.h): molt-bot's clients together against a real moltd serving the
// bundled plugins: connected, joined, run and drained with nothing lost; a signal ends the run;
// a missing channel stops the join.
#include "hosts/molt-bot/swarm.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <memory>
#include <string>

#include "tests/support/child_process.h"
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

}  // namespace
}  // namespace molt::bot
