// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/core/scope.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernel/src/core/bus.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/core/scheduler.h"

namespace molt::kernel {
namespace {

struct Destroyable {
  std::vector<std::string>* log;
  void Destroy() { log->push_back("destroy"); }
};
struct Disconnectable {
  std::vector<std::string>* log;
  void Disconnect() { log->push_back("disconnect"); }
};
struct Cancellable {
  std::vector<std::string>* log;
  void Cancel() { log->push_back("cancel"); }
};
struct Closable {
  std::vector<std::string>* log;
  void Close() { log->push_back("close"); }
};
struct Custom {
  std::vector<std::string>* log;
  void Shutdown() { log->push_back("shutdown"); }
};

TEST(ScopeTest, RunsCleanupsInReverseRegistrationOrder) {
  std::vector<int> order;
  Scope scope;
  for (int i = 0; i < 4; ++i) {
    scope.Add([&order, i] { order.push_back(i); });
  }
  EXPECT_EQ(scope.size(), 4u);
  scope.Close();
  EXPECT_EQ(order, (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(scope.size(), 0u);
}

TEST(ScopeTest, CloseIsIdempotentAndTheDestructorCloses) {
  int runs = 0;
  {
    Scope scope;
    scope.Add([&] { ++runs; });
    scope.Close();
    scope.Close();
    EXPECT_TRUE(scope.closed());
  }
  EXPECT_EQ(runs, 1);
  {
    Scope scope;
    scope.Add([&] { ++runs; });
  }
  EXPECT_EQ(runs, 2);
}

TEST(ScopeTest, FailingCleanupIsLoggedAndTheRestStillRun) {
  std::vector<std::string> lines;
  auto capture = Logger::Get().Capture(
      [&](std::string_view line, LogLevel) { lines.push_back(std::string(line)); });
  std::vector<int> order;
  Scope scope;
  scope.Add([&] { order.push_back(1); });
  scope.Add([] { throw std::runtime_error("socket already gone"); });
  scope.Add([&] { order.push_back(3); });
  scope.Close();
  EXPECT_EQ(order, (std::vector<int>{3, 1}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "[Scope] cleanup failed: socket already gone");
}

TEST(ScopeTest, ResourceAddedToAClosedScopeIsCleanedAtOnce) {
  Scope scope;
  scope.Close();
  int runs = 0;
  scope.Add([&] { ++runs; });
  EXPECT_EQ(runs, 1);
  scope.Close();
  EXPECT_EQ(runs, 1);
}

TEST(ScopeTest, ResourceAddedWhileClosingIsCleanedAtOnce) {
  Scope scope;
  std::vector<std::string> order;
  scope.Add([&] {
    order.push_back("outer");
    scope.Add([&] { order.push_back("added-during-close"); });
    order.push_back("outer-end");
  });
  scope.Close();
  EXPECT_EQ(order, (std::vector<std::string>{"outer", "added-during-close", "outer-end"}));
}

TEST(ScopeTest, AddReturnsTheStoredResource) {
  std::vector<std::string> log;
  Scope scope;
  Destroyable& d = scope.Add(Destroyable{&log});
  EXPECT_EQ(d.log, &log);
  d.Destroy();
  EXPECT_EQ(log.size(), 1u);
}

TEST(ScopeTest, DetectsDestroyDisconnectCancelAndClose) {
  std::vector<std::string> log;
  {
    Scope scope;
    scope.Add(Closable{&log});
    scope.Add(Cancellable{&log});
    scope.Add(Disconnectable{&log});
    scope.Add(Destroyable{&log});
  }
  EXPECT_EQ(log, (std::vector<std::string>{"destroy", "disconnect", "cancel", "close"}));
}

TEST(ScopeTest, AcceptsAnExplicitCleanupMethod) {
  std::vector<std::string> log;
  {
    Scope scope;
    scope.Add(Custom{&log}, &Custom::Shutdown);
  }
  EXPECT_EQ(log, std::vector<std::string>{"shutdown"});
}

TEST(ScopeTest, RemoveHandsTheResourceBackWithoutCleaningIt) {
  std::vector<std::string> log;
  Scope scope;
  scope.Add(Destroyable{&log});
  Destroyable& kept = scope.Add(Destroyable{&log});
  std::optional<Destroyable> back = scope.Remove(kept);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->log, &log);
  EXPECT_EQ(scope.size(), 1u);
  scope.Close();
  EXPECT_EQ(log.size(), 1u);
  Destroyable stranger{&log};
  EXPECT_FALSE(scope.Remove(stranger).has_value());
}

TEST(ScopeTest, ChildClosesWithItsParent) {
  std::vector<std::string> order;
  Scope parent;
  parent.Add([&] { order.push_back("parent-first"); });
  std::shared_ptr<Scope> child = parent.Child();
  child->Add([&] { order.push_back("child"); });
  parent.Add([&] { order.push_back("parent-last"); });
  parent.Close();
  EXPECT_TRUE(child->closed());
  EXPECT_EQ(order, (std::vector<std::string>{"parent-last", "child", "parent-first"}));
}

TEST(ScopeTest, DroppedChildStillClosesWithItsParent) {
  int runs = 0;
  Scope parent;
  parent.Child()->Add([&] { ++runs; });
  EXPECT_EQ(parent.size(), 1u);
  parent.Close();
  EXPECT_EQ(runs, 1);
}

TEST(ScopeTest, ChildClosedEarlyDetachesFromItsParent) {
  int runs = 0;
  Scope parent;
  std::shared_ptr<Scope> child = parent.Child();
  child->Add([&] { ++runs; });
  EXPECT_EQ(parent.size(), 1u);
  child->Close();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(parent.size(), 0u);
  parent.Close();
  EXPECT_EQ(runs, 1);
}

TEST(ScopeTest, ChildThatClosesItselfFromItsOwnCleanupIsSafe) {
  Scope parent;
  std::weak_ptr<Scope> weak;
  {
    std::shared_ptr<Scope> child = parent.Child();
    weak = child;
    child->Add([] {});
  }
  // The parent holds the only reference: closing the child early frees it at the end of Close.
  weak.lock()->Close();
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(parent.size(), 0u);
}

TEST(ScopeTest, ChildOfAClosedScopeIsBornClosed) {
  Scope parent;
  parent.Close();
  std::shared_ptr<Scope> child = parent.Child();
  EXPECT_TRUE(child->closed());
}

TEST(ScopeTest, OwnsBusConnectionsAndSchedulerTasks) {
  Bus bus;
  ManualClock clock;
  Scheduler scheduler(SchedulerOptions{.clock = &clock});
  int heard = 0;
  int ran = 0;
  {
    Scope scope;
    scope.Add(bus.Subscribe("T", [&](std::string_view, Args) { ++heard; }));
    scope.Add(scheduler.After(std::chrono::seconds(1), [&] { ++ran; }));
    bus.Publish("T");
  }
  bus.Publish("T");
  clock.Advance(std::chrono::seconds(2));
  scheduler.Step();
  EXPECT_EQ(heard, 1);
  EXPECT_EQ(ran, 0);
}

}  // namespace
}  // namespace molt::kernel
