// SPDX-License-Identifier: Apache-2.0
// Walker (hosts/molt-bot/walker.h): one client walking the walk plugin's square on a real moltd
// serving the bundled plugins with datagram links (--udp): its steps go back and forth, each is
// resolved once and accepted, positions come; a disconnect times out the pending ones and undoes
// them. No timing assertions: waits are upper bounds.
#include "hosts/molt-bot/walker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "tests/support/child_process.h"
#include "tests/support/test_paths.h"

namespace molt::bot {
namespace {

class WalkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = ::testing::TempDir() + "walker_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
            std::to_string(::getpid());
    std::filesystem::remove_all(data_);
    moltd_ = std::make_unique<test::Process>(
        std::vector<std::string>{test::kMoltd, "--admin", "off", "-p", test::kPlugins, "-d", data_,
                                 "--port", "0", "--udp", "127.0.0.1:0"});
    const std::string port = test::ServingPort(*moltd_, test::kBundledPlugins);
    ASSERT_FALSE(port.empty()) << moltd_->output();
    molt_client_options options{};
    options.struct_size = sizeof(options);
    ASSERT_EQ(molt_client_create(&options, &client_), MOLT_OK);
    ASSERT_EQ(molt_client_connect(client_, "127.0.0.1", static_cast<std::uint16_t>(std::stoi(port)),
                                  "ada", nullptr, 0, nullptr, 0),
              MOLT_OK);
    ASSERT_TRUE(StepUntil([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; }))
        << molt_client_last_error(client_);
  }
  void TearDown() override {
    molt_client_destroy(client_);
    moltd_.reset();
    std::filesystem::remove_all(data_);
  }

  // Steps the client until `done` holds (true) or 10 s pass (false).
  bool StepUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      molt_client_wait(client_, 0.05);
      molt_client_step(client_, 0);
    }
    return true;
  }

  std::string data_;
  std::unique_ptr<test::Process> moltd_;
  molt_client* client_ = nullptr;
};

TEST_F(WalkerTest, StepsGoBackAndForthAndAreAllAcceptedAndPositionsCome) {
  Totals totals;
  Walker w(totals);
  ASSERT_EQ(w.Join(client_), std::nullopt);
  for (int i = 0; i < 6; ++i) {
    w.Step();
    EXPECT_EQ(w.x(), i % 2 == 0 ? 1 : 0) << "step " << i << ": towards 0, so 1, 0, 1, ...";
    molt_client_step(client_, 0);
  }
  EXPECT_EQ(totals.predictions_sent, 6u);
  ASSERT_TRUE(StepUntil([&] { return w.pending() == 0 && totals.positions >= 6; }))
      << totals.predictions_accepted << " accepted, " << totals.positions << " positions";
  EXPECT_EQ(totals.predictions_accepted, 6u);
  EXPECT_EQ(totals.predictions_rejected + totals.predictions_timed_out, 0u);
  EXPECT_EQ(totals.ack_rtts.size(), 6u) << "each answer is timed";
  EXPECT_EQ(w.x(), 0) << "accepted steps stay applied";
}

TEST_F(WalkerTest, ADisconnectTimesOutThePendingStepsAndUndoesThem) {
  Totals totals;
  Walker w(totals);
  ASSERT_EQ(w.Join(client_), std::nullopt);
  w.Step();  // x 1, sent, no step since: no answer read yet
  EXPECT_EQ(w.x(), 1);
  EXPECT_EQ(w.pending(), 1u);
  molt_client_disconnect(client_);  // resolves the pending ones at once, as timed out
  EXPECT_EQ(w.pending(), 0u);
  EXPECT_EQ(totals.predictions_timed_out, 1u);
  EXPECT_EQ(w.x(), 0) << "rolled back";
  EXPECT_TRUE(totals.ack_rtts.empty()) << "a timeout is no answer: not a round trip";
  EXPECT_FALSE(WalkedCleanly(totals));
}

}  // namespace
}  // namespace molt::bot
