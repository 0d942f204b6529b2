// SPDX-License-Identifier: Apache-2.0
// How a deployment reads (hosts/molt/deploy_outcome.h): each result as its line, its JSON and
// its exit code, and a fleet report's summary.
#include "hosts/molt/deploy_outcome.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

namespace molt::cli {
namespace {

namespace json = boost::json;

json::value Deployment(const std::string& result, const std::string& reason = "") {
  return json::object{
      {"seq", 7},         {"build_id", "abc1234-def567"},   {"build", "f00d"}, {"branch", "dev"},
      {"kind", "deploy"}, {"protocol", "0011223344556677"}, {"rollout", 100},  {"result", result},
      {"reason", reason}};
}

TEST(DeployOutcomeTest, ASwapSaysWhatServesAndTheHold) {
  json::value d = Deployment("swapped");
  d.as_object()["report"] = json::object{
      {"serving", "abc1234-def567#2"}, {"previous", "0ld0000-aaaaaa#1"}, {"hold_ms", 1.25}};
  const Outcome o = Describe(d, 200);
  EXPECT_TRUE(o.ok);
  EXPECT_EQ(o.text,
            "#7 dev: abc1234-def567 swapped (abc1234-def567#2 serves, was 0ld0000-aaaaaa#1), hold "
            "1.250 ms; protocol 0011223344556677");
  EXPECT_EQ(o.json.at("result").as_string(), "swapped");
  EXPECT_EQ(o.json.at("seq").to_number<int>(), 7);
  EXPECT_EQ(o.json.at("sha256").as_string(), "f00d");
  EXPECT_TRUE(o.json.contains("report"));
  EXPECT_FALSE(o.json.contains("reason"));
}

TEST(DeployOutcomeTest, EachResultHasItsLineAndItsExitCode) {
  EXPECT_EQ(Describe(Deployment("adopted"), 200).text,
            "#7 dev: abc1234-def567 adopted: it serves already (no swap); protocol "
            "0011223344556677");
  EXPECT_EQ(Describe(Deployment("skipped", "outside the rollout"), 200).text,
            "#7 dev: abc1234-def567 recorded; this server is outside the rollout and keeps what "
            "it serves; protocol 0011223344556677");
  EXPECT_TRUE(Describe(Deployment("recorded"), 200).ok);
  EXPECT_TRUE(Describe(Deployment("pending"), 202).ok);
  const Outcome failed = Describe(Deployment("failed", "start failed"), 200);
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(failed.text, "#7 dev: abc1234-def567 failed: start failed; protocol 0011223344556677");
  EXPECT_EQ(failed.json.at("reason").as_string(), "start failed");
}

TEST(DeployOutcomeTest, ARefusalIsItsReasonAlone) {
  const Outcome o = Describe(json::object{{"error", "seq #7 was taken already"}}, 409);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.text, "refused: seq #7 was taken already");
  EXPECT_EQ(json::serialize(o.json),
            "{\"result\":\"refused\",\"reason\":\"seq #7 was taken already\"}");
  Common text;
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(PrintOutcome(text, json::object{{"error", "no"}}, 409), kExitFailed);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "refused: no\n");
  Common as_json;
  as_json.json = true;
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(PrintOutcome(as_json, Deployment("adopted"), 200), kExitOk);
  EXPECT_EQ(json::parse(::testing::internal::GetCapturedStdout()).at("result").as_string(),
            "adopted");
}

TEST(DeployOutcomeTest, TheSummaryCountsEachResultAndNamesTheServersThatFailed) {
  const json::value report = json::object{
      {"summary", json::object{{"servers", 4},
                               {"swapped", 2},
                               {"failed", 1},
                               {"pending", 1},
                               {"failed_pct", 33.3},
                               {"done", false}}},
      {"servers", json::array{json::object{{"id", "a"}, {"result", "swapped"}},
                              json::object{{"id", "b"}, {"result", "failed"}, {"reason", "boom"}},
                              json::object{{"id", "c"}, {"result", "pending"}},
                              json::object{{"id", "d"}, {"result", "swapped"}}}}};
  EXPECT_EQ(SummaryLine(report),
            "4 server(s): 2 swapped, 1 failed, 1 pending; 33% of those that tried it failed\n"
            "  b: failed (boom)\n"
            "  c: pending");
}

}  // namespace
}  // namespace molt::cli
