// SPDX-License-Identifier: Apache-2.0
// RequestTable (kernel/src/client/request_table.h) on times the test picks: ids in turn, each
// request answered exactly once (by its answer, its deadline or the session's end), a late answer
// dropped, and the expiry stopped when a callback ends the session.
#include "kernel/src/client/request_table.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace molt::kernel::client {
namespace {

using std::chrono::seconds;

const TimePoint kAskedAt = TimePoint() + std::chrono::hours(1);

class RequestTableTest : public ::testing::Test {
 protected:
  // A request whose answer is logged as "<name> <status> <payload>".
  std::uint32_t Ask(const std::string& name, int deadline_s) {
    return table_.Open(
        [this, name](molt_status_t status, std::span<const std::uint8_t> payload) {
          log_.push_back(name + " " + std::to_string(status) + " " +
                         std::string(payload.begin(), payload.end()));
        },
        kAskedAt + seconds(deadline_s));
  }
  RequestTable table_;
  std::vector<std::string> log_;
};

TEST_F(RequestTableTest, EachRequestIsAnsweredOnceAndALateAnswerIsDropped) {
  const std::uint32_t a = Ask("a", 5);
  const std::uint32_t b = Ask("b", 1);
  EXPECT_EQ(a, 1u);
  EXPECT_EQ(b, 2u);
  EXPECT_EQ(table_.NextDeadline(), kAskedAt + seconds(1));
  const std::vector<std::uint8_t> ok = {'o', 'k'};
  EXPECT_TRUE(table_.Answer(a, MOLT_OK, ok));
  EXPECT_FALSE(table_.Answer(a, MOLT_OK, ok)) << "answered already";
  table_.ExpireDue(kAskedAt + seconds(2), [] { return true; });
  EXPECT_FALSE(table_.Answer(b, MOLT_OK, ok)) << "past its deadline";
  EXPECT_EQ(log_,
            (std::vector<std::string>{"a 0 ok", "b " + std::to_string(MOLT_ERR_TIMEOUT) + " "}));
  EXPECT_EQ(table_.size(), 0u);
  EXPECT_FALSE(table_.NextDeadline().has_value());
}

TEST_F(RequestTableTest, TheExpiryStopsWhenACallbackEndsTheSession) {
  Ask("a", 1);
  Ask("b", 1);
  Ask("c", 9);
  bool session = true;
  table_.ExpireDue(kAskedAt + seconds(2), [&session] {
    session = false;  // the first callback ended it
    return session;
  });
  EXPECT_EQ(log_.size(), 1u);
  EXPECT_EQ(table_.size(), 2u);
  table_.FailAll();
  EXPECT_EQ(log_, (std::vector<std::string>{"a " + std::to_string(MOLT_ERR_TIMEOUT) + " ",
                                            "b " + std::to_string(MOLT_ERR_TIMEOUT) + " ",
                                            "c " + std::to_string(MOLT_ERR_TIMEOUT) + " "}));
}

TEST_F(RequestTableTest, SilencedRequestsCallNoOne) {
  Ask("a", 1);
  table_.Silence();
  table_.FailAll();
  EXPECT_TRUE(log_.empty());
}

}  // namespace
}  // namespace molt::kernel::client
