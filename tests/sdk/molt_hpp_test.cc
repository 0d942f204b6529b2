// SPDX-License-Identifier: Apache-2.0
// molt.hpp's error convention on its own: Result<T> holds a value or the Status saying why not,
// and MOLT_ASSIGN_OR_RETURN unwraps one or returns its Status. (The wrapper's calls into a host
// are exercised through real plugins: tests/fixtures/plugins/wrapper.cc, net.cc, controller.cc.)
#include <gtest/gtest.h>

#include <memory>
#include <molt/molt.hpp>
#include <string>

namespace {

molt::Result<std::unique_ptr<int>> Make(bool ok) {
  if (!ok) {
    return molt::Status(MOLT_ERR_NOT_FOUND, "no int today");
  }
  return std::make_unique<int>(7);
}

molt::Status Use(bool ok, int* out) {
  MOLT_ASSIGN_OR_RETURN(std::unique_ptr<int> p, Make(ok));  // move-only values move out
  MOLT_ASSIGN_OR_RETURN(*out, molt::Result<int>(*p * 6));   // an lvalue, and a second use
  return molt::Status::Ok();
}

TEST(MoltHppResultTest, HoldsTheValueOrTheStatusThatSaysWhyNot) {
  molt::Result<std::unique_ptr<int>> good = Make(true);
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(good.status().ok());
  EXPECT_EQ(**good, 7);
  molt::Result<std::unique_ptr<int>> bad = Make(false);
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(bad.status().code(), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(bad.status().message(), "no int today");
  EXPECT_EQ(*std::move(bad).value_or(std::make_unique<int>(1)), 1);
  // A Result cannot be made of an OK status: there would be no value.
  molt::Result<int> odd{molt::Status::Ok()};
  EXPECT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().code(), MOLT_ERR_INTERNAL);
}

TEST(MoltHppResultTest, AssignOrReturnUnwrapsOrReturnsTheStatus) {
  int out = 0;
  EXPECT_TRUE(Use(true, &out).ok());
  EXPECT_EQ(out, 42);
  out = 0;
  const molt::Status s = Use(false, &out);
  EXPECT_EQ(s.code(), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(s.message(), "no int today");
  EXPECT_EQ(out, 0);
}

}  // namespace
