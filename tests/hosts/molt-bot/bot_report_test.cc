// SPDX-License-Identifier: Apache-2.0
// molt-bot's figures (hosts/molt-bot/bot_report.h): the quantiles, the progress line and the
// summary, byte for byte as scripts and tests read them; with --udp, the walk's line and what
// the exit code makes of it.
#include "hosts/molt-bot/bot_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace molt::bot {
namespace {

TEST(BotReportTest, PercentileIsTheNearestRankBelow) {
  EXPECT_EQ(Percentile({}, 0.5), 0);
  EXPECT_EQ(Percentile({3, 1, 2}, 0.5), 2);
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) {
    hundred.push_back(i);
  }
  EXPECT_EQ(Percentile(hundred, 0.5), 50);
  EXPECT_EQ(Percentile(hundred, 0.99), 99);
  EXPECT_EQ(Percentile(hundred, 1), 100);
}

TEST(BotReportTest, TheLineCarriesEveryFigure) {
  Totals t;
  t.intents_sent = 12;
  t.intents_refused = 1;
  t.requests_ok = 4;
  t.requests_rejected = 2;
  t.requests_rate_limited = 3;
  t.requests_timed_out = 5;
  t.disconnects = 6;
  t.rtts = {0.001, 0.002, 0.003};
  EXPECT_EQ(Line(t, 2, 3),
            "2/3 connected  intents 12 sent 1 refused  requests 4 ok 2 rejected 3 limited 5 "
            "timed out  rtt p50 2.00 ms p99 2.00 ms  disconnects 6");
}

TEST(BotReportTest, OutstandingUntilEveryRequestIsAnsweredAndEveryEchoBack) {
  Totals t;
  EXPECT_FALSE(t.Outstanding());
  t.requests_sent = 5;
  t.requests_ok = 1;
  t.requests_rejected = 1;
  t.requests_rate_limited = 1;
  t.requests_timed_out = 1;
  EXPECT_TRUE(t.Outstanding());
  t.requests_failed = 1;
  EXPECT_FALSE(t.Outstanding());
  t.echoes_sent = 2;
  t.echoes_back = 1;
  EXPECT_TRUE(t.Outstanding());
}

TEST(BotReportTest, TheSummarySaysWhatWasLostAndWhatTheRunCost) {
  Totals t;
  t.echoes_sent = 3;
  t.echoes_back = 2;
  RunCost cost;
  cost.seconds = 2;
  cost.cpu_seconds = 0.5;
  cost.wakeups = 42;
  ::testing::internal::CaptureStdout();
  EXPECT_FALSE(PrintSummary(t, 1, 1, true, cost)) << "an echo was lost";
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, "molt-bot: done: " + Line(t, 1, 1) +
                     "\nmolt-bot: verify: 3 sent 2 echoed 1 lost 0 duplicated 0 out of order\n"
                     "molt-bot: cpu 0.500 s in 2.0 s of running (25.00% of a core), 42 wakeups\n");
  t.echoes_back = 3;
  ::testing::internal::CaptureStdout();
  EXPECT_TRUE(PrintSummary(t, 1, 1, true, cost));
  t.duplicated = 1;
  EXPECT_FALSE(PrintSummary(t, 1, 1, true, cost));
  ::testing::internal::GetCapturedStdout();
  ::testing::internal::CaptureStdout();
  EXPECT_TRUE(PrintSummary(t, 1, 1, false, cost)) << "without --verify the echoes are not judged";
  EXPECT_EQ(::testing::internal::GetCapturedStdout().find("verify:"), std::string::npos);
}

TEST(BotReportTest, TheWalkLineCarriesEveryFigure) {
  Totals t;
  t.predictions_sent = 20;
  t.predictions_refused = 1;
  t.predictions_accepted = 14;
  t.predictions_rejected = 2;
  t.predictions_timed_out = 3;
  t.ack_rtts = {0.0004, 0.0005, 0.0009};
  t.positions = 42;
  EXPECT_EQ(WalkLine(t, 2, 3),
            "predictions 20 sent 1 refused 14 accepted 5 rolled back (2 rejected 3 timed out) 1 "
            "pending  ack rtt p50 0.50 ms p99 0.50 ms  positions 42  datagram links 2/3 open");
}

TEST(BotReportTest, PredictionsNotResolvedAreOutstanding) {
  Totals t;
  t.predictions_sent = 3;
  t.predictions_accepted = 1;
  t.predictions_rejected = 1;
  EXPECT_EQ(t.PredictionsPending(), 1u);
  EXPECT_TRUE(t.Outstanding());
  t.predictions_timed_out = 1;
  EXPECT_EQ(t.PredictionsPending(), 0u);
  EXPECT_FALSE(t.Outstanding());
}

TEST(BotReportTest, AWalkIsCleanWhenEveryStepWasAcceptedAndPositionsCame) {
  Totals t;
  EXPECT_TRUE(WalkedCleanly(t)) << "nothing sent, nothing to judge";
  t.predictions_sent = 4;
  t.predictions_accepted = 4;
  EXPECT_FALSE(WalkedCleanly(t)) << "steps accepted and no position heard";
  t.positions = 4;
  EXPECT_TRUE(WalkedCleanly(t));
  t.predictions_refused = 2;
  EXPECT_TRUE(WalkedCleanly(t)) << "a step the client refused was never sent: nothing to undo";
  t.predictions_sent = 5;
  EXPECT_FALSE(WalkedCleanly(t)) << "one still pending";
  t.predictions_timed_out = 1;
  EXPECT_FALSE(WalkedCleanly(t)) << "one rolled back";
}

TEST(BotReportTest, TheSummaryJudgesTheWalkAndNamesClientsWithoutALink) {
  Totals t;
  t.predictions_sent = 2;
  t.predictions_accepted = 1;
  t.predictions_rejected = 1;
  t.positions = 3;
  RunCost cost;
  ::testing::internal::CaptureStdout();
  EXPECT_FALSE(PrintSummary(t, 3, 3, false, cost, 1)) << "a step was rolled back";
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, "molt-bot: done: " + Line(t, 3, 3) + "\nmolt-bot: walk: " + WalkLine(t, 1, 3) +
                     "\nmolt-bot: walk: 2 of 3 connected clients had no datagram link open: their "
                     "steps and positions went by the reliable link (does the server offer one, "
                     "moltd --udp?)\n"
                     "molt-bot: cpu 0.000 s in 0.0 s of running (0.00% of a core), 0 wakeups\n");
  t.predictions_rejected = 0;
  t.predictions_accepted = 2;
  ::testing::internal::CaptureStdout();
  EXPECT_TRUE(PrintSummary(t, 3, 3, false, cost, 3));
  const std::string clean = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(clean.find("datagram links 3/3 open"), std::string::npos) << clean;
  EXPECT_EQ(clean.find("no datagram link open"), std::string::npos) << clean;
  ::testing::internal::CaptureStdout();
  EXPECT_TRUE(PrintSummary(t, 3, 3, false, cost)) << "without --udp the walk is not printed";
  EXPECT_EQ(::testing::internal::GetCapturedStdout().find("walk:"), std::string::npos);
}

}  // namespace
}  // namespace molt::bot
