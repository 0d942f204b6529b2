// SPDX-License-Identifier: Apache-2.0
// GenerationSwap: real fx_gen builds mounted dormant and swapped in (no clients: the swap under
// live clients is generations_test.cc's), the gate, a failure's restore, the window's rollback
// and the reports.
#include "kernel/src/loader/generation_swap.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernel/loader/swap_fixture.h"

namespace molt::kernel::loader {
namespace {

using GenerationSwapTest = SwapFixture;

TEST_F(GenerationSwapTest, TheGateRefusesASwapBeforeTheKernelStartsAndWhileClosing) {
  Status s = set_->LoadStaged(GenBuild("v1"),
                              StageBuild(GenBuild("v1"), set_->copy_dir(), set_->CopyPrefix()));
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string not_started =
      "the kernel has not started: load the first generation with LoadDirectory, then "
      "Kernel::Start";
  EXPECT_EQ(swap_->Gate().message(), not_started);
  SwapReport r = swap_->Reload(GenBuild("v2"), "early", GenerationSwap::Trigger::kOperator);
  EXPECT_EQ(r.stage, "gate");
  EXPECT_EQ(r.error, not_started);
  ASSERT_TRUE(kernel_->Start().ok());
  EXPECT_TRUE(swap_->Gate().ok());
  swap_->Close();
  EXPECT_EQ(swap_->Gate().message(), "the server is closing: no reload now");
  r = swap_->Reload(GenBuild("v2"), "late", GenerationSwap::Trigger::kOperator);
  EXPECT_EQ(r.error, "the server is closing: no reload now");
  EXPECT_EQ(swap_->failures(), 2u);
}

TEST_F(GenerationSwapTest, AMountedBuildHearsNothingUntilItsSwapThenServesWithTheState) {
  BootWith("v1");
  const std::string first = set_->serving().name;
  ASSERT_TRUE(swap_->Mount(GenBuild("v2"), "test", GenerationSwap::Trigger::kOperator).ok());
  EXPECT_TRUE(swap_->mounted());
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong v1"});
  SwapReport r = swap_->SwapMounted();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(swap_->mounted());
  EXPECT_EQ(r.stage, "done");
  EXPECT_EQ(r.reason, "test");
  EXPECT_EQ(r.build, IdOf("v2"));
  EXPECT_EQ(r.previous, first);
  EXPECT_EQ(r.generation, IdOf("v2") + "#2");
  EXPECT_EQ(r.serving, r.generation);
  ASSERT_EQ(r.handed.size(), 1u);
  EXPECT_EQ(r.handed[0].plugin, "fx_gen");
  EXPECT_GE(r.hold_ms, r.swap_ms);
  EXPECT_TRUE(Saw("Gen.Stopped v1"));
  EXPECT_TRUE(Saw("Gen.Imported v2 0"));
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong v2"});
  // On probation, the old generation resident behind it.
  EXPECT_TRUE(health_->active());
  EXPECT_EQ(set_->resident(), 2u);
  EXPECT_EQ(swap_->swaps(), 1u);
}

TEST_F(GenerationSwapTest, AFailedMountLeavesTheOldGenerationServingAndMarksTheBuild) {
  BootWith("v1");
  const std::string failing = IdOf("fail_init");
  Status s = swap_->Mount(GenBuild("fail_init"), "test", GenerationSwap::Trigger::kOperator);
  EXPECT_FALSE(s.ok());
  SwapReport r = swap_->TakeMountReport();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stage, "mount");
  EXPECT_EQ(r.build, failing);
  EXPECT_EQ(r.error, s.message());
  EXPECT_NE(r.error.find("init refused"), std::string::npos) << r.error;
  ASSERT_EQ(swap_->failed_builds().count(failing), 1u);
  EXPECT_EQ(swap_->failed_builds().at(failing), r.error);
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong v1"});
  // An automatic trigger does not take it again; an operator may.
  swap_->Mount(GenBuild("fail_init"), "watch", GenerationSwap::Trigger::kAutomatic);
  r = swap_->TakeMountReport();
  EXPECT_EQ(r.stage, "gate");
  EXPECT_EQ(r.error, "build " + failing + " failed here (" + swap_->failed_builds().at(failing) +
                         "): it is not taken again automatically; rebuild it, or reload it "
                         "yourself (SIGHUP, the admin API) to retry it");
  swap_->Mount(GenBuild("fail_init"), "operator", GenerationSwap::Trigger::kOperator);
  EXPECT_EQ(swap_->TakeMountReport().stage, "mount");
  EXPECT_TRUE(Logged("build " + failing + " failed here before ("));
  EXPECT_EQ(swap_->failures(), 3u);
}

TEST_F(GenerationSwapTest, AStartFailureRestoresThePreviousBuildFromFreshCopies) {
  BootWith("v1");
  const std::string v1 = IdOf("v1");
  SwapReport r = swap_->Reload(GenBuild("fail_start"), "test", GenerationSwap::Trigger::kOperator);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.restored);
  EXPECT_EQ(r.stage, "start");
  EXPECT_EQ(r.serving, v1 + "#3");
  EXPECT_EQ(set_->serving().name, v1 + "#3");
  EXPECT_EQ(swap_->failed_builds().at(IdOf("fail_start")).rfind("start: ", 0), 0u);
  EXPECT_TRUE(Saw("Gen.Imported v1 0")) << "the restored build gets the state it exported";
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong v1"});
  EXPECT_FALSE(health_->active()) << "the boot generation had no window to resume";
}

