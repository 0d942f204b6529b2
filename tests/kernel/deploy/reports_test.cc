// SPDX-License-Identifier: Apache-2.0
// Reports (deploy/reports.h) without a fleet: this server's result written to its registry, and
// read back as the only result of its branch's deployments. fleet_registry_test.cc reads every
// server's results from a fleet.
#include "kernel/src/deploy/reports.h"

#include <gtest/gtest.h>

#include "kernel/src/deploy/fleet_link.h"
#include "tests/kernel/deploy/test_builds.h"

namespace molt::kernel::deploy {
namespace {

using test::TestDir;

class ReportsTest : public ::testing::Test {
 protected:
  Deployment Record(const std::string& branch) {
    Deployment d;
    d.branch = branch;
    d.build = std::string(64, 'a');
    d.build_id = "abc1234-000001";
    d.kind = "deploy";
    d.result = "pending";
    return registry_->Record(d).value();
  }

  TestDir dir_;
  std::unique_ptr<Registry> registry_ = Registry::Open(dir_ / "registry").value();
  FleetLink fleet_{"", "eu-1", "prod", *registry_};
  Reports reports_{*registry_, fleet_, "eu-1", "prod"};
};

TEST_F(ReportsTest, ThisServersResultIsTheOnlyOneOfItsBranchOnceItHasOne) {
  Deployment d = Record("prod");
  Result<DeploymentResults> pending = reports_.Results(d.seq);
  ASSERT_TRUE(pending.ok());
  EXPECT_TRUE(pending->results.empty());  // pending: no result yet
  d.result = "swapped";
  d.reason = "";
  d.report = "{\"ok\":true}";
  reports_.Set(d);
  Result<DeploymentResults> done = reports_.Results(d.seq);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->deployment.result, "swapped");
  EXPECT_EQ(done->deployment.report, "{\"ok\":true}");
  ASSERT_EQ(done->results.size(), 1u);
  EXPECT_EQ(done->results[0].server_id, "eu-1");
  EXPECT_EQ(done->results[0].result, "swapped");
  EXPECT_EQ(done->results[0].at_ms, done->deployment.at_ms);
}

TEST_F(ReportsTest, AnotherBranchHasNoResultHereAndAnUnknownSeqIsNotFound) {
  Deployment other = Record("feature-x");
  other.result = "recorded";
  reports_.Set(other);
  EXPECT_TRUE(reports_.Results(other.seq)->results.empty());
  Result<DeploymentResults> none = reports_.Results(99);
  EXPECT_EQ(none.status(),
            Status::NotFound("no deployment #99 is recorded (molt deployments lists them)"));
}

}  // namespace
}  // namespace molt::kernel::deploy
