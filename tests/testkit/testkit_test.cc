// SPDX-License-Identifier: Apache-2.0
// The plugin test kit (molt/testkit.hpp over libmolt_testkit) as a plugin author uses it: real
// fixture plugins loaded by the real loader, driven through the public headers only.
//   fx_net      events, a kick, declarative rules, a request with a reject payload, a replica
//   fx_gen      a rate-limited intent, requests answered and never answered, a swap's handoff
//   fx_profile  profiles loaded on join, saved on leave and at the close
//   fx_live     live values an operator sets
//   fx_interest a zone and a grid: who sees which replica, as the game places its players
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <molt/testkit.hpp>
#include <string>

#include "test_payloads_generated.h"

namespace {

using molt::testkit::Kit;
using molt::testkit::Message;

const std::string kFixtures = MOLT_FIXTURE_DIR;

std::string Say(const std::string& text) {
  flatbuffers::FlatBufferBuilder b;
  b.Finish(molt::test::CreateSay(b, b.CreateString(text)));
  return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
}

std::string Add(int amount) {
  flatbuffers::FlatBufferBuilder b;
  b.Finish(molt::test::CreateAdd(b, amount));
  return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
}

// The text of a molt.test.Say event.
std::string TextOf(const Message& m) {
  const auto* say = flatbuffers::GetRoot<molt::test::Say>(m.payload.data());
  return say->text() != nullptr ? say->text()->str() : "";
}

TEST(TestKitTest, AClientJoinsHearsEventsAndIsAnswered) {
  Kit kit({kFixtures + "/net/fx_net.so"});
  const molt_session_t ada = kit.Join("ada");
  EXPECT_NE(ada, 0u);
  // The session handler's greeting, then every Say echoed to everyone.
  std::vector<Message> said = kit.Events(ada, "fx.Said");
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(TextOf(said[0]), "hello ada");
  const molt_session_t bob = kit.Join("bob");
  ASSERT_TRUE(kit.Intent(bob, "fx.Say", Say("hi all")).ok()) << kit.error();
  said = kit.Events(ada, "fx.Said");
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(TextOf(said[0]), "hi all");
  EXPECT_EQ(kit.Events(bob, "fx.Said").size(), 2u);  // "hello bob", "hi all"
  const molt::testkit::Response r = kit.Request(ada, "fx.Double", Add(21));
  EXPECT_EQ(r.status, MOLT_OK);
  EXPECT_EQ(r.payload, "42");
  EXPECT_FALSE(kit.Next(ada).has_value()) << "nothing else was sent to ada";
}

TEST(TestKitTest, EveryRefusalSaysWhyAndNothingReachesTheHandler) {
  Kit kit({kFixtures + "/net/fx_net.so"});
  const molt_session_t ada = kit.Join("ada");
  (void)kit.Drain(ada);
  molt::Status s = kit.Intent(ada, "fx.Say", Say(std::string(40, 'x')));
  EXPECT_EQ(s.code(), MOLT_ERR_REJECTED);
  EXPECT_NE(s.message().find(
                "fx.Say: rule: field \"text\" (id 0) of molt.test.Say: length 40 exceeds 32"),
            std::string::npos)
      << s.message();
  s = kit.Intent(ada, "fx.Say", "not a flatbuffer");
  EXPECT_EQ(s.code(), MOLT_ERR_REJECTED);
  EXPECT_NE(s.message().find("bad_payload"), std::string::npos) << s.message();
  s = kit.Intent(ada, "fx.Shout", Say("hi"));
  EXPECT_EQ(s.code(), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(s.message(), "no intent channel is named \"fx.Shout\"");
  EXPECT_TRUE(kit.Events(ada, "fx.Said").empty()) << "a refused Say was echoed";
  // A refused request is answered with the channel's reject payload; a failing handler too.
  molt::testkit::Response r = kit.Request(ada, "fx.Double", Add(5000));
  EXPECT_EQ(r.status, MOLT_ERR_REJECTED);
  EXPECT_EQ(r.payload, "refused");
  r = kit.Request(ada, "fx.Double", Add(13));
  EXPECT_EQ(r.status, MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(kit.Intent(ada, "fx.Double", Add(1)).code(), MOLT_ERR_NOT_FOUND)
      << "a request channel is not an intent channel";
}

TEST(TestKitTest, AKickEndsTheSessionWithItsText) {
  Kit kit({kFixtures + "/net/fx_net.so"});
  const molt_session_t ada = kit.Join("ada");
  ASSERT_TRUE(kit.Intent(ada, "fx.Say", Say("kick")).ok()) << kit.error();
  const std::optional<Message> bye = kit.Bye(ada);
  ASSERT_TRUE(bye.has_value());
  EXPECT_EQ(bye->reason, "Kicked");
  EXPECT_EQ(bye->text, "asked to");
  const molt::Status s = kit.Intent(ada, "fx.Say", Say("hello?"));
  EXPECT_EQ(s.code(), MOLT_ERR_STALE);
  EXPECT_NE(s.message().find("(ada) has ended"), std::string::npos) << s.message();
  EXPECT_EQ(kit.Leave(ada).code(), MOLT_ERR_STALE);
}

TEST(TestKitTest, ReplicasReachTheClientsCopyOnTheirDeadline) {
  Kit kit({kFixtures + "/net/fx_net.so"});
  const molt_session_t ada = kit.Join("ada");
  (void)kit.Join("bob");
  ASSERT_TRUE(kit.Advance(0.1).ok());
  molt::Result<std::int64_t> joins = kit.Int(ada, "fx.board", "joins");
  ASSERT_TRUE(joins.ok()) << joins.status().message();
  EXPECT_EQ(*joins, 2);
  molt::Result<std::string> last = kit.BytesField(ada, "fx.board", "last");
  ASSERT_TRUE(last.ok()) << last.status().message();
  EXPECT_EQ(*last, "bob");
  EXPECT_EQ(kit.Float(ada, "fx.board", "joins").status().code(), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kit.Int(ada, "fx.board", "nope").status().code(), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(kit.Int(ada, "no.board", "joins").status().code(), MOLT_ERR_NOT_FOUND);
}

// Interest from a plugin's own tests: sessions placed by the game's intents, the clock moved by
// the kit, and the client copies holding exactly the replicas each session sees.
TEST(TestKitTest, AGameTestsItsInterestZonesAndGridThroughTheKit) {
  Kit kit({kFixtures + "/interest/fx_interest.so"});
  const molt_session_t ada = kit.Join("ada");
  const molt_session_t bob = kit.Join("bob");
  auto sees = [&](molt_session_t s, const std::string& replica) {
    return kit.Float(s, replica, "x").ok() || kit.Int(s, replica, "open").ok();
  };
  ASSERT_TRUE(kit.Advance(0.2).ok());
  // The lobby (a zone) holds both; nobody is on the arena (a grid) yet.
  EXPECT_TRUE(sees(ada, "fx.notice"));
  EXPECT_TRUE(sees(bob, "fx.notice"));
  EXPECT_FALSE(sees(ada, "fx.flag.near"));
  EXPECT_FALSE(sees(ada, "fx.flag.far"));
  // Placed by the game: each sees the flag within 20 of it.
  ASSERT_TRUE(kit.Intent(ada, "fx.Move", Say("5 5")).ok()) << kit.error();
  ASSERT_TRUE(kit.Intent(bob, "fx.Move", Say("95 0")).ok()) << kit.error();
  ASSERT_TRUE(kit.Advance(0.2).ok());
  EXPECT_TRUE(sees(ada, "fx.flag.near"));
  EXPECT_FALSE(sees(ada, "fx.flag.far"));
  EXPECT_TRUE(sees(bob, "fx.flag.far"));
  EXPECT_FALSE(sees(bob, "fx.flag.near"));
  molt::Result<double> x = kit.Float(bob, "fx.flag.far", "x");
  ASSERT_TRUE(x.ok()) << x.status().message();
  EXPECT_EQ(*x, 100);
  // Ada walks across: the near flag goes (a remove), the far one comes (a snapshot).
  ASSERT_TRUE(kit.Intent(ada, "fx.Move", Say("90 10")).ok()) << kit.error();
  ASSERT_TRUE(kit.Advance(0.2).ok());
  EXPECT_FALSE(sees(ada, "fx.flag.near"));
  EXPECT_TRUE(sees(ada, "fx.flag.far"));
  // Off the arena, out of the lobby: nothing left to see.
  ASSERT_TRUE(kit.Intent(ada, "fx.Move", Say("off")).ok()) << kit.error();
  ASSERT_TRUE(kit.Intent(ada, "fx.Move", Say("out")).ok()) << kit.error();
  ASSERT_TRUE(kit.Advance(0.2).ok());
  EXPECT_FALSE(sees(ada, "fx.flag.far"));
  EXPECT_FALSE(sees(ada, "fx.notice"));
  EXPECT_TRUE(sees(bob, "fx.notice"));  // bob is still in the lobby
  EXPECT_TRUE(sees(bob, "fx.flag.far"));
  // A move the game refuses fails its handler (the kit says so; the log says why) and moves
  // nobody.
  const molt::Status bad = kit.Intent(bob, "fx.Move", Say("north"));
  EXPECT_EQ(bad.message(), "fx.Move: the handler failed (its error is logged)");
  ASSERT_TRUE(kit.Advance(0.2).ok());
  EXPECT_TRUE(sees(bob, "fx.flag.far"));
}

TEST(TestKitTest, TimeMovesOnlyWhenAdvancedAndRateLimitsFollowIt) {
  Kit kit({kFixtures + "/gen/v1"});
  EXPECT_EQ(kit.Now(), 0);
  const molt_session_t ada = kit.Join("ada");
  for (int i = 0; i < 5; ++i) {  // gen.Add: 5 a second, a burst of 5
    ASSERT_TRUE(kit.Intent(ada, "gen.Add", Add(1)).ok()) << kit.error();
  }
  const molt::Status limited = kit.Intent(ada, "gen.Add", Add(1));
  EXPECT_EQ(limited.code(), MOLT_ERR_RATE_LIMITED);
  EXPECT_NE(limited.message().find("gen.Add: rate_limited"), std::string::npos)
      << limited.message();
  EXPECT_EQ(kit.Now(), 0) << "nothing moved the clock";
  ASSERT_TRUE(kit.Advance(1).ok());
  EXPECT_DOUBLE_EQ(kit.Now(), 1);
  EXPECT_TRUE(kit.Intent(ada, "gen.Add", Add(1)).ok()) << "a second later the bucket refilled";
  EXPECT_EQ(kit.Request(ada, "gen.Total", Add(0)).payload, "v1:6");
  // gen.Hold is never answered: the request's timeout answers, on the kit's clock.
  const double before = kit.Now();
  const molt::testkit::Response held = kit.Request(ada, "gen.Hold", Add(0));
  EXPECT_EQ(held.status, MOLT_ERR_TIMEOUT);
  EXPECT_GT(kit.Now(), before + 1);
  EXPECT_LT(kit.Now(), before + 121);
  EXPECT_EQ(kit.Advance(-1).code(), MOLT_ERR_INVALID_ARGUMENT);
}

TEST(TestKitTest, AClientThatOnlyListensStaysConnected) {
  Kit kit({kFixtures + "/gen/v1"});
  const molt_session_t ada = kit.Join("ada");
  ASSERT_TRUE(kit.Advance(120).ok());  // eight times the idle timeout: the kit answers pings
  EXPECT_FALSE(kit.Bye(ada).has_value());
  EXPECT_TRUE(kit.Intent(ada, "gen.Add", Add(2)).ok()) << kit.error();
}

TEST(TestKitTest, BusMessagesArePublishedAndWatched) {
  Kit kit({kFixtures + "/gen/v1"});
  ASSERT_TRUE(kit.Watch("Gen.*").ok());
  ASSERT_TRUE(kit.Publish("Gen.Ping").ok());
  // Gen.Ping's own subscriber, the plugin, answers while it is delivered: Pong comes first.
  std::vector<Message> bus = kit.Drain(0);
  ASSERT_EQ(bus.size(), 2u);
  EXPECT_EQ(bus[0].kind, MOLT_TESTKIT_BUS);
  EXPECT_EQ(bus[0].channel, "Gen.Pong");
  EXPECT_EQ(bus[0].String(0), "v1");
  EXPECT_EQ(bus[1].channel, "Gen.Ping");
  const molt_session_t ada = kit.Join("ada");
  ASSERT_TRUE(kit.Intent(ada, "gen.Add", Add(3)).ok());
  bus = kit.Drain(0);
  ASSERT_FALSE(bus.empty());
  EXPECT_EQ(bus.back().channel, "Gen.Added");
  EXPECT_EQ(bus.back().Int(1), 3);
}

TEST(TestKitTest, ProfilesLoadOnJoinAndAreSavedOnLeaveAndAtTheClose) {
  Kit kit({kFixtures + "/prof/v1"});
  const molt_session_t ada = kit.Join("ada");
  EXPECT_EQ(kit.Profile("Wallet", "ada").value(), R"({"coins":0})");
  ASSERT_TRUE(kit.Publish("Prof.Add", {molt::Value::Handle(ada), molt::Value::Int(5)}).ok());
  EXPECT_EQ(kit.Profile("Wallet", "ada").value(), R"({"coins":5})");
  ASSERT_TRUE(kit.Leave(ada).ok());
  EXPECT_EQ(kit.Profile("Wallet", "ada").value(), R"({"coins":5})") << "read from the store";
  const molt_session_t bob = kit.Join("bob");
  ASSERT_TRUE(kit.Publish("Prof.Add", {molt::Value::Handle(bob), molt::Value::Int(3)}).ok());
  ASSERT_TRUE(kit.Close().ok());
  // The close stopped the plugin, whose stop() writes into every profile it saw, then saved.
  EXPECT_EQ(kit.Profile("Wallet", "bob").value(), R"({"coins":3,"stopped_by":"v1"})");
  EXPECT_EQ(kit.Bye(bob).value().reason, "ServerShutdown");
  const molt::Result<std::string> none = kit.Profile("Wallet", "cyd");
  EXPECT_EQ(none.status().code(), MOLT_ERR_NOT_FOUND);
  EXPECT_NE(none.status().message().find("never saved"), std::string::npos);
}

TEST(TestKitTest, ASwapUnderAClientKeepsItsStateAndReportsWhatWasHanded) {
  Kit kit({kFixtures + "/gen/v1"});
  const molt_session_t ada = kit.Join("ada");
  ASSERT_TRUE(kit.Intent(ada, "gen.Add", Add(4)).ok());
  const Kit::SwapResult swap = kit.Swap({kFixtures + "/gen/v2/fx_gen_v2.so"});
  ASSERT_TRUE(swap.ok()) << swap.status.message();
  EXPECT_NE(swap.report.find(R"("handed":[{"plugin":"fx_gen","state_version":1)"),
            std::string::npos)
      << swap.report;
  EXPECT_EQ(kit.Request(ada, "gen.Total", Add(0)).payload, "v2:4");
  // A build whose start fails: the swap fails naming it, and the build before serves on.
  const Kit::SwapResult failed = kit.Swap({kFixtures + "/gen/fail_start"});
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.status.message().find("the swap failed at start"), std::string::npos)
      << failed.status.message();
  EXPECT_NE(failed.status.message().find("start refused"), std::string::npos);
  EXPECT_NE(failed.report.find(R"("restored":true)"), std::string::npos) << failed.report;
  EXPECT_EQ(kit.Request(ada, "gen.Total", Add(0)).payload, "v2:4");
  EXPECT_FALSE(kit.Bye(ada).has_value()) << "no swap dropped the client";
}

TEST(TestKitTest, LiveValuesAreSetAsAnOperatorSetsThem) {
  Kit kit({kFixtures + "/live/v1"});
  ASSERT_TRUE(kit.Watch("Live.*").ok());
  ASSERT_TRUE(kit.SetLive("fx_live.step", "5").ok()) << kit.error();
  std::vector<Message> heard = kit.Drain(0);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].channel, "Live.Heard");
  EXPECT_EQ(heard[0].String(1), "fx_live.step");
  EXPECT_EQ(heard[0].String(2), "5");
  molt::Status refused = kit.SetLive("fx_live.step", "500");
  EXPECT_EQ(refused.code(), MOLT_ERR_REJECTED);
  EXPECT_NE(refused.message().find("at most 100"), std::string::npos) << refused.message();
  refused = kit.SetLive("fx_live.step", R"("five")");
  EXPECT_NE(refused.message().find("is a string"), std::string::npos) << refused.message();
  ASSERT_TRUE(kit.UnsetLive("fx_live.step").ok());
  heard = kit.Drain(0);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].String(2), "1") << "the default serves again";
}