TEST_F(GenerationSwapTest, AnExportFailureAbortsTheSwapAndMarksNothing) {
  BootWith("fail_export");
  const std::string first = set_->serving().name;
  SwapReport r = swap_->Reload(GenBuild("v2"), "test", GenerationSwap::Trigger::kOperator);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stage, "export");
  const std::string tail = " (the swap is aborted; " + first + " serves on)";
  ASSERT_GE(r.error.size(), tail.size());
  EXPECT_EQ(r.error.substr(r.error.size() - tail.size()), tail) << r.error;
  EXPECT_TRUE(swap_->failed_builds().empty());
  EXPECT_EQ(set_->serving().name, first);
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong fail_export"});
}

TEST_F(GenerationSwapTest, ASoftStopPastItsBudgetHardStopsTheRestAndSaysSo) {
  BootWith("v1");
  swap_->set_stop_budget(Duration::zero());
  SwapReport r = swap_->Reload(GenBuild("v2"), "test", GenerationSwap::Trigger::kOperator);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.hard_stopped, std::vector<std::string>{"fx_gen"});
  EXPECT_FALSE(Saw("Gen.Stopped v1"));
  EXPECT_TRUE(Logged("stop: hard stop of fx_gen (the soft stop ran past its 0 s budget"));
}

TEST_F(GenerationSwapTest, TheWindowsRollbackMountsThePreviousBuildThenSwapsItIn) {
  health_->set_defaults(1, std::chrono::seconds(30));
  BootWith("v1");
  ASSERT_TRUE(swap_->Reload(GenBuild("v2_faulty"), "test", GenerationSwap::Trigger::kOperator).ok);
  const std::string faulty = set_->serving().name;
  Steps(2);  // the swap's release and report
  set_->serving().plugins[0].instance->CountCallbackError();
  Steps();
  EXPECT_TRUE(swap_->mounted()) << "the rollback's mount ran";
  EXPECT_EQ(set_->serving().name, faulty) << "and only the mount";
  Steps();
  EXPECT_FALSE(swap_->mounted());
  EXPECT_EQ(set_->serving().name, IdOf("v1") + "#3");
  EXPECT_EQ(swap_->rollbacks(), 1u);
  EXPECT_EQ(swap_->failed_builds().at(IdOf("v2_faulty")),
            "health: 1 errors in " + faulty + " within 30 s of its swap");
  EXPECT_TRUE(Saw("Gen.Imported v1 0"));
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong v1"});
  EXPECT_FALSE(health_->active()) << "a rollback starts no window";
}

TEST_F(GenerationSwapTest, ARollbackWaitsForTheSwapInProgressAndIsMootOnceItServes) {
  health_->set_defaults(1, std::chrono::seconds(30));
  BootWith("v1");
  ASSERT_TRUE(swap_->Reload(GenBuild("v2_faulty"), "test", GenerationSwap::Trigger::kOperator).ok);
  const std::string faulty = set_->serving().name;
  ASSERT_TRUE(swap_->Mount(GenBuild("v2"), "test", GenerationSwap::Trigger::kOperator).ok());
  set_->serving().plugins[0].instance->CountCallbackError();
  Steps();
  EXPECT_TRUE(
      Logged("the health-window rollback of " + faulty + " waits for the swap in progress"));
  EXPECT_EQ(set_->serving().name, faulty);
  ASSERT_TRUE(swap_->SwapMounted().ok);
  Steps(3);
  EXPECT_TRUE(Logged(
      "the health-window rollback is moot: a later swap replaced the generation it was for"));
  EXPECT_EQ(swap_->rollbacks(), 0u);
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong v2"});
}

TEST_F(GenerationSwapTest, TheReportIsLoggedKeptAndHeardInALaterTask) {
  BootWith("v1");
  std::vector<std::string> heard;
  swap_->set_listener([&](const SwapReport& r) { heard.push_back("listener " + r.generation); });
  ASSERT_TRUE(swap_->Mount(GenBuild("v2"), "test", GenerationSwap::Trigger::kOperator).ok());
  SwapReport r =
      swap_->SwapMounted([&](const SwapReport& x) { heard.push_back("done " + x.generation); });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(heard.empty());
  EXPECT_TRUE(swap_->history().empty());
  Steps(2);
  EXPECT_EQ(heard, (std::vector<std::string>{"listener " + r.generation, "done " + r.generation}));
  ASSERT_EQ(swap_->history().size(), 1u);
  EXPECT_EQ(swap_->history()[0].report.generation, r.generation);
  EXPECT_GT(swap_->history()[0].time_ms, 0);
  EXPECT_TRUE(Logged(r.Json()));
  // Nothing mounted: the report says so.
  r = swap_->SwapMounted();
  EXPECT_EQ(r.stage, "gate");
  EXPECT_EQ(r.error, "no generation is mounted: Mount() first");
  Steps(2);
  ASSERT_EQ(swap_->history().size(), 2u);
  EXPECT_EQ(swap_->history()[0].report.error, r.error) << "newest first";
}

}  // namespace
}  // namespace molt::kernel::loader
