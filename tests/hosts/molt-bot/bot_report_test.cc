// SPDX-License-Identifier: Apache-2.0
// molt-bot's figures (hosts/molt-bot/bot_report.h): the quantiles, the progress line and the
// summary, byte for byte as scripts and tests read them.
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

}  // namespace
}  // namespace molt::bot
