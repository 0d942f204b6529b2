// SPDX-License-Identifier: Apache-2.0
// BuildStore (deploy/build_store.h) without a fleet: an upload stored once, a file that is no
// build refused as invalid, the names a deploy gives, the previous head, pruning that keeps a pin.
#include "kernel/src/deploy/build_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kernel/src/deploy/fleet_link.h"
#include "tests/kernel/deploy/test_builds.h"

namespace molt::kernel::deploy {
namespace {

using test::TestBuild;
using test::TestDir;
using test::WriteTestBuild;

class BuildStoreTest : public ::testing::Test {
 protected:
  Result<Uploaded> Upload(const TestBuild& b, const std::set<std::string>& keep = {}) {
    const std::string file = builds_.UploadPath();
    WriteTestBuild(file, b);
    return builds_.Upload(file, keep);
  }
  void Head(const StoredBuild& b) {
    Deployment d;
    d.branch = "prod";
    d.build = b.sha256;
    d.build_id = b.id;
    ASSERT_TRUE(registry_->Record(d).ok());
  }

  TestDir dir_;
  std::unique_ptr<Registry> registry_ = Registry::Open(dir_ / "registry").value();
  FleetLink fleet_{"", "eu-1", "prod", *registry_};
  BuildStore builds_{*registry_, fleet_};
};

TEST_F(BuildStoreTest, AnUploadIsStoredOnceAndAFileThatIsNoBuildIsInvalid) {
  EXPECT_NE(builds_.UploadPath(), builds_.UploadPath());
  Result<Uploaded> first = Upload({});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->was_new);
  Result<Uploaded> again = Upload({});
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->was_new);
  EXPECT_EQ(again->build.sha256, first->build.sha256);
  const std::string junk = builds_.UploadPath();
  std::ofstream(junk) << "not an archive";
  Result<Uploaded> refused = builds_.Upload(junk, {});
  EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(junk));
}

TEST_F(BuildStoreTest, FindsByShaPrefixIdAndSeqAndThePreviousHeadThatDidNotFail) {
  const StoredBuild one = Upload({})->build;
  const StoredBuild two = Upload({.id = "abc1234-000002", .bytes = "two"})->build;
  const StoredBuild three = Upload({.id = "abc1234-000003", .bytes = "three"})->build;
  EXPECT_EQ(builds_.Find(one.sha256.substr(0, 8))->id, one.id);
  EXPECT_EQ(builds_.Find("abc1234-000002")->sha256, two.sha256);
  EXPECT_FALSE(builds_.Find("#1").has_value());  // no deployment #1 yet
  EXPECT_FALSE(builds_.Find("#x").has_value());
  EXPECT_FALSE(builds_.Find("nothing").has_value());  // alone: nothing to fetch
  Head(one);
  Head(two);
  Head(three);
  EXPECT_EQ(builds_.Find("#2")->id, two.id);
  EXPECT_EQ(builds_.Previous("prod")->id, two.id);
  ASSERT_TRUE(registry_->MarkFailed(two.sha256, "boom").ok());
  EXPECT_EQ(builds_.Previous("prod")->id, one.id);
  EXPECT_FALSE(builds_.Previous("nothing-here").has_value());
}

TEST_F(BuildStoreTest, PruningKeepsWhatABranchOrAPinNames) {
  std::vector<StoredBuild> stored;
  for (int i = 0; i < 13; ++i) {
    const std::string file = builds_.UploadPath();  // stored without the upload's own pruning
    WriteTestBuild(file,
                   {.id = "abc1234-0000" + std::to_string(10 + i), .bytes = std::to_string(i)});
    stored.push_back(registry_->AddBuild(file).value());
  }
  Head(stored[1]);
  builds_.Prune({stored[0].sha256});
  EXPECT_TRUE(registry_->FindBuild(stored[0].sha256).has_value());  // the pin
  EXPECT_TRUE(registry_->FindBuild(stored[1].sha256).has_value());  // the head
  EXPECT_FALSE(registry_->FindBuild(stored[2].sha256).has_value());
  EXPECT_TRUE(registry_->FindBuild(stored[12].sha256).has_value());  // among the newest kept
}

}  // namespace
}  // namespace molt::kernel::deploy
