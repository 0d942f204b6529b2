// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/core/hooks.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace molt::kernel {
namespace {

class HooksTest : public ::testing::Test {
 protected:
  Hooks::Handler Pass(std::string name) {
    return [this, name](HookContext&) {
      order_.push_back(name);
      return true;
    };
  }
  Hooks hooks_{Hooks::Options{.warn_on_error = false}};
  std::vector<std::string> order_;
  HookContext ctx_;
};

TEST_F(HooksTest, PointWithoutHandlersPasses) {
  HookResult r = hooks_.Fire("Intent.Nothing", ctx_);
  EXPECT_TRUE(r.passed);
  EXPECT_TRUE(r.error.empty());
  EXPECT_EQ(ctx_.point, "Intent.Nothing");
}

TEST_F(HooksTest, FalseCancelsTheChainAndLaterHandlersDoNotRun) {
  hooks_.On("Intent.Buy", Pass("a"));
  hooks_.On("Intent.Buy", [&](HookContext&) {
    order_.push_back("veto");
    return false;
  });
  hooks_.On("Intent.Buy", Pass("c"));
  HookResult r = hooks_.Fire("Intent.Buy", ctx_);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.error.empty());
  EXPECT_EQ(order_, (std::vector<std::string>{"a", "veto"}));
}

TEST_F(HooksTest, LowerPriorityRunsFirstDefaultIs100AndTiesKeepRegistrationOrder) {
  hooks_.On("P", Pass("default-1"));
  hooks_.On("P", Pass("late"), 200);
  hooks_.On("P", Pass("rules"), 5);
  hooks_.On("P", Pass("default-2"), Hooks::kDefaultPriority);
  hooks_.On("P", Pass("gate"), 50);
  hooks_.Fire("P", ctx_);
  EXPECT_EQ(order_, (std::vector<std::string>{"rules", "gate", "default-1", "default-2", "late"}));
}

TEST_F(HooksTest, HandlersMayRewriteTheContext) {
  hooks_.On("Intent.Move", [](HookContext& c) {
    c.args[0] = Value::Double(std::min(c.args[0].AsDouble(), 16.0));  // clamp speed
    return true;
  });
  double seen = 0;
  hooks_.On("Intent.Move", [&](HookContext& c) {
    seen = c.args[0].AsDouble();
    return c.session == 42;
  });
  Value args[] = {Value::Double(99.0)};
  HookContext ctx{.args = args, .session = 42};
  EXPECT_TRUE(hooks_.Fire("Intent.Move", ctx).passed);
  EXPECT_EQ(seen, 16.0);
  EXPECT_EQ(args[0].AsDouble(), 16.0);  // the caller's handler gets the mutated copy
}

TEST_F(HooksTest, ThrowingHandlerRejectsAFailClosedPointWithItsErrorText) {
  hooks_.On("Intent.Buy", [](HookContext&) -> bool { throw std::runtime_error("no price"); });
  hooks_.On("Intent.Buy", Pass("never"));
  HookResult r = hooks_.Fire("Intent.Buy", ctx_);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.error, "hook \"Intent.Buy\": handler threw: no price");
  EXPECT_TRUE(order_.empty());
}

TEST_F(HooksTest, FailOpenPointContinuesPastAThrowAndStillReportsIt) {
  hooks_.Define("Net.RateLimited", Hooks::Mode::kFailOpen);
  hooks_.On("Net.RateLimited", [](HookContext&) -> bool { throw std::runtime_error("oops"); });
  hooks_.On("Net.RateLimited", Pass("after"));
  HookResult r = hooks_.Fire("Net.RateLimited", ctx_);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.error, "hook \"Net.RateLimited\": handler threw: oops");
  EXPECT_EQ(order_, std::vector<std::string>{"after"});
}

TEST_F(HooksTest, FailOpenStillHonoursAnExplicitFalse) {
  hooks_.Define("Party.CanInvite", Hooks::Mode::kFailOpen);
  hooks_.On("Party.CanInvite", [](HookContext&) { return false; });
  EXPECT_FALSE(hooks_.Fire("Party.CanInvite", ctx_).passed);
}

TEST_F(HooksTest, OnReturnsTheUnsubscribe) {
  Connection off = hooks_.On("P", [](HookContext&) { return false; });
  EXPECT_FALSE(hooks_.Fire("P", ctx_).passed);
  off.Disconnect();
  EXPECT_TRUE(hooks_.Fire("P", ctx_).passed);
}

