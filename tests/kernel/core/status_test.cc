// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <molt/kernel/status.h>

#include <string>

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

int g_macro_evaluations = 0;

Status MacroCounted(Status s) {
  ++g_macro_evaluations;
  return s;
}

Result<int> MacroCountedValue(Result<int> r) {
  ++g_macro_evaluations;
  return r;
}

Status Chain(Status first, int* reached) {
  MOLT_RETURN_IF_ERROR(MacroCounted(std::move(first)));
  *reached = 1;
  return Status::Ok();
}

Result<std::string> Doubled(Result<int> in) {
  MOLT_ASSIGN_OR_RETURN(int v, MacroCountedValue(std::move(in)));
  std::string out;
  MOLT_ASSIGN_OR_RETURN(out, Result<std::string>(std::to_string(v * 2)));
  return out;
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheErrorAndEvaluatesOnce) {
  g_macro_evaluations = 0;
  int reached = 0;
  EXPECT_EQ(Chain(Status::NotFound("no such channel"), &reached),
            Status::NotFound("no such channel"));
  EXPECT_EQ(reached, 0);
  EXPECT_EQ(g_macro_evaluations, 1);
  EXPECT_TRUE(Chain(Status::Ok(), &reached).ok());
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(g_macro_evaluations, 2);
}

TEST(StatusMacrosTest, AssignOrReturnDeclaresAssignsOrReturnsTheStatus) {
  g_macro_evaluations = 0;
  Result<std::string> ok = Doubled(21);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "42");
  Result<std::string> failed = Doubled(Status::Stale("handle 7 is not live"));
  EXPECT_EQ(failed.status(), Status::Stale("handle 7 is not live"));
  EXPECT_EQ(g_macro_evaluations, 2);
}

}  // namespace
}  // namespace molt::kernel
