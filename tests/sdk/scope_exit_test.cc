// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <molt/scope_exit.h>

namespace molt {
namespace {

TEST(ScopeExitTest, RunsWhenLeavingTheScope) {
  int runs = 0;
  {
    ScopeExit guard = [&]() noexcept { ++runs; };
    EXPECT_EQ(runs, 0);
  }
  EXPECT_EQ(runs, 1);
}

TEST(ScopeExitTest, CancelledGuardNeverRuns) {
  int runs = 0;
  {
    ScopeExit guard = [&]() noexcept { ++runs; };
    std::move(guard).Cancel();
  }
  EXPECT_EQ(runs, 0);
}

TEST(ScopeExitTest, InvokeRunsOnceNow) {
  int runs = 0;
  {
    ScopeExit guard = [&]() noexcept { ++runs; };
    std::move(guard).Invoke();
    EXPECT_EQ(runs, 1);
  }
  EXPECT_EQ(runs, 1);
}

TEST(ScopeExitTest, MovedGuardRunsOnceFromItsNewOwner) {
  int runs = 0;
  {
    ScopeExit first = [&]() noexcept { ++runs; };
    { ScopeExit second = std::move(first); }
    EXPECT_EQ(runs, 1);
  }
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace molt