TEST_F(HooksTest, KernelNamesAreReservedWithTheSpecText) {
  Status s = Hooks::CheckUserPointName("Kernel.SessionStart");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "hook point \"Kernel.SessionStart\" is kernel-reserved");
  EXPECT_TRUE(Hooks::CheckUserPointName("Intent.Buy").ok());
  EXPECT_TRUE(Hooks::CheckUserPointName("KernelPanic.Button").ok());
  EXPECT_FALSE(Hooks::CheckUserPointName("").ok());
}

TEST_F(HooksTest, HandlerAddedDuringAFireJoinsTheNextFire) {
  hooks_.On("P", [&](HookContext&) {
    order_.push_back("first");
    if (order_.size() == 1) {
      hooks_.On("P", Pass("early"), 1);  // sorts before "first"
      hooks_.On("P", Pass("late"), 500);
    }
    return true;
  });
  hooks_.Fire("P", ctx_);
  EXPECT_EQ(order_, std::vector<std::string>{"first"});
  hooks_.Fire("P", ctx_);
  EXPECT_EQ(order_, (std::vector<std::string>{"first", "early", "first", "late"}));
}

TEST_F(HooksTest, HandlerRemovedDuringAFireDoesNotRun) {
  Connection later;
  hooks_.On("P", [&](HookContext&) {
    later.Disconnect();
    return true;
  });
  later = hooks_.On("P", Pass("later"));
  EXPECT_TRUE(hooks_.Fire("P", ctx_).passed);
  EXPECT_TRUE(order_.empty());
}

TEST_F(HooksTest, ListPointsShowsModesHandlersAndCounters) {
  hooks_.Define("B.Open", Hooks::Mode::kFailOpen);
  hooks_.On("A.Closed", [](HookContext&) { return false; });
  hooks_.On(
      "A.Closed", [](HookContext&) { return true; }, 1);
  hooks_.Fire("A.Closed", ctx_);
  hooks_.Fire("A.Closed", ctx_);
  std::vector<Hooks::PointInfo> points = hooks_.ListPoints();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].name, "A.Closed");
  EXPECT_FALSE(points[0].fail_open);
  EXPECT_EQ(points[0].handlers, 2u);
  EXPECT_EQ(points[0].fired, 2u);
  EXPECT_EQ(points[0].rejected, 2u);
  EXPECT_EQ(points[1].name, "B.Open");
  EXPECT_TRUE(points[1].fail_open);
  EXPECT_EQ(points[1].handlers, 0u);
}

TEST_F(HooksTest, PreResolvedPointFiresTheSameChain) {
  Hooks::Point* point = hooks_.Resolve("Intent.Fire");
  hooks_.On(point, Pass("a"));
  hooks_.On("Intent.Fire", Pass("b"));
  EXPECT_TRUE(hooks_.Fire(point, ctx_).passed);
  EXPECT_EQ(order_, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(hooks_.fail_open(point));
}

// Chain cost is measured only while timing is on (the wire inspector turns it on): the fires it
// timed, their total and longest chain; points without handlers are never timed.
TEST_F(HooksTest, ChainsAreTimedOnlyWhileTimingIsOn) {
  Connection c = hooks_.On("Intent.Slow", [](HookContext&) {
    const TimePoint until = RealNow() + std::chrono::microseconds(200);
    while (RealNow() < until) {
    }
    return true;
  });
  auto info = [&](std::string_view name) {
    for (const Hooks::PointInfo& p : hooks_.ListPoints()) {
      if (p.name == name) {
        return p;
      }
    }
    ADD_FAILURE() << name;
    return Hooks::PointInfo{};
  };
  hooks_.Fire("Intent.Slow", ctx_);
  EXPECT_FALSE(hooks_.timing());
  EXPECT_EQ(info("Intent.Slow").timed, 0u);
  EXPECT_EQ(info("Intent.Slow").time_total.count(), 0);

  hooks_.SetTiming(true);
  hooks_.Fire("Intent.Slow", ctx_);
  hooks_.Fire("Intent.Slow", ctx_);
  hooks_.Resolve("Intent.Empty");
  hooks_.Fire("Intent.Empty", ctx_);
  hooks_.SetTiming(false);
  hooks_.Fire("Intent.Slow", ctx_);
  const Hooks::PointInfo slow = info("Intent.Slow");
  EXPECT_EQ(slow.fired, 4u);
  EXPECT_EQ(slow.timed, 2u);
  EXPECT_GE(slow.time_max, std::chrono::microseconds(200));
  EXPECT_GE(slow.time_total, 2 * std::chrono::microseconds(200));
  EXPECT_GE(slow.time_total, slow.time_max);
  EXPECT_EQ(info("Intent.Empty").timed, 0u);
}

}  // namespace
}  // namespace molt::kernel