TEST(TestKitTest, APluginsOwnTestsRunAsTheSpecGateRunsThem) {
  Kit kit({kFixtures + "/gen/v1"});
  const molt_session_t ada = kit.Join("ada");
  ASSERT_TRUE(kit.Intent(ada, "gen.Add", Add(2)).ok());
  const Kit::SelfTestResult passing = kit.SelfTest();
  EXPECT_TRUE(passing.ok()) << passing.status.message();
  EXPECT_NE(passing.report.find(R"("passed":2,"failed":0)"), std::string::npos) << passing.report;
  EXPECT_NE(passing.report.find(R"({"name":"the state round-trips","ok":true,"error":""})"),
            std::string::npos)
      << passing.report;
  EXPECT_EQ(kit.Request(ada, "gen.Total", Add(0)).payload, "v1:2") << "the tests left the state";
  // A build whose tests fail: each failure named, with its reason.
  ASSERT_TRUE(kit.Swap({kFixtures + "/gen/fail_self_test"}).ok());
  const Kit::SelfTestResult failing = kit.SelfTest();
  EXPECT_EQ(failing.status.code(), MOLT_ERR_REJECTED);
  EXPECT_NE(failing.status.message().find("2 self-test(s) failed: fx_gen@"), std::string::npos)
      << failing.status.message();
  EXPECT_NE(failing.status.message().find(
                ": \"totals are never negative\": the total went below zero; fx_gen@"),
            std::string::npos)
      << failing.status.message();
  EXPECT_NE(failing.status.message().find(": \"it parses its state\": threw: no digits"),
            std::string::npos)
      << failing.status.message();
  EXPECT_NE(failing.report.find(R"("passed":2,"failed":2)"), std::string::npos) << failing.report;
}

