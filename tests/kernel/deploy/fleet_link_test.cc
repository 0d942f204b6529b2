// SPDX-License-Identifier: Apache-2.0
// FleetLink (deploy/fleet_link.h): alone, every answer is this server's; on a real PostgreSQL the
// test starts, a build one server shares is fetched by another as it mirrors the deployment, a
// widened rollout reaches the mirror, and a database that does not answer is not asked again
// within the retry gap.
#include "kernel/src/deploy/fleet_link.h"

#include <gtest/gtest.h>

#include "tests/kernel/deploy/test_builds.h"
#include "tests/support/postgres.h"

namespace molt::kernel::deploy {
namespace {

using test::TestDir;
using test::WriteTestBuild;

// One server: its registry and its link.
struct Server {
  Server(const std::string& dir, const std::string& url, const std::string& id)
      : registry(Registry::Open(dir + "/" + id).value()), link(url, id, "prod", *registry) {}
  std::unique_ptr<Registry> registry;
  FleetLink link;
};

TEST(FleetLinkAloneTest, WithoutAFleetEveryAnswerIsThisServers) {
  TestDir dir;
  Server s(dir.path(), "", "eu-1");
  EXPECT_FALSE(s.link.shared());
  const std::string file = dir / "b.molt";
  WriteTestBuild(file, {});
  const StoredBuild b = s.registry->AddBuild(file).value();
  EXPECT_TRUE(s.link.Share(b).ok());
  EXPECT_FALSE(s.link.Fetch("anything").has_value());
  Deployment d;
  d.branch = "prod";
  d.build = b.sha256;
  ASSERT_TRUE(s.registry->Record(d).ok());
  EXPECT_EQ(s.link.LastSeq(), 1u);
  s.link.StopWatching();  // a no-op alone
}

TEST(FleetLinkAloneTest, ADatabaseThatDoesNotAnswerIsNotAskedAgainWithinTheGap) {
  TestDir dir;
  Server s(dir.path(), "host=" + dir.path() + " port=1 dbname=none connect_timeout=1", "eu-1");
  ASSERT_TRUE(s.link.shared());
  const Status first = s.link.Open();
  ASSERT_FALSE(first.ok());
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(s.link.Open(), first);  // the same failure, remembered
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(100));
  EXPECT_FALSE(s.link.Mirror(/*boot=*/true).has_value());
  EXPECT_EQ(s.link.LastSeq(), 0u);  // this server's guess
}

class FleetLinkTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pg_ = new molt::test::PostgresServer(); }
  static void TearDownTestSuite() {
    delete pg_;
    pg_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(pg_->ok()) << pg_->error();
    url_ = pg_->NewDatabase();
  }

  static molt::test::PostgresServer* pg_;
  std::string url_;
  TestDir dir_;
};
molt::test::PostgresServer* FleetLinkTest::pg_ = nullptr;

TEST_F(FleetLinkTest, ABuildOneServerSharesIsFetchedByAnotherAsItMirrorsTheDeployment) {
  Server a(dir_.path(), url_, "a");
  Server b(dir_.path(), url_, "b");
  const std::string file = dir_ / "b.molt";
  WriteTestBuild(file, {});
  const StoredBuild build = a.registry->AddBuild(file).value();
  ASSERT_TRUE(a.link.Share(build).ok());
  Deployment d;
  d.branch = "prod";
  d.build = build.sha256;
  d.build_id = build.id;
  d.kind = "deploy";
  d.rollout = 50;
  ASSERT_TRUE(a.link.Open().ok());
  Result<Deployment> recorded = a.link.fleet().Record(d);
  ASSERT_TRUE(recorded.ok()) << recorded.status().ToString();
  std::optional<FleetLink::Mirrored> m = b.link.Mirror(/*boot=*/false);
  ASSERT_TRUE(m.has_value());
  EXPECT_FALSE(m->stuck);
  ASSERT_TRUE(m->newest.has_value());
  EXPECT_EQ(m->newest->seq, recorded->seq);
  EXPECT_EQ(m->newest->result, "pending");
  EXPECT_TRUE(b.registry->FindBuild(build.sha256).has_value());  // fetched
  EXPECT_EQ(b.registry->mirrored_seq(), recorded->seq);
  EXPECT_FALSE(b.link.Mirror(false)->newest.has_value());  // nothing new the second time
  EXPECT_EQ(b.link.LastSeq(), recorded->seq);
  // Widened on the fleet: the mirror takes the wider share.
  EXPECT_FALSE(b.link.Widened(recorded->seq).has_value());
  ASSERT_TRUE(a.link.fleet().Widen(recorded->seq, 80).ok());
  std::optional<Deployment> wide = b.link.Widened(recorded->seq);
  ASSERT_TRUE(wide.has_value());
  EXPECT_EQ(wide->rollout, 80u);
  EXPECT_EQ(b.registry->FindDeployment(recorded->seq)->rollout, 80u);
}

}  // namespace
}  // namespace molt::kernel::deploy
