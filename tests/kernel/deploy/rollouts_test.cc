// SPDX-License-Identifier: Apache-2.0
// Rollouts (deploy/rollouts.h) over real parts (deploy_parts.h): a deploy's errors as codes, a
// rollout this server is outside of, a widened one reaching it, a re-sign that never swaps.
// deploys_test.cc runs the same rules through Deploys and the API's answers.
#include "kernel/src/deploy/rollouts.h"

#include <gtest/gtest.h>

#include "tests/kernel/deploy/deploy_parts.h"
#include "tests/kernel/deploy/test_builds.h"

namespace molt::kernel::deploy {
namespace {

using test::DeployParts;
using test::TestDir;

class RolloutsTest : public ::testing::Test {
 protected:
  void Open(DeployParts::Options o = {}) {
    parts_ = std::make_unique<DeployParts>(dir_.path(), std::move(o));
    rollouts_ = std::make_unique<Rollouts>(parts_->rules(), parts_->rollout_parts());
  }
  Result<DeployOutcome> Deploy(DeployRequest r, int wait = 5) {
    return parts_->Await<DeployOutcome>(
        [&](Done<DeployOutcome> done) { rollouts_->Deploy(r, std::chrono::seconds(wait), done); });
  }
  DeployRequest To(const StoredBuild& b, std::uint32_t rollout = 100) {
    DeployRequest r;
    r.branch = "prod";
    r.build = b.sha256;
    r.rollout = rollout;
    return r;
  }

  TestDir dir_;
  std::unique_ptr<DeployParts> parts_;
  std::unique_ptr<Rollouts> rollouts_;
};

TEST_F(RolloutsTest, ErrorsCarryTheirCodeAndOnlyRefusalsAreKept) {
  Open();
  DeployRequest bad;
  bad.branch = "no spaces";
  bad.build = "x";
  EXPECT_EQ(Deploy(bad).status().code(), Status::Code::kInvalidArgument);
  DeployRequest unknown;
  unknown.branch = "prod";
  unknown.build = "nothing-stored";
  Result<DeployOutcome> missing = Deploy(unknown);
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "no stored build is named \"nothing-stored\" (a sha256, a build id or #SEQ; `molt "
            "builds` lists them, `molt deploy FILE.molt` uploads one)");
  const StoredBuild b = parts_->Store({});
  ASSERT_TRUE(Deploy(To(b)).ok());
  DeployRequest replay = To(b);
  replay.seq = 1;
  Result<DeployOutcome> refused = Deploy(replay);
  EXPECT_EQ(refused.status().code(), Status::Code::kRejected);
  EXPECT_EQ(refused.status().message(), "seq 1 is not newer than the applied 1 (replay?)");
  const std::vector<Refusals::Refusal> kept = parts_->refusals.Recent();
  ASSERT_EQ(kept.size(), 1u);  // the malformed and the missing are not refusals
  EXPECT_EQ(kept[0].kind, "seq");
}

TEST_F(RolloutsTest, AServerOutsideTheRolloutSkipsItAndKeepsServingTheAppliedBuild) {
  Open({.server_id = "a"});  // bucket 70
  const StoredBuild one = parts_->Store({});
  const StoredBuild two = parts_->Store({.id = "abc1234-000002", .bytes = "two"});
  ASSERT_EQ(Deploy(To(one))->deployment.result, "swapped");
  Result<DeployOutcome> narrow = Deploy(To(two, 50));
  ASSERT_TRUE(narrow.ok()) << narrow.status().ToString();
  EXPECT_FALSE(narrow->pending);
  EXPECT_EQ(narrow->deployment.result, "skipped");
  EXPECT_EQ(narrow->deployment.reason, "outside the 50% rollout (this server's bucket is 70)");
  EXPECT_EQ(parts_->Swaps(), std::vector<std::string>{"abc1234-000001 deploy #1"});
  // The head moved to #2; a reload here swaps the applied #1 in again.
  EXPECT_EQ(parts_->serving.skipped_seq(), 2u);
  EXPECT_EQ(parts_->serving.HeadFile(), parts_->registry->BuildPath(one.sha256));
  // Widened past the bucket, the head reaches this server.
  DeployRequest widen;
  widen.kind = "widen";
  widen.branch = "prod";
  widen.rollout = 80;
  Result<DeployOutcome> wide = Deploy(widen);
  ASSERT_TRUE(wide.ok()) << wide.status().ToString();
  EXPECT_EQ(wide->deployment.result, "swapped");
  EXPECT_EQ(wide->deployment.rollout, 80u);
  EXPECT_EQ(parts_->serving.skipped_seq(), 0u);
  EXPECT_EQ(parts_->serving.HeadFile(), parts_->registry->BuildPath(two.sha256));
  // Narrower than the head's own share: a refusal.
  widen.rollout = 60;
  EXPECT_EQ(Deploy(widen).status().message(),
            "#2 (the head of prod) reaches 80% of its servers already: --widen names a larger "
            "share");
}

TEST_F(RolloutsTest, AReSignNamesTheHeadAndMovesTheAppliedSeqWithoutASwap) {
  Open();
  const StoredBuild one = parts_->Store({});
  const StoredBuild two = parts_->Store({.id = "abc1234-000002", .bytes = "two"});
  ASSERT_EQ(Deploy(To(one))->deployment.result, "swapped");
  DeployRequest resign = To(two);
  resign.kind = "resign";
  Result<DeployOutcome> wrong = Deploy(resign);
  EXPECT_EQ(wrong.status().code(), Status::Code::kRejected);
  EXPECT_EQ(wrong.status().message(), "a re-sign names the head of prod (build " +
                                          one.sha256.substr(0, 12) + "), not build " + two.id +
                                          ": deploy that build instead");
  resign.build = one.sha256;
  Result<DeployOutcome> again = Deploy(resign);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->deployment.result, "adopted");
  EXPECT_EQ(again->deployment.reason, "re-signed: the same build, no swap");
  EXPECT_EQ(parts_->Swaps().size(), 1u);
  EXPECT_EQ(parts_->serving.applied_seq(), 2u);
}

