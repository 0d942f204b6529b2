// SPDX-License-Identifier: Apache-2.0
// Impairment (hosts/molt-relay/impairment.h): molt-relay's seeded model. The same seed gives the
// same verdicts; drop 0 and 1 are exact; over 10,000 datagrams the losses, duplicates and
// held-back copies stay within wide binomial bounds (six standard deviations, each run seeded,
// so a pass is a pass every time); every delay stays within D-J..D+J, never below zero.
#include "hosts/molt-relay/impairment.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

namespace molt::relay {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr int kRun = 10000;

// What `n` verdicts of a model with `settings` and `seed` were.
std::vector<Verdict> Verdicts(const ImpairmentSettings& settings, std::uint64_t seed,
                              int n = kRun) {
  Impairment model(settings, seed);
  std::vector<Verdict> verdicts;
  for (int i = 0; i < n; ++i) {
    verdicts.push_back(model.Next());
  }
  return verdicts;
}

bool Same(const Verdict& a, const Verdict& b) {
  if (a.copies != b.copies) {
    return false;
  }
  for (int i = 0; i < a.copies; ++i) {
    if (a.copy[i].delay != b.copy[i].delay || a.copy[i].reordered != b.copy[i].reordered) {
      return false;
    }
  }
  return true;
}

// Whether `count` successes of `trials` at probability `p` are within six standard deviations.
void ExpectBinomial(std::uint64_t count, int trials, double p) {
  const double mean = trials * p;
  const double sd = std::sqrt(trials * p * (1 - p));
  EXPECT_GE(static_cast<double>(count), mean - 6 * sd) << "p " << p << " over " << trials;
  EXPECT_LE(static_cast<double>(count), mean + 6 * sd) << "p " << p << " over " << trials;
}

ImpairmentSettings Everything() {
  ImpairmentSettings s;
  s.drop = 0.1;
  s.duplicate = 0.1;
  s.reorder = 0.1;
  s.delay = milliseconds(20);
  s.jitter = milliseconds(5);
  return s;
}

TEST(ImpairmentTest, SameSeedGivesTheSameVerdicts) {
  const std::vector<Verdict> a = Verdicts(Everything(), 42);
  const std::vector<Verdict> b = Verdicts(Everything(), 42);
  for (int i = 0; i < kRun; ++i) {
    ASSERT_TRUE(Same(a[i], b[i])) << "datagram " << i;
  }
}

TEST(ImpairmentTest, AnotherSeedGivesOtherVerdicts) {
  const std::vector<Verdict> a = Verdicts(Everything(), 1);
  const std::vector<Verdict> b = Verdicts(Everything(), 2);
  int differ = 0;
  for (int i = 0; i < kRun; ++i) {
    differ += Same(a[i], b[i]) ? 0 : 1;
  }
  EXPECT_GT(differ, kRun / 2) << "jitter alone makes nearly every verdict differ";
}

TEST(ImpairmentTest, NoImpairmentSendsEachDatagramOnceAtOnce) {
  for (const Verdict& v : Verdicts(ImpairmentSettings{}, 7)) {
    ASSERT_EQ(v.copies, 1);
    ASSERT_EQ(v.copy[0].delay, microseconds(0));
    ASSERT_FALSE(v.copy[0].reordered);
  }
}

TEST(ImpairmentTest, DropOneLosesEveryDatagram) {
  ImpairmentSettings s = Everything();
  s.drop = 1;
  s.duplicate = 1;
  for (const Verdict& v : Verdicts(s, 7)) {
    ASSERT_TRUE(v.dropped());
  }
}

TEST(ImpairmentTest, DropFivePercentLosesAboutFivePercent) {
  ImpairmentSettings s;
  s.drop = 0.05;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    std::uint64_t lost = 0;
    for (const Verdict& v : Verdicts(s, seed)) {
      lost += v.dropped() ? 1 : 0;
    }
    ExpectBinomial(lost, kRun, 0.05);
  }
}

