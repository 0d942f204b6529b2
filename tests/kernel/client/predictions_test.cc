// SPDX-License-Identifier: Apache-2.0
// Predictions: each predicted intent resolved exactly once, by the server's acks or its deadline,
// and the pending ones listed oldest first for replay.
#include "kernel/src/client/predictions.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace molt::kernel::client {
namespace {

class PredictionsTest : public ::testing::Test {
 protected:
  Predictions::Resolved Record() {
    return [this](std::uint16_t channel, std::uint32_t seq, molt_status_t status) {
      log.push_back(std::to_string(channel) + ":" + std::to_string(seq) + ":" +
                    (status == MOLT_OK             ? "ok"
                     : status == MOLT_ERR_REJECTED ? "rejected"
                     : status == MOLT_ERR_TIMEOUT  ? "timeout"
                                                   : "?"));
    };
  }
  std::vector<std::uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

  Predictions p;
  TimePoint t0 = TimePoint() + std::chrono::seconds(100);
  std::vector<std::string> log;
};

TEST_F(PredictionsTest, EachIsResolvedOnceByItsAckAndALateAckFindsNothing) {
  EXPECT_EQ(p.Add(7, Bytes("a"), t0 + Seconds(2)), 1u);
  EXPECT_EQ(p.Add(7, Bytes("b"), t0 + Seconds(2)), 2u);
  EXPECT_EQ(p.Add(8, Bytes("c"), t0 + Seconds(2)), 3u);
  const std::vector<std::uint32_t> accepted = {1, 3}, rejected = {2};
  p.Ack(accepted, rejected, Record());
  p.Ack(accepted, rejected, Record());  // a duplicate, or a stale server: ignored
  EXPECT_EQ(log, (std::vector<std::string>{"7:1:ok", "8:3:ok", "7:2:rejected"}));
  EXPECT_EQ(p.size(), 0u);
}

TEST_F(PredictionsTest, WithoutAnAckByItsDeadlineItTimesOutAndTheAckThatFollowsIsIgnored) {
  p.Add(1, Bytes("a"), t0 + Seconds(2));
  p.Add(1, Bytes("b"), t0 + Seconds(3));
  EXPECT_EQ(p.NextDeadline(), t0 + Seconds(2));
  p.ExpireDue(t0 + Seconds(1), Record());
  EXPECT_TRUE(log.empty());
  p.ExpireDue(t0 + Seconds(2), Record());
  EXPECT_EQ(log, (std::vector<std::string>{"1:1:timeout"}));
  EXPECT_EQ(p.NextDeadline(), t0 + Seconds(3));
  const std::vector<std::uint32_t> accepted = {1, 2};
  p.Ack(accepted, {}, Record());
  EXPECT_EQ(log, (std::vector<std::string>{"1:1:timeout", "1:2:ok"}));
  EXPECT_EQ(p.NextDeadline(), std::nullopt);
}

TEST_F(PredictionsTest, PendingListsOldestFirstPerChannelAndFailAllTimesOutTheRest) {
  p.Add(1, Bytes("a"), t0 + Seconds(2));
  p.Add(2, Bytes("b"), t0 + Seconds(2));
  p.Add(1, Bytes("c"), t0 + Seconds(2));
  std::vector<std::string> one;
  for (const Predictions::Pending& e : p.List(1)) {
    one.push_back(std::to_string(e.seq) + std::string(e.payload.begin(), e.payload.end()));
  }
  EXPECT_EQ(one, (std::vector<std::string>{"1a", "3c"}));
  EXPECT_EQ(p.List(0xFFFF).size(), 3u);
  p.FailAll(Record());
  EXPECT_EQ(log, (std::vector<std::string>{"1:1:timeout", "2:2:timeout", "1:3:timeout"}));
  EXPECT_EQ(p.size(), 0u);
}

TEST_F(PredictionsTest, ACallbackThatResolvesOthersResolvesEachOnce) {
  p.Add(1, Bytes("a"), t0);
  p.Add(1, Bytes("b"), t0);
  int calls = 0;
  p.ExpireDue(t0, [&](std::uint16_t, std::uint32_t, molt_status_t) {
    ++calls;
    p.FailAll([&](std::uint16_t, std::uint32_t, molt_status_t) { ++calls; });
  });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(p.size(), 0u);
}

}  // namespace
}  // namespace molt::kernel::client
