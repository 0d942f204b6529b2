// SPDX-License-Identifier: Apache-2.0
// ServingState (deploy/serving_state.h): the head file a reload swaps in follows the pin, the
// branch's head and a skipped head; the applied seq is the registry's.
#include "kernel/src/deploy/serving_state.h"

#include <gtest/gtest.h>

#include "kernel/src/deploy/registry.h"
#include "tests/kernel/deploy/test_builds.h"

namespace molt::kernel::deploy {
namespace {

using test::TestDir;

class ServingStateTest : public ::testing::Test {
 protected:
  std::uint64_t Deploy(const std::string& sha) {
    Deployment d;
    d.branch = "prod";
    d.build = sha;
    d.build_id = "abc1234-" + sha.substr(0, 6);
    return registry_->Record(d).value().seq;
  }

  TestDir dir_;
  std::unique_ptr<Registry> registry_ = Registry::Open(dir_ / "registry").value();
  ServingState serving_{*registry_, "prod"};
  const std::string a_ = std::string(64, 'a');
  const std::string b_ = std::string(64, 'b');
};

TEST_F(ServingStateTest, TheHeadFileIsThePinsElseTheHeadsElseTheAppliedOneWhenSkipped) {
  serving_.Refresh();
  EXPECT_EQ(serving_.HeadFile(), "");  // no head, no pin
  const std::uint64_t one = Deploy(a_);
  ASSERT_TRUE(serving_.SetApplied(one).ok());
  const std::uint64_t two = Deploy(b_);
  serving_.Refresh();
  EXPECT_EQ(serving_.HeadFile(), registry_->BuildPath(b_));
  serving_.SetSkipped(two);  // outside #2's rollout: #1 stays
  EXPECT_EQ(serving_.HeadFile(), registry_->BuildPath(a_));
  serving_.SetPin({b_, "abc1234-bbbbbb", "ana", 1});
  EXPECT_EQ(serving_.HeadFile(), registry_->BuildPath(b_));
  EXPECT_EQ(serving_.Kept(), std::set<std::string>{b_});
  serving_.ClearPin();
  EXPECT_EQ(serving_.HeadFile(), registry_->BuildPath(a_));
  EXPECT_TRUE(serving_.Kept().empty());
  serving_.SetSkipped(0);
  EXPECT_EQ(serving_.HeadFile(), registry_->BuildPath(b_));
}

TEST_F(ServingStateTest, TheAppliedSeqIsTheRegistrysAndSurvivesAReopen) {
  const std::uint64_t one = Deploy(a_);
  EXPECT_EQ(serving_.applied_seq(), 0u);
  ASSERT_TRUE(serving_.SetApplied(one).ok());
  EXPECT_EQ(serving_.applied_seq(), one);
  ServingState next(*registry_, "prod");
  EXPECT_EQ(next.applied_seq(), one);
  serving_.SetSwapped("abc1234-aaaaaa", one);
  EXPECT_EQ(serving_.swapped_seq(), one);
  serving_.ForgetSwapped();
  EXPECT_TRUE(serving_.swapped_id().empty());
}

}  // namespace
}  // namespace molt::kernel::deploy
