// SPDX-License-Identifier: Apache-2.0
// The bundled counter plugin, tested as its author would test it: with the plugin test kit
// (molt/testkit.hpp), loading the counter.so just built (MOLT_PLUGIN_COUNTER, from
// molt_add_plugin_test), with scores beside it for Score.Add.
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <molt/testkit.hpp>
#include <string>

#include "counter_generated.h"

namespace {

using molt::testkit::Kit;

template <class Build>
std::string Payload(Build build) {
  flatbuffers::FlatBufferBuilder b;
  b.Finish(build(b));
  return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
}

std::string Add(int amount) {
  return Payload([&](auto& b) { return molt::counter::CreateAdd(b, amount); });
}

std::string Get(const std::string& user = "") {
  return Payload([&](auto& b) { return molt::counter::CreateGetDirect(b, user.c_str()); });
}

std::string Echo(std::uint64_t seq) {
  return Payload([&](auto& b) { return molt::counter::CreateEcho(b, seq); });
}

// The counter.Get answer's value.
std::int64_t ValueOf(const molt::testkit::Response& r) {
  EXPECT_EQ(r.status, MOLT_OK) << r.payload;
  return r.ok() ? flatbuffers::GetRoot<molt::counter::Value>(r.payload.data())->value() : -1;
}

class CounterTest : public ::testing::Test {
 protected:
  Kit kit_{{MOLT_PLUGIN_COUNTER, MOLT_PLUGIN_SCORES}};
};

TEST_F(CounterTest, AdditionsAreCountedAndEveryoneSeesTheReplica) {
  const molt_session_t ada = kit_.Join("ada");
  const molt_session_t bob = kit_.Join("bob");
  ASSERT_TRUE(kit_.Intent(ada, "counter.Add", Add(3)).ok()) << kit_.error();
  ASSERT_TRUE(kit_.Intent(bob, "counter.Add", Add(-1)).ok()) << kit_.error();
  EXPECT_EQ(ValueOf(kit_.Request(ada, "counter.Get", Get())), 2);
  EXPECT_EQ(ValueOf(kit_.Request(ada, "counter.Get", Get("ada"))), 3);
  EXPECT_EQ(ValueOf(kit_.Request(ada, "counter.Get", Get("cyd"))), 0);
  ASSERT_TRUE(kit_.Advance(0.2).ok());  // the replica goes out at 10 Hz
  EXPECT_EQ(kit_.Int(ada, "counter", "value").value(), 2);
  EXPECT_EQ(kit_.BytesField(bob, "counter", "last").value(), "bob");
}

TEST_F(CounterTest, ARangeRuleAndARateLimitKeepAdditionsHonest) {
  const molt_session_t ada = kit_.Join("ada");
  const molt::Status big = kit_.Intent(ada, "counter.Add", Add(11));
  EXPECT_EQ(big.code(), MOLT_ERR_REJECTED);
  EXPECT_NE(big.message().find("counter.Add: rule"), std::string::npos) << big.message();
  int accepted = 0;
  for (int i = 0; i < 20; ++i) {
    accepted += kit_.Intent(ada, "counter.Add", Add(1)).ok();
  }
  // 5 a second per session, a burst of 5: the refused 11 spent one of them (the rate limit comes
  // before the rules in the pipeline: a flood of bad payloads is limited too).
  EXPECT_EQ(accepted, 4);
  EXPECT_EQ(ValueOf(kit_.Request(ada, "counter.Get", Get())), 4);
  ASSERT_TRUE(kit_.Advance(1).ok());
  EXPECT_TRUE(kit_.Intent(ada, "counter.Add", Add(1)).ok()) << "a second later it refilled";
}

TEST_F(CounterTest, EchoesComeBackToTheSenderAloneInOrder) {
  const molt_session_t ada = kit_.Join("ada");
  const molt_session_t bob = kit_.Join("bob");
  for (std::uint64_t seq = 1; seq <= 50; ++seq) {
    ASSERT_TRUE(kit_.Intent(ada, "counter.Echo", Echo(seq)).ok()) << kit_.error();
  }
  const std::vector<molt::testkit::Message> echoed = kit_.Events(ada, "counter.Echoed");
  ASSERT_EQ(echoed.size(), 50u);
  for (std::uint64_t i = 0; i < echoed.size(); ++i) {
    EXPECT_EQ(flatbuffers::GetRoot<molt::counter::Echo>(echoed[i].payload.data())->seq(), i + 1);
  }
  EXPECT_TRUE(kit_.Events(bob, "counter.Echoed").empty());
}

TEST_F(CounterTest, AnOperatorsMultiplierCountsEveryAdditionThatManyTimes) {
  const molt_session_t ada = kit_.Join("ada");
  ASSERT_TRUE(kit_.SetLive("counter.multiplier", "3").ok()) << kit_.error();
  ASSERT_TRUE(kit_.Intent(ada, "counter.Add", Add(2)).ok());
  EXPECT_EQ(ValueOf(kit_.Request(ada, "counter.Get", Get())), 6);
  const molt::Status refused = kit_.SetLive("counter.multiplier", "0");
  EXPECT_NE(refused.message().find("the multiplier is a whole number from 1 to 100"),
            std::string::npos)
      << refused.message();
  ASSERT_TRUE(kit_.UnsetLive("counter.multiplier").ok());
  ASSERT_TRUE(kit_.Intent(ada, "counter.Add", Add(2)).ok());
  EXPECT_EQ(ValueOf(kit_.Request(ada, "counter.Get", Get())), 8);
}

TEST_F(CounterTest, ItsOwnTestsPassWhileItServes) {
  const molt_session_t ada = kit_.Join("ada");
  ASSERT_TRUE(kit_.Intent(ada, "counter.Add", Add(5)).ok());
  const Kit::SelfTestResult r = kit_.SelfTest();
  EXPECT_TRUE(r.ok()) << r.status.message();
  EXPECT_NE(r.report.find(R"("passed":2,"failed":0)"), std::string::npos) << r.report;
  EXPECT_EQ(ValueOf(kit_.Request(ada, "counter.Get", Get())), 5);
}

TEST_F(CounterTest, EveryAdditionScoresForItsPlayer) {
  const molt_session_t ada = kit_.Join("ada");
  ASSERT_TRUE(kit_.Intent(ada, "counter.Add", Add(4)).ok());
  EXPECT_EQ(kit_.Profile("scores", "ada").value(), R"({"lifetime":4})");
}

TEST_F(CounterTest, AHotSwapKeepsTheTotalAndTheReplica) {
  const molt_session_t ada = kit_.Join("ada");
  ASSERT_TRUE(kit_.Intent(ada, "counter.Add", Add(7)).ok());
  ASSERT_TRUE(kit_.Advance(0.2).ok());
  const Kit::SwapResult swap = kit_.Swap({MOLT_PLUGIN_COUNTER, MOLT_PLUGIN_SCORES});
  ASSERT_TRUE(swap.ok()) << swap.status.message();
  EXPECT_NE(swap.report.find(R"({"plugin":"counter","state_version":2)"), std::string::npos)
      << swap.report;
  EXPECT_EQ(ValueOf(kit_.Request(ada, "counter.Get", Get())), 7);
  ASSERT_TRUE(kit_.Intent(ada, "counter.Add", Add(1)).ok());
  ASSERT_TRUE(kit_.Advance(0.2).ok());
  EXPECT_EQ(kit_.Int(ada, "counter", "value").value(), 8) << "the same replica, claimed";
  EXPECT_FALSE(kit_.Bye(ada).has_value());
}

}  // namespace