TEST(ImpairmentTest, DuplicatesAndHeldBackCopiesFollowTheirProbabilities) {
  ImpairmentSettings s;
  s.drop = 0.2;
  s.duplicate = 0.1;
  s.reorder = 0.3;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    std::uint64_t kept = 0;
    std::uint64_t twice = 0;
    std::uint64_t copies = 0;
    std::uint64_t held = 0;
    for (const Verdict& v : Verdicts(s, seed)) {
      kept += v.dropped() ? 0 : 1;
      twice += v.copies == 2 ? 1 : 0;
      for (int i = 0; i < v.copies; ++i) {
        ++copies;
        held += v.copy[i].reordered ? 1 : 0;
      }
    }
    ExpectBinomial(kRun - kept, kRun, 0.2);
    ExpectBinomial(twice, static_cast<int>(kept), 0.1);  // of the datagrams not lost
    ExpectBinomial(held, static_cast<int>(copies), 0.3);
  }
}

TEST(ImpairmentTest, DelaysStayWithinDelayPlusOrMinusJitter) {
  ImpairmentSettings s;
  s.delay = milliseconds(50);
  s.jitter = milliseconds(20);
  s.duplicate = 0.5;
  microseconds least = microseconds::max();
  microseconds most = microseconds::min();
  for (const Verdict& v : Verdicts(s, 3)) {
    for (int i = 0; i < v.copies; ++i) {
      ASSERT_GE(v.copy[i].delay, milliseconds(30));
      ASSERT_LE(v.copy[i].delay, milliseconds(70));
      least = std::min(least, v.copy[i].delay);
      most = std::max(most, v.copy[i].delay);
    }
  }
  EXPECT_LT(least, milliseconds(31)) << "the jitter spreads over the whole range";
  EXPECT_GT(most, milliseconds(69));
}

TEST(ImpairmentTest, JitterBeyondTheDelayNeverWaitsLessThanZero) {
  ImpairmentSettings s;
  s.delay = milliseconds(5);
  s.jitter = milliseconds(20);
  int at_zero = 0;
  for (const Verdict& v : Verdicts(s, 3)) {
    ASSERT_GE(v.copy[0].delay, microseconds(0));
    ASSERT_LE(v.copy[0].delay, milliseconds(25));
    at_zero += v.copy[0].delay == microseconds(0) ? 1 : 0;
  }
  EXPECT_GT(at_zero, kRun / 4) << "-15..+25 ms: three eighths would be below zero";
}

TEST(ImpairmentTest, HeldBackCopiesWaitAnExtraDelayPlusJitter) {
  ImpairmentSettings s;
  s.delay = milliseconds(10);
  s.jitter = milliseconds(5);
  s.reorder = 1;
  for (const Verdict& v : Verdicts(s, 3)) {
    ASSERT_TRUE(v.copy[0].reordered);
    ASSERT_GE(v.copy[0].delay, milliseconds(5 + 15));
    ASSERT_LE(v.copy[0].delay, milliseconds(15 + 15));
  }
}

TEST(ImpairmentTest, HoldBackIsAtLeastAMillisecondWithNoDelay) {
  ImpairmentSettings s;
  s.reorder = 1;
  EXPECT_EQ(Impairment(s, 1).HoldBack(), milliseconds(1));
  for (const Verdict& v : Verdicts(s, 3, 100)) {
    ASSERT_EQ(v.copy[0].delay, milliseconds(1));
  }
}

TEST(ImpairmentTest, ChangingOneProbabilityKeepsTheOtherDecisions) {
  ImpairmentSettings lossless = Everything();
  lossless.drop = 0;
  ImpairmentSettings lossy = Everything();
  lossy.drop = 0.5;
  const std::vector<Verdict> a = Verdicts(lossless, 9);
  const std::vector<Verdict> b = Verdicts(lossy, 9);
  int kept = 0;
  for (int i = 0; i < kRun; ++i) {
    if (!b[i].dropped()) {
      ++kept;
      ASSERT_TRUE(Same(a[i], b[i])) << "datagram " << i;
    }
  }
  EXPECT_GT(kept, 0);
}

}  // namespace
}  // namespace molt::relay
