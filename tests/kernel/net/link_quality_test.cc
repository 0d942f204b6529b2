// SPDX-License-Identifier: Apache-2.0
// LinkQuality (kernel/src/net/link_quality.h) alone: the median, jitter and loss of known rings,
// the rings' wrap-around, the empty cases, and a long random run against a plain recomputation.
#include "kernel/src/net/link_quality.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace molt::kernel::net {
namespace {

LinkQuality MakeLink(std::size_t window, std::size_t loss_window) {
  Result<LinkQuality> link = LinkQuality::Create(window, loss_window);
  EXPECT_TRUE(link.ok()) << link.status().ToString();
  return std::move(link).value();
}

TEST(LinkQualityTest, TheDefaultWindowsAreTheSpecs) {
  LinkQuality link;
  EXPECT_EQ(link.window(), 10u);
  EXPECT_EQ(link.loss_window(), 40u);
}

TEST(LinkQualityTest, WithNothingKeptEveryFigureIsZero) {
  LinkQuality link;
  EXPECT_EQ(link.samples(), 0u);
  EXPECT_EQ(link.probes(), 0u);
  EXPECT_EQ(link.Median(), 0);
  EXPECT_EQ(link.Jitter(), 0);
  EXPECT_EQ(link.Loss(), 0);
  link.AddProbe(true);  // probes alone: no RTT figures
  EXPECT_EQ(link.Median(), 0);
  EXPECT_EQ(link.Loss(), 0);
  EXPECT_TRUE(link.AddRtt(0.02));  // RTTs alone: no loss
  LinkQuality other;
  EXPECT_TRUE(other.AddRtt(0.02));
  EXPECT_EQ(other.Loss(), 0);
  EXPECT_EQ(other.probes(), 0u);
}

TEST(LinkQualityTest, CreateRefusesAnEmptyOrHugeWindow) {
  Result<LinkQuality> link = LinkQuality::Create(0, 40);
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(link.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(link.status().message(),
            "link quality: window must be 1 to 4096 RTT samples (got 0); the spec's default is 10");
  link = LinkQuality::Create(10, 0);
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(link.status().message(),
            "link quality: loss_window must be 1 to 4096 probe outcomes (got 0); the spec's "
            "default is 40");
  link = LinkQuality::Create(10, 1'000'000'000);
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(link.status().message(),
            "link quality: loss_window must be 1 to 4096 probe outcomes (got 1000000000); the "
            "spec's default is 40");
  EXPECT_FALSE(LinkQuality::Create(4097, 40).ok());
  EXPECT_TRUE(LinkQuality::Create(1, 1).ok());
  EXPECT_TRUE(LinkQuality::Create(4096, 4096).ok());
}

TEST(LinkQualityTest, AnRttThatIsNegativeOrNotANumberIsNotKept) {
  LinkQuality link;
  EXPECT_FALSE(link.AddRtt(-0.001));
  EXPECT_FALSE(link.AddRtt(std::nan("")));
  EXPECT_FALSE(link.AddRtt(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(link.samples(), 0u);
  EXPECT_TRUE(link.AddRtt(0));
  EXPECT_EQ(link.samples(), 1u);
}

TEST(LinkQualityTest, TheMedianOfAnOddCountIsTheMiddleSample) {
  LinkQuality link;
  for (double rtt : {0.050, 0.010, 0.030, 0.200, 0.020}) {
    link.AddRtt(rtt);
  }
  EXPECT_DOUBLE_EQ(link.Median(), 0.030);  // 10 20 [30] 50 200 ms
  // |10-30| + |20-30| + 0 + |50-30| + |200-30| = 220 ms over 5.
  EXPECT_DOUBLE_EQ(link.Jitter(), 0.044);
}

TEST(LinkQualityTest, TheMedianOfAnEvenCountIsTheMeanOfTheTwoMiddleSamples) {
  LinkQuality link;
  for (double rtt : {0.100, 0.010, 0.030, 0.020}) {
    link.AddRtt(rtt);
  }
  EXPECT_DOUBLE_EQ(link.Median(), 0.025);  // 10 [20 30] 100 ms
  // 15 + 5 + 5 + 75 = 100 ms over 4.
  EXPECT_DOUBLE_EQ(link.Jitter(), 0.025);
  LinkQuality one;
  one.AddRtt(0.042);
  EXPECT_DOUBLE_EQ(one.Median(), 0.042);
  EXPECT_EQ(one.Jitter(), 0);
  one.AddRtt(0.042);  // equal samples
  EXPECT_DOUBLE_EQ(one.Median(), 0.042);
  EXPECT_EQ(one.Jitter(), 0);
}

TEST(LinkQualityTest, OldSamplesFallOutOfTheRttRing) {
  LinkQuality link = MakeLink(3, 40);
  link.AddRtt(0.001);
  link.AddRtt(0.002);
  link.AddRtt(0.003);
  EXPECT_DOUBLE_EQ(link.Median(), 0.002);
  link.AddRtt(0.100);  // 1 ms falls out: 2 3 100
  EXPECT_EQ(link.samples(), 3u);
  EXPECT_DOUBLE_EQ(link.Median(), 0.003);
  link.AddRtt(0.100);  // 3 100 100
  EXPECT_DOUBLE_EQ(link.Median(), 0.100);
  link.AddRtt(0.100);  // a full turn: 100 100 100
  EXPECT_DOUBLE_EQ(link.Median(), 0.100);
  EXPECT_EQ(link.Jitter(), 0);
  link.AddRtt(0.004);  // the oldest 100 falls out, wherever it sits in order
  EXPECT_DOUBLE_EQ(link.Median(), 0.100);
  EXPECT_NEAR(link.Jitter(), 0.096 / 3, 1e-15);
  EXPECT_EQ(link.samples(), 3u);
}

TEST(LinkQualityTest, OldOutcomesFallOutOfTheProbeRing) {
  LinkQuality link = MakeLink(10, 4);
  link.AddProbe(false);
  EXPECT_EQ(link.Loss(), 1);
  link.AddProbe(false);
  link.AddProbe(true);
  link.AddProbe(true);
  EXPECT_EQ(link.probes(), 4u);
  EXPECT_DOUBLE_EQ(link.Loss(), 0.5);
  link.AddProbe(true);  // the first loss falls out
  EXPECT_DOUBLE_EQ(link.Loss(), 0.25);
  link.AddProbe(true);  // and the second
  EXPECT_EQ(link.Loss(), 0);
  link.AddProbe(false);
  EXPECT_DOUBLE_EQ(link.Loss(), 0.25);
  EXPECT_EQ(link.probes(), 4u);
}

TEST(LinkQualityTest, ARingOfOneHoldsTheLatest) {
  LinkQuality link = MakeLink(1, 1);
  link.AddRtt(0.5);
  link.AddRtt(0.1);
  EXPECT_DOUBLE_EQ(link.Median(), 0.1);
  EXPECT_EQ(link.Jitter(), 0);
  link.AddProbe(false);
  link.AddProbe(true);
  EXPECT_EQ(link.Loss(), 0);
  EXPECT_EQ(link.samples(), 1u);
  EXPECT_EQ(link.probes(), 1u);
}

// Thousands of samples (with repeats, so equal values sit side by side in the sorted copy) on
// several window sizes, each figure checked against a recomputation from the last `window`.
TEST(LinkQualityTest, ALongRunMatchesARecomputationOfTheLastSamples) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> ms(1, 40);
  std::bernoulli_distribution answered(0.8);
  for (std::size_t window : {1u, 2u, 3u, 10u, 11u}) {
    LinkQuality link = MakeLink(window, window * 4);
    std::deque<double> rtts;
    std::deque<bool> outcomes;
    for (int i = 0; i < 3000; ++i) {
      const double rtt = ms(rng) / 1000.0;
      link.AddRtt(rtt);
      rtts.push_back(rtt);
      if (rtts.size() > window) {
        rtts.pop_front();
      }
      const bool a = answered(rng);
      link.AddProbe(a);
      outcomes.push_back(a);
      if (outcomes.size() > window * 4) {
        outcomes.pop_front();
      }
      std::vector<double> sorted(rtts.begin(), rtts.end());
      std::sort(sorted.begin(), sorted.end());
      const std::size_t n = sorted.size();
      const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
      double deviation = 0;
      for (double v : sorted) {
        deviation += std::abs(v - median);
      }
      const double lost = static_cast<double>(std::count(outcomes.begin(), outcomes.end(), false));
      ASSERT_EQ(link.samples(), n);
      ASSERT_DOUBLE_EQ(link.Median(), median) << "window " << window << " sample " << i;
      ASSERT_NEAR(link.Jitter(), deviation / static_cast<double>(n), 1e-12);
      ASSERT_DOUBLE_EQ(link.Loss(), lost / static_cast<double>(outcomes.size()));
    }
  }
}

}  // namespace
}  // namespace molt::kernel::net
