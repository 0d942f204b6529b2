// SPDX-License-Identifier: Apache-2.0
// The load gauge (kernel/src/net/load_gauge.h), on the manual clock with real scheduler steps:
// steps that fill the time and leave work waiting make it overloaded after net.overload_seconds
// and calm ones take it back after as long; fewer deferring steps than half, or a few slow steps
// of an idle server, are not overload; 0 turns it off.
#include "kernel/src/net/load_gauge.h"

#include <gtest/gtest.h>

#include <chrono>

#include "net_parts_fixture.h"

namespace molt::kernel::net {
namespace {

using std::chrono::milliseconds;

class LoadGaugeTest : public NetPartsTest {};

TEST_F(LoadGaugeTest, WorkLeftWaitingForTwoSecondsIsOverloadAndTwoCalmSecondsEndIt) {
  LoadGauge load(kernel_->scheduler(), options_);
  Calm(milliseconds(3000));
  EXPECT_FALSE(load.Overloaded());
  bool seen = false;
  Busy(milliseconds(1800), [&] { seen = seen || load.Overloaded(); });
  EXPECT_FALSE(seen) << "overloaded before net.overload_seconds (2) passed";
  Busy(milliseconds(400));
  EXPECT_TRUE(load.Overloaded());
  EXPECT_EQ(load.figures().episodes, 1u);
  EXPECT_GE(load.figures().deferring, 0.5);
  EXPECT_GE(load.figures().busy, 0.5);
  // A calm second is not enough: a server on the edge does not flap.
  Calm(milliseconds(1000));
  EXPECT_TRUE(load.Overloaded());
  Calm(milliseconds(1200));
  EXPECT_FALSE(load.Overloaded());
  EXPECT_EQ(load.figures().deferring, 0);
  // Busy again: another episode.
  Busy(milliseconds(2600), [&] { (void)load.Overloaded(); });
  EXPECT_TRUE(load.Overloaded());
  EXPECT_EQ(load.figures().episodes, 2u);
}

// A server booting (a few long steps, all deferring) then idle: its first sample, when the first
// client arrives, spans it all, and the kernel thread was in steps a sliver of that time.
TEST_F(LoadGaugeTest, AFewSlowStepsOfAnIdleServerAreNotOverload) {
  LoadGauge load(kernel_->scheduler(), options_);
  Busy(milliseconds(30));
  clock_.Advance(std::chrono::seconds(10));
  EXPECT_FALSE(load.Overloaded());
  EXPECT_EQ(load.figures().deferring, 1);
  EXPECT_LT(load.figures().busy, 0.01);
}

TEST_F(LoadGaugeTest, OneSampleThatSpansTheWholeOverloadIsEnough) {
  LoadGauge load(kernel_->scheduler(), options_);
  Busy(milliseconds(2500));  // nobody asks meanwhile (no client arrives)
  EXPECT_TRUE(load.Overloaded());
}

TEST_F(LoadGaugeTest, FewerThanHalfTheStepsLeavingWorkWaitingIsNotOverload) {
  LoadGauge load(kernel_->scheduler(), options_);
  for (int i = 0; i < 100; ++i) {  // one step in three leaves work waiting, for about 6 s
    Busy(milliseconds(1));
    Calm(milliseconds(33));
    EXPECT_FALSE(load.Overloaded()) << "at step " << i * 3;
  }
  EXPECT_GT(load.figures().deferring, 0.1);
  EXPECT_LT(load.figures().deferring, 0.5);
}

TEST_F(LoadGaugeTest, ZeroSecondsTurnsItOff) {
  options_.overload_seconds = 0;
  LoadGauge load(kernel_->scheduler(), options_);
  Busy(milliseconds(5000), [&] { EXPECT_FALSE(load.Overloaded()); });
  EXPECT_EQ(load.figures().episodes, 0u);
}

}  // namespace
}  // namespace molt::kernel::net