TEST(TestKitTest, LogsAndStatsAreThoseOfTheServer) {
  Kit kit({kFixtures + "/gen/v1"});
  (void)kit.Join("ada");
  const std::string logs = kit.Logs();
  EXPECT_NE(logs.find("info [Loader] loaded plugin \"fx_gen\""), std::string::npos) << logs;
  EXPECT_EQ(kit.Logs(), "") << "each line is handed out once";
  const std::string stats = kit.Stats();
  EXPECT_NE(stats.find(R"("net":)"), std::string::npos) << stats;
  EXPECT_NE(stats.find(R"("workers":)"), std::string::npos) << stats;
}

TEST(TestKitTest, WhatCannotBeDoneIsRefusedByName) {
  EXPECT_THROW(
      {
        try {
          Kit kit({kFixtures + "/nowhere.so"});
        } catch (const molt::testkit::Error& e) {
          EXPECT_NE(std::string(e.what()).find("no plugin library at"), std::string::npos)
              << e.what();
          EXPECT_EQ(e.code(), MOLT_ERR_NOT_FOUND);
          throw;
        }
      },
      molt::testkit::Error);
  Kit kit;
  // Nothing loaded yet: the Hello is told so, as moltd tells it while it starts.
  molt::Result<molt_session_t> early = kit.TryJoin("ada");
  EXPECT_EQ(early.status().code(), MOLT_ERR_STATE);
  EXPECT_NE(early.status().message().find("Starting"), std::string::npos)
      << early.status().message();
  ASSERT_TRUE(kit.Load({kFixtures + "/gen/v1"}).ok()) << kit.error();
  EXPECT_EQ(kit.Load({kFixtures + "/gen/v2"}).code(), MOLT_ERR_STATE);
  EXPECT_EQ(kit.TryJoin("").status().code(), MOLT_ERR_REJECTED);
  EXPECT_THROW(Kit second, molt::testkit::Error);
  EXPECT_EQ(kit.Request(12345, "gen.Total", Add(0)).status, MOLT_ERR_NOT_FOUND);
}

TEST(TestKitTest, AConfigurationKeyOutOfRangeIsNamed) {
  molt::testkit::Options o;
  o.config_json = R"({"net": {"no_such_key": 1}})";
  try {
    Kit kit(o);
    FAIL() << "an unknown key was taken";
  } catch (const molt::testkit::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_key"), std::string::npos) << e.what();
  }
}

}  // namespace
