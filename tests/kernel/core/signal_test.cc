// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/core/signal.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"

namespace molt::kernel {
namespace {

TEST(SignalTest, FiresHandlersInConnectionOrderWithTheArguments) {
  Signal<int, const std::string&> signal;
  std::vector<std::string> got;
  signal.Connect([&](int n, const std::string& s) { got.push_back("a" + std::to_string(n) + s); });
  signal.Connect([&](int n, const std::string& s) { got.push_back("b" + std::to_string(n) + s); });
  signal.Fire(1, "x");
  EXPECT_EQ(got, (std::vector<std::string>{"a1x", "b1x"}));
  EXPECT_EQ(signal.size(), 2u);
}

TEST(SignalTest, DisconnectStopsDelivery) {
  Signal<> signal;
  int runs = 0;
  Connection c = signal.Connect([&] { ++runs; });
  signal.Fire();
  c.Disconnect();
  EXPECT_FALSE(c.Connected());
  signal.Fire();
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(signal.empty());
}

TEST(SignalTest, DisconnectDuringFireSkipsTheDisconnectedHandler) {
  Signal<> signal;
  std::vector<std::string> got;
  Connection second;
  signal.Connect([&] {
    got.push_back("first");
    second.Disconnect();
  });
  second = signal.Connect([&] { got.push_back("second"); });
  signal.Fire();
  EXPECT_EQ(got, std::vector<std::string>{"first"});
}

TEST(SignalTest, HandlerMayDisconnectItselfDuringFire) {
  Signal<> signal;
  int runs = 0;
  Connection self;
  self = signal.Connect([&] {
    ++runs;
    self.Disconnect();
  });
  signal.Fire();
  signal.Fire();
  EXPECT_EQ(runs, 1);
}

TEST(SignalTest, OnceFiresOnlyOnceEvenWhenFiredFromItsOwnHandler) {
  Signal<> signal;
  int runs = 0;
  Connection c = signal.Once([&] {
    ++runs;
    signal.Fire();  // re-entrant fire does not call it again
  });
  signal.Fire();
  signal.Fire();
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(c.Connected());
}

TEST(SignalTest, HandlerConnectedDuringFireWaitsForTheNextFire) {
  Signal<> signal;
  int late = 0;
  signal.Connect([&] {
    if (signal.size() == 1) {
      signal.Connect([&] { ++late; });
    }
  });
  signal.Fire();
  EXPECT_EQ(late, 0);
  signal.Fire();
  EXPECT_EQ(late, 1);
}

TEST(SignalTest, ThrowingHandlerIsIsolated) {
  std::vector<std::string> lines;
  auto capture = Logger::Get().Capture(
      [&](std::string_view line, LogLevel) { lines.push_back(std::string(line)); });
  Signal<> signal;
  int after = 0;
  signal.Connect([] { throw std::runtime_error("nope"); });
  signal.Connect([&] { ++after; });
  EXPECT_NO_THROW(signal.Fire());
  EXPECT_EQ(after, 1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "[molt] signal handler threw: nope");
}

TEST(SignalTest, ConnectionMayOutliveTheSignal) {
  Connection c;
  {
    Signal<> signal;
    c = signal.Connect([] {});
    EXPECT_TRUE(c.Connected());
  }
  EXPECT_FALSE(c.Connected());
  c.Disconnect();
}

TEST(SignalTest, DisconnectReleasesTheHandler) {
  auto token = std::make_shared<int>(0);
  Signal<> signal;
  Connection c = signal.Connect([token] {});
  EXPECT_EQ(token.use_count(), 2);
  c.Disconnect();
  EXPECT_EQ(token.use_count(), 1);
}

TEST(SignalTest, DisconnectAllDuringFireStopsTheRest) {
  Signal<> signal;
  int runs = 0;
  signal.Connect([&] {
    ++runs;
    signal.DisconnectAll();
  });
  signal.Connect([&] { ++runs; });
  signal.Fire();
  signal.Fire();
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace molt::kernel
