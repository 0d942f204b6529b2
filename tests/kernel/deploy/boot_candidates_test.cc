// SPDX-License-Identifier: Apache-2.0
// BootCandidates (deploy/boot_candidates.h): the head and the last-known-good chain, each build
// once, never one that failed here; how a candidate did moves the marks and the applied seq.
#include "kernel/src/deploy/boot_candidates.h"

#include <gtest/gtest.h>

#include "kernel/src/deploy/registry.h"
#include "kernel/src/deploy/serving_state.h"
#include "kernel/src/deploy/signatures.h"
#include "tests/kernel/deploy/test_builds.h"

namespace molt::kernel::deploy {
namespace {

using test::TestDir;
using test::WriteTestBuild;

class BootCandidatesTest : public ::testing::Test {
 protected:
  // Stores build `n` and deploys it on prod.
  StoredBuild Deploy(int n) {
    const std::string file = dir_ / ("b" + std::to_string(n) + ".molt");
    WriteTestBuild(file, {.id = "abc1234-00000" + std::to_string(n), .bytes = std::to_string(n)});
    StoredBuild b = registry_->AddBuild(file).value();
    Deployment d;
    d.branch = "prod";
    d.build = b.sha256;
    d.build_id = b.id;
    d.kind = "deploy";
    EXPECT_TRUE(registry_->Record(d).ok());
    return b;
  }

  TestDir dir_;
  std::unique_ptr<Registry> registry_ = Registry::Open(dir_ / "registry").value();
  Signatures signatures_{"", /*prod_rules=*/false};
  ServingState serving_{*registry_, "prod"};
  BootCandidates candidates_{*registry_, signatures_, serving_, "prod", /*prod_rules=*/false};
};

TEST_F(BootCandidatesTest, TheHeadThenEarlierBuildsEachOnceNewestFirst) {
  EXPECT_TRUE(candidates_.List().empty());  // no head: the plugin directory boots
  const StoredBuild one = Deploy(1);
  Deploy(2);
  const StoredBuild again = one;
  Deployment d;  // #3 deploys build 1 again: it is tried once, as the head
  d.branch = "prod";
  d.build = again.sha256;
  d.build_id = again.id;
  ASSERT_TRUE(registry_->Record(d).ok());
  const std::vector<BootCandidate> c = candidates_.List();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].what, "the head of prod (#3)");
  EXPECT_EQ(c[0].build_id, "abc1234-000001");
  EXPECT_EQ(c[0].file, registry_->BuildPath(one.sha256));
  EXPECT_EQ(c[1].what, "prod's #2 (last known good)");
}

TEST_F(BootCandidatesTest, AFailureIsMarkedAndTheHeadThatServesIsApplied) {
  const StoredBuild one = Deploy(1);
  Deploy(2);
  std::vector<BootCandidate> c = candidates_.List();
  ASSERT_EQ(c.size(), 2u);
  candidates_.Tried(c[0], Status::FailedPrecondition("init failed"));
  EXPECT_EQ(registry_->FindBuild(c[0].sha256)->failed_here, "init failed");
  candidates_.Tried(c[1], Status::Ok());  // not the head: serves, but is not applied
  EXPECT_EQ(serving_.swapped_id(), one.id);
  EXPECT_EQ(serving_.applied_seq(), 0u);
  c = candidates_.List();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].build_id, one.id);
  Deploy(3);
  c = candidates_.List();
  candidates_.Tried(c[0], Status::Ok());
  EXPECT_EQ(serving_.applied_seq(), 3u);
  EXPECT_EQ(registry_->applied_seq(), 3u);
}

}  // namespace
}  // namespace molt::kernel::deploy
