// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/core/bus.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"

namespace molt::kernel {
namespace {

class BusTest : public ::testing::Test {
 protected:
  Bus::Handler Record(std::string name) {
    return [this, name](std::string_view topic, Args) {
      got_.push_back(name + "<" + std::string(topic));
    };
  }
  Bus bus_;
  std::vector<std::string> got_;
};

TEST_F(BusTest, SubscriberReceivesTheTopicFirstThenTheArguments) {
  std::string topic_seen;
  std::int64_t killer = 0;
  std::string weapon;
  bus_.Subscribe("Combat.Kill", [&](std::string_view topic, Args args) {
    topic_seen = std::string(topic);
    ASSERT_EQ(args.size(), 2u);
    killer = args[0].AsInt();
    weapon = std::string(args[1].AsString());
  });
  const Value args[] = {Value::Int(7), Value::String("sword")};
  bus_.Publish("Combat.Kill", args);
  EXPECT_EQ(topic_seen, "Combat.Kill");
  EXPECT_EQ(killer, 7);
  EXPECT_EQ(weapon, "sword");
}

TEST_F(BusTest, TrailingWildcardMatchesTheWholeFamily) {
  bus_.Subscribe("Combat.*", Record("family"));
  bus_.Publish("Combat.Kill");
  bus_.Publish("Combat.Kill.Headshot");
  bus_.Publish("Combat");
  bus_.Publish("Combatant.Joined");
  bus_.Publish("Other.Kill");
  EXPECT_EQ(got_, (std::vector<std::string>{"family<Combat.Kill", "family<Combat.Kill.Headshot"}));
}

TEST_F(BusTest, NestedFamiliesAndStarAllMatch) {
  bus_.Subscribe("*", Record("all"));
  bus_.Subscribe("Combat.Kill.*", Record("kills"));
  bus_.Publish("Combat.Kill.Headshot");
  bus_.Publish("Zone.Enter");
  EXPECT_EQ(got_, (std::vector<std::string>{"all<Combat.Kill.Headshot",
                                            "kills<Combat.Kill.Headshot", "all<Zone.Enter"}));
}

TEST_F(BusTest, DeliversInSubscriptionOrderAcrossExactAndWildcard) {
  bus_.Subscribe("A.B", Record("1"));
  bus_.Subscribe("A.*", Record("2"));
  bus_.Subscribe("A.B", Record("3"));
  bus_.Subscribe("*", Record("4"));
  bus_.Publish("A.B");
  EXPECT_EQ(got_, (std::vector<std::string>{"1<A.B", "2<A.B", "3<A.B", "4<A.B"}));
}

TEST_F(BusTest, DisconnectStopsDeliveryAndReleasesTheHandler) {
  auto token = std::make_shared<int>(0);
  Connection c = bus_.Subscribe("T", [token](std::string_view, Args) {});
  EXPECT_EQ(bus_.subscriber_count(), 1u);
  EXPECT_TRUE(c.Connected());
  c.Disconnect();
  EXPECT_FALSE(c.Connected());
  EXPECT_EQ(bus_.subscriber_count(), 0u);
  EXPECT_EQ(token.use_count(), 1);  // the connection handle no longer pins the captures
  bus_.Publish("T");
  c.Disconnect();  // idempotent
}

TEST_F(BusTest, UnsubscribingALaterSubscriberDuringPublishSkipsIt) {
  Connection second;
  bus_.Subscribe("T", [&](std::string_view, Args) {
    got_.push_back("first");
    second.Disconnect();
  });
  second = bus_.Subscribe("T", Record("second"));
  bus_.Publish("T");
  bus_.Publish("T");
  EXPECT_EQ(got_, (std::vector<std::string>{"first", "first"}));
}

TEST_F(BusTest, SubscriberCanUnsubscribeItselfDuringPublish) {
  Connection self;
  self = bus_.Subscribe("T", [&](std::string_view, Args) {
    got_.push_back("once");
    self.Disconnect();
  });
  bus_.Subscribe("T", Record("other"));
  bus_.Publish("T");
  bus_.Publish("T");
  EXPECT_EQ(got_, (std::vector<std::string>{"once", "other<T", "other<T"}));
}

TEST_F(BusTest, SubscribingDuringPublishTakesEffectOnTheNextPublish) {
  bus_.Subscribe("T", [&](std::string_view, Args) {
    got_.push_back("outer");
    if (got_.size() == 1) {
      bus_.Subscribe("T", Record("late"));
      bus_.Subscribe("*", Record("late-all"));
    }
  });
  bus_.Publish("T");
  EXPECT_EQ(got_, std::vector<std::string>{"outer"});
  bus_.Publish("T");
  EXPECT_EQ(got_, (std::vector<std::string>{"outer", "outer", "late<T", "late-all<T"}));
}

TEST_F(BusTest, NestedPublishWhileTheSubscriberSetChangesIsSafe) {
  int depth = 0;
  std::vector<Connection> added;
  bus_.Subscribe("T", [&](std::string_view, Args) {
    if (++depth < 4) {
      added.push_back(bus_.Subscribe("T", [](std::string_view, Args) {}));
      bus_.Publish("T");  // rebuilds the list the outer publish is reading
    }
    for (auto& c : added) {
      c.Disconnect();
    }
  });
  bus_.Publish("T");
  EXPECT_EQ(depth, 4);
  EXPECT_EQ(bus_.subscriber_count(), 1u);
}

TEST_F(BusTest, ThrowingSubscriberIsLoggedAndTheOthersStillRun) {
  std::vector<std::string> lines;
  auto capture = Logger::Get().Capture(
      [&](std::string_view line, LogLevel) { lines.push_back(std::string(line)); });
  bus_.Subscribe("T", [](std::string_view, Args) { throw std::runtime_error("bad handler"); });
  bus_.Subscribe("T", Record("after"));
  EXPECT_NO_THROW(bus_.Publish("T"));
  EXPECT_EQ(got_, std::vector<std::string>{"after<T"});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "[molt] bus subscriber of \"T\" threw: bad handler");
}

TEST_F(BusTest, PreResolvedTopicDeliversLikeTheString) {
  bus_.Subscribe("Net.Tick", Record("exact"));
  bus_.Subscribe("Net.*", Record("family"));
  Bus::Topic* tick = bus_.Resolve("Net.Tick");
  EXPECT_EQ(bus_.Resolve("Net.Tick"), tick);
  EXPECT_EQ(bus_.name(tick), "Net.Tick");
  bus_.Publish(tick);
  bus_.Subscribe("*", Record("all"));  // a later subscription reaches the resolved topic too
  bus_.Publish(tick);
  EXPECT_EQ(got_, (std::vector<std::string>{"exact<Net.Tick", "family<Net.Tick", "exact<Net.Tick",
                                            "family<Net.Tick", "all<Net.Tick"}));
  EXPECT_EQ(bus_.published(), 2u);
}

TEST_F(BusTest, MalformedPatternsAreRefusedWithTheFix) {
  EXPECT_THROW(bus_.Subscribe("", Record("x")), std::invalid_argument);
  try {
    bus_.Subscribe("Combat*", Record("x"));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "bus: pattern \"Combat*\" is invalid: a wildcard may only end a pattern as "
                 "\".*\" (\"Combat.*\"), or stand alone (\"*\")");
  }
  EXPECT_FALSE(Bus::CheckPattern("A.*.B").ok());
  EXPECT_FALSE(Bus::CheckPattern(".*").ok());
  EXPECT_TRUE(Bus::CheckPattern("A.*").ok());
  EXPECT_TRUE(Bus::CheckPattern("*").ok());
  EXPECT_EQ(bus_.subscriber_count(), 0u);
}

TEST_F(BusTest, PublishingAWildcardIsRefused) {
  EXPECT_THROW(bus_.Publish("Combat.*"), std::invalid_argument);
  EXPECT_EQ(Bus::CheckTopic("Combat.*").message(),
            "bus: topic \"Combat.*\" contains '*': wildcards are for subscribing, publish to a "
            "concrete topic such as \"Combat.Kill\"");
  EXPECT_FALSE(Bus::CheckTopic("").ok());
}

TEST_F(BusTest, ConnectionMayOutliveTheBus) {
  Connection c;
  {
    Bus bus;
    c = bus.Subscribe("T", [](std::string_view, Args) {});
  }
  EXPECT_FALSE(c.Connected());
  c.Disconnect();
}

}  // namespace
}  // namespace molt::kernel
