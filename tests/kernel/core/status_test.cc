// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <molt/kernel/status.h>

namespace molt::kernel {
namespace {

TEST(StatusTest, OkHasNoTextAndPrintsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(s.message().empty());
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_TRUE(s.Prefixed("ctx").ok());
}

TEST(StatusTest, ErrorsCarryCodeAndMessageAndTakePrefixes) {
  Status s = Status::NotFound("service \"Chat\" is not registered");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_EQ(s.ToString(), "not found: service \"Chat\" is not registered");
  Status p = s.Prefixed("plugin \"lobby\": start failed");
  EXPECT_EQ(p.code(), Status::Code::kNotFound);
  EXPECT_EQ(p.message(), "plugin \"lobby\": start failed: service \"Chat\" is not registered");
}

TEST(StatusTest, CodesAreFrozenAbiValues) {
  EXPECT_EQ(static_cast<int>(Status::Code::kOk), 0);
  EXPECT_EQ(static_cast<int>(Status::Code::kInvalidArgument), -1);
  EXPECT_EQ(static_cast<int>(Status::Code::kStale), -3);
  EXPECT_EQ(static_cast<int>(Status::Code::kIoError), -10);
  EXPECT_EQ(static_cast<int>(Status::Code::kCancelled), -11);
}

TEST(ResultTest, HoldsAValueOrAStatus) {
  Result<int> good = 7;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  EXPECT_TRUE(good.status().ok());
  Result<int> bad = Status::Stale("task 12 is gone");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kStale);
}

}  // namespace
}  // namespace molt::kernel
