// SPDX-License-Identifier: Apache-2.0
// The bundled scores and rounds plugins with the plugin test kit (molt/testkit.hpp): points
// counted, asked for and kept in each player's profile; rounds that end on the kit's clock.
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <molt/testkit.hpp>
#include <string>

#include "scores_generated.h"

namespace {

using molt::testkit::Kit;

std::string Query(const std::string& user = "") {
  flatbuffers::FlatBufferBuilder b;
  b.Finish(molt::scores::CreateQueryDirect(b, user.c_str()));
  return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
}

const molt::scores::Total* TotalOf(const std::string& payload) {
  return flatbuffers::GetRoot<molt::scores::Total>(payload.data());
}

molt::testkit::Options RoundsEvery(double seconds) {
  molt::testkit::Options o;
  o.config_json = R"({"plugins": {"rounds": {"round_seconds": )" + std::to_string(seconds) + "}}}";
  return o;
}

TEST(ScoresTest, PointsAddUpAskedForAndKeptInTheProfile) {
  Kit kit({MOLT_PLUGIN_SCORES});
  const molt_session_t ada = kit.Join("ada");
  ASSERT_TRUE(kit.Publish("Score.Add", {molt::Value::String("ada"), molt::Value::Int(3)}).ok());
  ASSERT_TRUE(kit.Publish("Score.Add", {molt::Value::String("ada"), molt::Value::Int(2)}).ok());
  const molt::testkit::Response r = kit.Request(ada, "scores.Get", Query());
  ASSERT_TRUE(r.ok()) << r.payload;
  EXPECT_EQ(TotalOf(r.payload)->user()->str(), "ada");
  EXPECT_EQ(TotalOf(r.payload)->total(), 5);
  EXPECT_EQ(TotalOf(r.payload)->lifetime(), 5);
  // Every change went to every session on scores.Changed.
  EXPECT_EQ(kit.Events(ada, "scores.Changed").size(), 2u);
  ASSERT_TRUE(kit.Leave(ada).ok());
  EXPECT_EQ(kit.Profile("scores", "ada").value(), R"({"lifetime":5})");
  // Back on another day: the lifetime points were kept, this round's were not carried.
  const molt_session_t again = kit.Join("ada");
  const molt::testkit::Response later = kit.Request(again, "scores.Get", Query());
  EXPECT_EQ(TotalOf(later.payload)->lifetime(), 5);
}

TEST(ScoresTest, ALongUserNameIsRefusedByTheRule) {
  Kit kit({MOLT_PLUGIN_SCORES});
  const molt_session_t ada = kit.Join("ada");
  const molt::testkit::Response r = kit.Request(ada, "scores.Get", Query(std::string(65, 'a')));
  EXPECT_EQ(r.status, MOLT_ERR_REJECTED);
}

TEST(RoundsTest, ARoundEndsOnTheClockWithItsLeaderAndTheScoresStartOver) {
  Kit kit({MOLT_PLUGIN_SCORES, MOLT_PLUGIN_ROUNDS}, RoundsEvery(10));
  ASSERT_TRUE(kit.Watch("Round.Ended").ok());
  ASSERT_TRUE(kit.Publish("Score.Add", {molt::Value::String("ada"), molt::Value::Int(4)}).ok());
  ASSERT_TRUE(kit.Publish("Score.Add", {molt::Value::String("bob"), molt::Value::Int(9)}).ok());
  ASSERT_TRUE(kit.Advance(9.9).ok());
  EXPECT_TRUE(kit.Drain(0).empty()) << "the round ended early";
  ASSERT_TRUE(kit.Advance(0.2).ok());
  std::vector<molt::testkit::Message> ended = kit.Drain(0);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].Int(0), 1);
  EXPECT_EQ(ended[0].String(1), "bob");
  EXPECT_EQ(ended[0].Int(2), 9);
  ASSERT_TRUE(kit.Advance(10).ok());
  ended = kit.Drain(0);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].Int(0), 2);
  EXPECT_EQ(ended[0].Int(2), 0) << "the scores were reset";
  EXPECT_NE(kit.Logs().find("round 1 ended: bob leads with 9 points"), std::string::npos);
}

TEST(RoundsTest, WhenTheServerDrainsTheRoundEndsAtOnceAndNoOtherStarts) {
  Kit kit({MOLT_PLUGIN_SCORES, MOLT_PLUGIN_ROUNDS}, RoundsEvery(10));
  ASSERT_TRUE(kit.Watch("Round.Ended").ok());
  ASSERT_TRUE(kit.Publish("Score.Add", {molt::Value::String("ada"), molt::Value::Int(4)}).ok());
  ASSERT_TRUE(kit.Advance(3).ok());
  // What moltd publishes as a drain begins (docs/fleet.md, "Draining a server").
  ASSERT_TRUE(kit.Publish("Kernel.SoftShutdown", {molt::Value::Int(2)}).ok());
  std::vector<molt::testkit::Message> ended = kit.Drain(0);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].Int(0), 1);
  EXPECT_EQ(ended[0].String(1), "ada");
  EXPECT_EQ(ended[0].Int(2), 4);
  EXPECT_NE(kit.Logs().find("the server drains (2 players move): round 1 ends now"),
            std::string::npos)
      << kit.Logs();
  ASSERT_TRUE(kit.Advance(30).ok());
  EXPECT_TRUE(kit.Drain(0).empty()) << "no round starts on a draining server";
}

TEST(RoundsTest, ARoundLengthThatIsNotPositiveStopsTheLoad) {
  try {
    Kit kit({MOLT_PLUGIN_SCORES, MOLT_PLUGIN_ROUNDS}, RoundsEvery(0));
    FAIL() << "rounds loaded with round_seconds 0";
  } catch (const molt::testkit::Error& e) {
    EXPECT_NE(std::string(e.what()).find("round_seconds must be a positive number of seconds"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
