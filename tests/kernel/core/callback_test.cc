// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/core/callback.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>

namespace molt::kernel {
namespace {

struct Counted {
  explicit Counted(int* live) : live(live) { ++*live; }
  Counted(Counted&& o) noexcept : live(o.live) { ++*live; }
  Counted(const Counted& o) : live(o.live) { ++*live; }
  ~Counted() { --*live; }
  int* live;
};

TEST(CallbackTest, EmptyByDefaultAndAfterNull) {
  Callback<void()> cb;
  EXPECT_FALSE(cb);
  int n = 0;
  cb = [&n] { ++n; };
  EXPECT_TRUE(cb);
  cb();
  cb = nullptr;
  EXPECT_FALSE(cb);
  EXPECT_EQ(n, 1);
}

TEST(CallbackTest, PassesArgumentsAndReturnsResults) {
  Callback<int(int, std::string_view)> cb = [](int a, std::string_view s) {
    return a + static_cast<int>(s.size());
  };
  EXPECT_EQ(cb(2, "abc"), 5);
  Callback<bool(int&)> mutate = [](int& v) {
    v = 9;
    return true;
  };
  int v = 0;
  EXPECT_TRUE(mutate(v));
  EXPECT_EQ(v, 9);
}

TEST(CallbackTest, SmallNonTrivialTargetIsDestroyedExactlyOnce) {
  int live = 0;
  {
    Callback<void()> a = [c = Counted(&live)] { (void)c; };
    EXPECT_EQ(live, 1);
    Callback<void()> b = std::move(a);
    EXPECT_EQ(live, 1);
    EXPECT_FALSE(a);  // NOLINT: checking the moved-from state
    b = nullptr;
    EXPECT_EQ(live, 0);
  }
  EXPECT_EQ(live, 0);
}

TEST(CallbackTest, LargeTargetLivesOnTheHeapAndIsFreed) {
  int live = 0;
  {
    std::array<char, 64> big{};
    big[0] = 'x';
    Callback<char()> a = [big, c = Counted(&live)] { return big[0]; };
    EXPECT_EQ(live, 1);
    Callback<char()> b = std::move(a);
    EXPECT_EQ(b(), 'x');
    EXPECT_EQ(live, 1);
  }
  EXPECT_EQ(live, 0);
}

TEST(CallbackTest, AcceptsMoveOnlyTargets) {
  auto p = std::make_unique<int>(41);
  Callback<int()> cb = [p = std::move(p)] { return *p + 1; };
  Callback<int()> moved = std::move(cb);
  EXPECT_EQ(moved(), 42);
}

TEST(CallbackTest, EmplaceReplacesTheTargetInPlace) {
  int live = 0;
  Callback<int()> cb = [c = Counted(&live)] { return 1; };
  cb.Emplace([] { return 2; });
  EXPECT_EQ(live, 0);
  EXPECT_EQ(cb(), 2);
}

TEST(CallbackTest, MutableTargetKeepsItsState) {
  Callback<int()> counter = [n = 0]() mutable { return ++n; };
  counter();
  EXPECT_EQ(counter(), 2);
}

}  // namespace
}  // namespace molt::kernel
