// SPDX-License-Identifier: Apache-2.0
// The registry (deploy/registry.h) on real files: builds verified and stored by content, heads
// with their previous ones, deployments with one #seq counter, marks kept across a restart.
#include "kernel/src/deploy/registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/kernel/deploy/test_builds.h"

namespace molt::kernel::deploy {
namespace {

namespace fs = std::filesystem;
using test::TestBuild;
using test::TestDir;
using test::WriteTestBuild;

std::unique_ptr<Registry> OpenRegistry(const TestDir& dir) {
  Result<std::unique_ptr<Registry>> r = Registry::Open(dir / "registry");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

Deployment DeployOf(const StoredBuild& b, const std::string& branch, std::uint64_t seq = 0) {
  Deployment d;
  d.seq = seq;
  d.branch = branch;
  d.build = b.sha256;
  d.build_id = b.id;
  d.kind = "deploy";
  d.result = "pending";
  return d;
}

TEST(RegistryTest, ABuildIsStoredUnderItsManifestsHashAndFoundByIdOrPrefix) {
  TestDir dir;
  auto registry = OpenRegistry(dir);
  const std::string manifest = WriteTestBuild(dir / "a.molt", {});
  bool was_new = false;
  Result<StoredBuild> b = registry->AddBuild(dir / "a.molt", &was_new);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(was_new);
  EXPECT_EQ(b->sha256, loader::Sha256Hex(manifest));
  EXPECT_EQ(b->id, "abc1234-000001");
  EXPECT_EQ(b->ManifestField("channel"), "prod");
  EXPECT_FALSE(fs::exists(dir / "a.molt"));  // moved into the store
  EXPECT_TRUE(fs::exists(registry->BuildPath(b->sha256)));
  EXPECT_EQ(registry->FindBuild(b->sha256.substr(0, 8))->sha256, b->sha256);
  EXPECT_EQ(registry->FindBuild("abc1234-000001")->sha256, b->sha256);
  EXPECT_FALSE(registry->FindBuild("nothing").has_value());
  EXPECT_FALSE(registry->FindBuild("abc").has_value());  // a prefix is 8 hex digits or more
  // The same build again: stored once, the upload removed.
  WriteTestBuild(dir / "again.molt", {});
  ASSERT_TRUE(registry->AddBuild(dir / "again.molt", &was_new).ok());
  EXPECT_FALSE(was_new);
  EXPECT_FALSE(fs::exists(dir / "again.molt"));
  EXPECT_EQ(registry->Builds(10).size(), 1u);
}

TEST(RegistryTest, ATamperedLibraryOrSomethingElseIsRefusedAndNothingIsStored) {
  TestDir dir;
  auto registry = OpenRegistry(dir);
  // A library whose bytes differ from the manifest's hash.
  TestBuild b;
  const std::string manifest = WriteTestBuild(dir / "good.molt", b);
  ASSERT_TRUE(loader::WriteArchive(dir / "tampered.molt", {{loader::kBuildManifest, "", manifest},
                                                           {b.library, "", "other bytes"}})
                  .ok());
  Result<StoredBuild> r = registry->AddBuild(dir / "tampered.molt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the SHA-256 of counter.so is"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("altered after `molt build`"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "tampered.molt"));
  // Not an archive at all, and an archive without a manifest first.
  std::ofstream(dir / "junk.molt") << "not a tar file";
  EXPECT_FALSE(registry->AddBuild(dir / "junk.molt").ok());
  ASSERT_TRUE(loader::WriteArchive(dir / "bare.molt", {{b.library, "", b.bytes}}).ok());
  Result<StoredBuild> bare = registry->AddBuild(dir / "bare.molt");
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.status().message().find("its first member must be molt-build.json"),
            std::string::npos)
      << bare.status().message();
  EXPECT_TRUE(registry->Builds(10).empty());
  EXPECT_TRUE(fs::is_empty(dir / "registry/builds"));
}

TEST(RegistryTest, DeploysMoveTheHeadKeepThreePreviousAndClaimOneSeqEach) {
  TestDir dir;
  auto registry = OpenRegistry(dir);
  std::vector<StoredBuild> builds;
  for (int i = 0; i < 5; ++i) {
    TestBuild t;
    t.id = "abc1234-00000" + std::to_string(i);
    t.bytes = "bytes " + std::to_string(i);
    WriteTestBuild(dir / "b.molt", t);
    builds.push_back(registry->AddBuild(dir / "b.molt").value());
  }
  for (const StoredBuild& b : builds) {
    Result<Deployment> d = registry->Record(DeployOf(b, "prod"));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
  }
  EXPECT_EQ(registry->last_seq(), 5u);
  std::optional<Branch> prod = registry->FindBranch("prod");
  ASSERT_TRUE(prod.has_value());
  EXPECT_EQ(prod->head, builds[4].sha256);
  EXPECT_EQ(prod->seq, 5u);
  ASSERT_EQ(prod->previous.size(), Registry::kPreviousHeads);
  EXPECT_EQ(prod->previous[0].build, builds[3].sha256);
  EXPECT_EQ(prod->previous[0].seq, 4u);
  EXPECT_EQ(prod->previous[2].build, builds[1].sha256);
  // One counter for every branch; a seq named by the caller must be newer than every one claimed.
  EXPECT_EQ(registry->Record(DeployOf(builds[0], "dev")).value().seq, 6u);
  Result<Deployment> replay = registry->Record(DeployOf(builds[0], "dev", 6));
  ASSERT_FALSE(replay.ok());
  EXPECT_EQ(replay.status().message(), "seq 6 was taken already (the last is #6; the next is 7)");
  EXPECT_EQ(registry->Record(DeployOf(builds[0], "dev", 10)).value().seq, 10u);
  EXPECT_EQ(registry->Deployments("prod", 100).size(), 5u);
  EXPECT_EQ(registry->Deployments("", 100).size(), 7u);
  EXPECT_EQ(registry->Deployments("", 100).front().seq, 10u);  // newest first
}

// A server's copy of the fleet's registry (FleetRegistry): deployments keep the fleet's seq,
// even below one this server claimed alone; one older than its branch's head moves nothing; the
// same one twice is refused as recorded; what was mirrored survives a restart.
TEST(RegistryTest, AMirroredDeploymentKeepsTheFleetsSeqAndMovesOnlyAnOlderHead) {
  TestDir dir;
  auto registry = OpenRegistry(dir);
  std::vector<StoredBuild> builds;
  for (int i = 0; i < 3; ++i) {
    TestBuild t;
    t.id = "abc1234-00000" + std::to_string(i);
    t.bytes = "bytes " + std::to_string(i);
    WriteTestBuild(dir / "b.molt", t);
    builds.push_back(registry->AddBuild(dir / "b.molt").value());
  }
  ASSERT_EQ(registry->Record(DeployOf(builds[0], "prod", 20)).value().seq, 20u);  // alone
  ASSERT_TRUE(registry->Mirror(DeployOf(builds[1], "prod", 3)).ok());
  EXPECT_EQ(registry->FindBranch("prod")->head, builds[0].sha256) << "#3 is older than #20";
  ASSERT_TRUE(registry->Mirror(DeployOf(builds[2], "prod", 21)).ok());
  EXPECT_EQ(registry->FindBranch("prod")->head, builds[2].sha256);
  EXPECT_EQ(registry->FindBranch("prod")->previous[0].seq, 20u);
  Result<Deployment> twice = registry->Mirror(DeployOf(builds[2], "prod", 21));
  ASSERT_EQ(twice.status().code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(twice.status().message(), "#21 is recorded here");
  EXPECT_EQ(registry->last_seq(), 21u);
  ASSERT_TRUE(registry->SetMirrored(21).ok());
  registry.reset();
  registry = OpenRegistry(dir);
  EXPECT_EQ(registry->mirrored_seq(), 21u);
  EXPECT_EQ(registry->Deployments("prod", 100).size(), 3u);
}

// The data directory does not grow with every upload: a build no branch, kept deployment, pin or
// recent upload refers to goes, row and file; a file left without its row goes too.
TEST(RegistryTest, PruningRemovesTheBuildsNothingRefersTo) {
  TestDir dir;
  auto registry = OpenRegistry(dir);
  std::vector<StoredBuild> builds;  // oldest first
  for (int i = 0; i < 16; ++i) {
    TestBuild t;
    t.id = "abc1234-0000" + std::to_string(10 + i);
    t.bytes = "bytes " + std::to_string(i);
    WriteTestBuild(dir / "b.molt", t);
    builds.push_back(registry->AddBuild(dir / "b.molt").value());
  }
  // #1 and #2 on prod (#1 a previous head, #2 the head), #3 on dev; the pin holds builds[4].
  ASSERT_TRUE(registry->Record(DeployOf(builds[0], "prod")).ok());
  ASSERT_TRUE(registry->Record(DeployOf(builds[1], "prod")).ok());
  ASSERT_TRUE(registry->Record(DeployOf(builds[2], "dev")).ok());
  const std::string orphan = dir / ("registry/builds/" + std::string(64, 'e') + ".molt");
  std::ofstream(orphan) << "left by a crash between the row and the file";
  Result<Registry::Pruned> pruned = registry->Prune({builds[4].sha256});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  // Kept: 0, 1, 2 (referred to), 4 (pinned), 6..15 (the newest 10). Gone: 3 and 5.
  EXPECT_EQ(pruned->builds, 2u);
  EXPECT_EQ(pruned->bytes, builds[3].bytes + builds[5].bytes);
  for (int i : {3, 5}) {
    EXPECT_FALSE(registry->FindBuild(builds[i].sha256).has_value()) << i;
    EXPECT_FALSE(fs::exists(registry->BuildPath(builds[i].sha256))) << i;
  }
  for (int i : {0, 1, 2, 4, 6, 15}) {
    EXPECT_TRUE(registry->FindBuild(builds[i].sha256).has_value()) << i;
    EXPECT_TRUE(fs::exists(registry->BuildPath(builds[i].sha256))) << i;
  }
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_EQ(registry->Builds(100).size(), 14u);
  // Without the pin, builds[4] goes at the next prune; nothing else does.
  EXPECT_EQ(registry->Prune().value().builds, 1u);
  EXPECT_EQ(registry->Prune().value().builds, 0u);
}

TEST(RegistryTest, HistoryKeepsOneHundredDeploymentsAndThirtyTwoBranches) {
  TestDir dir;
  auto registry = OpenRegistry(dir);
  WriteTestBuild(dir / "b.molt", {});
  const StoredBuild b = registry->AddBuild(dir / "b.molt").value();
  for (int i = 0; i < 120; ++i) {
    ASSERT_TRUE(registry->Record(DeployOf(b, "prod")).ok());
  }
  const std::vector<Deployment> kept = registry->Deployments("", 1000);
  ASSERT_EQ(kept.size(), Registry::kDeploymentsKept);
  EXPECT_EQ(kept.front().seq, 120u);
  EXPECT_EQ(kept.back().seq, 21u);
  for (std::size_t i = 1; i < Registry::kMaxBranches; ++i) {
    ASSERT_TRUE(registry->Record(DeployOf(b, "feature-" + std::to_string(i))).ok());
  }
  Result<Deployment> more = registry->Record(DeployOf(b, "one-too-many"));
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.status().message().find("32 branches already"), std::string::npos);
  EXPECT_FALSE(registry->FindBranch("one-too-many").has_value());
  EXPECT_TRUE(registry->Record(DeployOf(b, "feature-1")).ok());  // a known branch still moves
}

TEST(RegistryTest, ResultsMarksAndTheAppliedSeqSurviveARestart) {
  TestDir dir;
  std::string sha;
  {
    auto registry = OpenRegistry(dir);
    WriteTestBuild(dir / "b.molt", {});
    const StoredBuild b = registry->AddBuild(dir / "b.molt").value();
    sha = b.sha256;
    const Deployment d = registry->Record(DeployOf(b, "prod")).value();
    ASSERT_TRUE(registry->SetResult(d.seq, "failed", "start failed", "{\"ok\":false}").ok());
    ASSERT_TRUE(registry->MarkFailed(b.sha256, "start failed").ok());
    ASSERT_TRUE(registry->SetApplied(1).ok());
  }
  auto registry = OpenRegistry(dir);
  EXPECT_EQ(registry->FindBuild(sha)->failed_here, "start failed");
  EXPECT_EQ(registry->applied_seq(), 1u);
  const Deployment d = registry->FindDeployment(1).value();
  EXPECT_EQ(d.result, "failed");
  EXPECT_EQ(d.reason, "start failed");
  EXPECT_EQ(d.ToJson().at("report").as_object().at("ok").as_bool(), false);
  ASSERT_TRUE(registry->ClearFailed(sha).ok());
  EXPECT_EQ(registry->FindBuild(sha)->failed_here, "");
}

TEST(RegistryTest, AnUploadAKilledServerLeftIsRemovedAtOpen) {
  TestDir dir;
  { auto registry = OpenRegistry(dir); }
  std::ofstream(dir / "registry/uploads/upload-1.molt") << "half a build";
  auto registry = OpenRegistry(dir);
  EXPECT_TRUE(fs::is_empty(dir / "registry/uploads"));
}

}  // namespace
}  // namespace molt::kernel::deploy
