// SPDX-License-Identifier: Apache-2.0
// BotClient (hosts/molt-bot/bot_client.h): one simulated client against a real moltd serving the
// bundled plugins: its echoes checked once and in order, its requests answered and timed, a
// missing channel named.
#include "hosts/molt-bot/bot_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "hosts/molt-bot/bot_options.h"
#include "tests/support/child_process.h"
#include "tests/support/test_paths.h"

namespace molt::bot {
namespace {

class BotClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = ::testing::TempDir() + "bot_client_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
            std::to_string(::getpid());
    std::filesystem::remove_all(data_);
    moltd_ = std::make_unique<test::Process>(std::vector<std::string>{
        test::kMoltd, "--admin", "off", "-p", test::kPlugins, "-d", data_, "--port", "0"});
    const std::string port = test::ServingPort(*moltd_, test::kBundledPlugins);
    ASSERT_FALSE(port.empty()) << moltd_->output();
    port_ = static_cast<std::uint16_t>(std::stoi(port));
  }
  void TearDown() override {
    moltd_.reset();
    std::filesystem::remove_all(data_);
  }

  // Steps `b` until `done` holds (true) or 10 s pass (false), sleeping on its socket between.
  static bool StepUntil(BotClient& b, const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      molt_client_wait(b.handle(), 0.1);
      b.Step();
    }
    return true;
  }

  // A client of the server, connected.
  void Connect(BotClient& b) {
    molt_client_options options{};
    options.struct_size = sizeof(options);
    ASSERT_TRUE(b.Create(options));
    ASSERT_TRUE(b.Connect("127.0.0.1", port_, "ada")) << b.last_error();
    ASSERT_TRUE(StepUntil(b, [&] { return b.connected(); })) << b.last_error();
  }

  std::string data_;
  std::unique_ptr<test::Process> moltd_;
  std::uint16_t port_ = 0;
};

TEST_F(BotClientTest, EveryEchoComesBackOnceAndInOrder) {
  Totals totals;
  BotClient b(totals);
  ASSERT_NO_FATAL_FAILURE(Connect(b));
  EXPECT_FALSE(b.joined());
  ASSERT_EQ(b.Join({}, {}, true), std::nullopt);
  EXPECT_TRUE(b.joined());
  b.Owe(10, 0.5, true);  // 10 a second for half a second: 5 owed
  EXPECT_EQ(b.owed(), 5);
  b.SendOwed(true, kEmptyTable);
  EXPECT_LT(b.owed(), 1);
  EXPECT_EQ(totals.echoes_sent + totals.intents_refused, 5u);
  ASSERT_TRUE(StepUntil(b, [&] { return totals.echoes_back == totals.echoes_sent; }))
      << totals.echoes_back << " of " << totals.echoes_sent;
  EXPECT_GT(totals.echoes_sent, 0u);
  EXPECT_EQ(totals.duplicated, 0u);
  EXPECT_EQ(totals.out_of_order, 0u);
  EXPECT_EQ(totals.disconnects, 0u);
}

TEST_F(BotClientTest, RequestsAreAnsweredAndTheirRoundTripsKept) {
  Totals totals;
  BotClient b(totals);
  ASSERT_NO_FATAL_FAILURE(Connect(b));
  ASSERT_EQ(b.Join({}, {"scores.Get"}, false), std::nullopt);
  b.Owe(3, 1, false);
  b.SendOwed(false, kEmptyTable);
  EXPECT_EQ(totals.requests_sent + totals.requests_rate_limited, 3u);
  ASSERT_TRUE(StepUntil(b, [&] { return !totals.Outstanding(); }));
  EXPECT_EQ(totals.requests_ok, totals.requests_sent);
  EXPECT_EQ(totals.rtts.size(), totals.requests_ok);
  EXPECT_EQ(totals.intents_sent, 0u);
}

TEST_F(BotClientTest, NothingIsOwedWithoutAChannel) {
  Totals totals;
  BotClient b(totals);
  ASSERT_NO_FATAL_FAILURE(Connect(b));
  ASSERT_EQ(b.Join({}, {}, false), std::nullopt);
  b.Owe(100, 1, false);
  EXPECT_EQ(b.owed(), 0);
}

TEST_F(BotClientTest, AChannelTheServerLacksIsNamed) {
  Totals totals;
  BotClient b(totals);
  ASSERT_NO_FATAL_FAILURE(Connect(b));
  std::optional<std::string> error = b.Join({"counter.Add", "no.Such"}, {}, false);
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("no channel \"no.Such\""), std::string::npos) << *error;
}

}  // namespace
}  // namespace molt::bot