TEST_F(RolloutsTest, ADeployThatDoesNotWaitAnswersPendingAndSwapsAfter) {
  Open();
  const StoredBuild b = parts_->Store({});
  Result<DeployOutcome> now = Deploy(To(b), /*wait=*/0);
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(now->pending);
  EXPECT_FALSE(now->timed_out);
  EXPECT_EQ(now->deployment.result, "pending");
  // The pending answer came from inside the call's task on the deploy thread, which asked for the
  // swap after it: the second Run is posted after that task ended, so after the swap's answer.
  parts_->Run([] {});
  parts_->Run([] {});
  EXPECT_EQ(parts_->registry->FindDeployment(1)->result, "swapped");
  EXPECT_EQ(parts_->serving.applied_seq(), 1u);
}

TEST_F(RolloutsTest, AHealthWindowRollbackOfTheSwappedBuildMarksItFailedHere) {
  Open();
  const StoredBuild b = parts_->Store({});
  ASSERT_EQ(Deploy(To(b))->deployment.result, "swapped");
  parts_->Run([&] { rollouts_->RolledBack("another-build", "health"); });
  EXPECT_EQ(parts_->registry->FindDeployment(1)->result, "swapped");
  parts_->Run([&] { rollouts_->RolledBack(b.id, "health: 3 errors"); });
  EXPECT_EQ(parts_->registry->FindDeployment(1)->result, "rolled_back");
  EXPECT_EQ(parts_->registry->FindBuild(b.sha256)->failed_here, "health: 3 errors");
  EXPECT_TRUE(parts_->serving.swapped_id().empty());
}

TEST(RolloutsBucketTest, IsDjb2ModHundredAndBranchesAreNamedStrictly) {
  EXPECT_EQ(Rollouts::Bucket(""), 81u);
  EXPECT_EQ(Rollouts::Bucket("a"), 70u);
  EXPECT_TRUE(Rollouts::ValidBranch("feature-x.2_b"));
  EXPECT_FALSE(Rollouts::ValidBranch(""));
  EXPECT_FALSE(Rollouts::ValidBranch(std::string(65, 'a')));
  EXPECT_FALSE(Rollouts::ValidBranch("a/b"));
}

}  // namespace
}  // namespace molt::kernel::deploy
