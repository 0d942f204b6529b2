// SPDX-License-Identifier: Apache-2.0
// HealthWindow: real fx_gen generations on probation, their errors counted as their instances
// report them, the window's time moved by a manual clock.
#include "kernel/src/loader/health_window.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/kernel/loader/loader_fixture.h"

namespace molt::kernel::loader {
namespace {

class HealthWindowTest : public LoaderFixture {
 protected:
  void SetUp() override {
    LoaderFixture::SetUp();
    set_ = std::make_unique<GenerationSet>(*kernel_, *shared_, copies_, MOLT_PLUGIN_KIND_SERVICE);
    window_ = std::make_unique<HealthWindow>(
        kernel_->scheduler(),
        HealthWindow::Verdicts{
            [this] { verdicts_.push_back("rollback"); },
            [this](Generation* previous) { verdicts_.push_back("let go " + previous->name); },
            [this](const Generation& good) { verdicts_.push_back("passed " + good.name); }});
    Status s = set_->LoadStaged(GenBuild("v1"),
                                StageBuild(GenBuild("v1"), set_->copy_dir(), set_->CopyPrefix()));
    ASSERT_TRUE(s.ok()) << s.ToString();
    old_ = &set_->serving();
    fresh_ = set_->NewGeneration(old_->build_id);
    s = set_->MountCopiesOf(*old_, *fresh_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void TearDownParts() override {
    window_.reset();
    set_->ReleaseLater(std::move(fresh_));
    set_->UnloadAll();
    set_.reset();
  }
  // One error of `g`, as its instance reports it (a failed callback, handler, task, ...).
  static void Fail(Generation& g) { g.plugins[0].instance->CountCallbackError(); }

  std::unique_ptr<GenerationSet> set_;
  std::unique_ptr<HealthWindow> window_;
  Generation* old_ = nullptr;          // the boot generation: the one rolled back to
  std::unique_ptr<Generation> fresh_;  // the one on probation
  std::vector<std::string> verdicts_;
};

TEST_F(HealthWindowTest, AtTheThresholdTheRollbackRunsInAKernelTaskOfItsOwn) {
  window_->Start(*fresh_, old_, {});
  EXPECT_TRUE(window_->active());
  EXPECT_EQ(window_->generation(), fresh_.get());
  EXPECT_EQ(window_->previous(), old_);
  Fail(*fresh_);
  Fail(*fresh_);
  Steps();
  EXPECT_EQ(window_->errors(), 2u);
  EXPECT_TRUE(verdicts_.empty()) << "3 errors by default";
  Fail(*fresh_);
  EXPECT_TRUE(verdicts_.empty()) << "never inside the callback that failed";
  EXPECT_TRUE(window_->rollback_due());
  Steps();
  EXPECT_EQ(verdicts_, std::vector<std::string>{"rollback"});
  Fail(*fresh_);  // the verdict is in: no second rollback
  Steps();
  EXPECT_EQ(verdicts_.size(), 1u);
  EXPECT_EQ(window_->errors(), 3u);
}

TEST_F(HealthWindowTest, ErrorsOfAnyOtherGenerationNeverCount) {
  window_->Start(*fresh_, old_, {});
  for (int i = 0; i < 5; ++i) {
    Fail(*old_);
  }
  Steps();
  EXPECT_EQ(window_->errors(), 0u);
  EXPECT_TRUE(verdicts_.empty());
}

TEST_F(HealthWindowTest, AWindowThatPassesLetsThePreviousGoAndTheGenerationIsGood) {
  window_->Start(*fresh_, old_, {});
  Fail(*fresh_);
  clock_.Advance(std::chrono::seconds(29));
  Steps();
  EXPECT_TRUE(window_->active());
  clock_.Advance(std::chrono::seconds(1));
  Steps();
  EXPECT_FALSE(window_->active());
  EXPECT_EQ(verdicts_,
            (std::vector<std::string>{"let go " + old_->name, "passed " + fresh_->name}));
  EXPECT_TRUE(Logged("generation " + fresh_->name +
                     " passed its health window (1 errors, "
                     "threshold 3)"));
  Fail(*fresh_);  // after the window: nobody listens
  Steps();
  EXPECT_EQ(verdicts_.size(), 2u);
}

TEST_F(HealthWindowTest, ABuildsManifestSetsItsOwnThresholdAndWindow) {
  window_->set_defaults(50, std::chrono::seconds(300));
  fresh_->health_errors = 1;
  fresh_->health_window_seconds = 5;
  window_->Start(*fresh_, old_, {});
  Fail(*fresh_);
  Steps();
  EXPECT_EQ(verdicts_, std::vector<std::string>{"rollback"});
  verdicts_.clear();
  Generation* back = window_->Drop();  // a later swap
  EXPECT_EQ(back, old_);
  fresh_->health_errors = 0;  // the host's defaults again
  fresh_->health_window_seconds = 0;
  window_->Start(*fresh_, old_, {});
  clock_.Advance(std::chrono::seconds(299));
  Steps();
  EXPECT_TRUE(window_->active());
  clock_.Advance(std::chrono::seconds(1));
  Steps();
  EXPECT_FALSE(window_->active());
}

TEST_F(HealthWindowTest, WithNoBuildToRollBackToTheThresholdOnlyStopsItBeingGood) {
  window_->Start(*old_, nullptr, {});  // the boot generation's window
  Fail(*old_);
  Fail(*old_);
  Fail(*old_);
  Steps();
  EXPECT_TRUE(verdicts_.empty());
  EXPECT_TRUE(Logged("generation " + old_->name +
                     " reached 3 errors in its health window: it is "
                     "not recorded as last known good (there is no earlier build to roll back "
                     "to)"));
  clock_.Advance(std::chrono::seconds(30));
  Steps();
  EXPECT_FALSE(window_->active());
  EXPECT_TRUE(verdicts_.empty()) << "nothing to let go, nothing good";
}

TEST_F(HealthWindowTest, ASwapSilencesTheWindowAndARestoreResumesItForTheRestoredGeneration) {
  window_->Start(*fresh_, old_, {});
  Fail(*fresh_);
  window_->Silence();  // a swap begins: the generation being stopped never counts
  Fail(*fresh_);
  Fail(*fresh_);
  Steps();
  EXPECT_EQ(window_->errors(), 1u);
  std::unique_ptr<Generation> restored = set_->NewGeneration(fresh_->build_id);
  std::vector<std::string> copies;  // loaded, not initialized: the window needs no more
  ASSERT_TRUE(GenerationSet::CopiesOf(*fresh_, &copies).ok());
  Status loaded = set_->Load(*restored, copies, {}, true);
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  window_->Resume(*fresh_, *restored);
  EXPECT_EQ(window_->generation(), restored.get());
  EXPECT_TRUE(Logged("generation " + restored->name + " serves out the health window of " +
                     fresh_->name + " (1 errors so far, threshold 3)"));
  Fail(*restored);
  Fail(*restored);
  Steps();
  EXPECT_EQ(verdicts_, std::vector<std::string>{"rollback"});
  window_->Drop();
  set_->ReleaseLater(std::move(restored));
}

TEST_F(HealthWindowTest, ResumeIgnoresAGenerationNotOnProbation) {
  window_->Start(*fresh_, old_, {});
  window_->Resume(*old_, *fresh_);
  EXPECT_EQ(window_->generation(), fresh_.get());
  window_->Clear();
  EXPECT_FALSE(window_->active());
  window_->Resume(*fresh_, *old_);
  EXPECT_FALSE(window_->active());
}

TEST_F(HealthWindowTest, DropEndsTheWindowWithNoVerdict) {
  window_->Start(*fresh_, old_, {});
  EXPECT_EQ(window_->Drop(), old_);
  EXPECT_EQ(window_->Drop(), nullptr);
  Fail(*fresh_);
  Fail(*fresh_);
  Fail(*fresh_);
  clock_.Advance(std::chrono::seconds(60));
  Steps();
  EXPECT_TRUE(verdicts_.empty());
}

TEST_F(HealthWindowTest, ARollbackDueHandsOverTheFailedWindow) {
  States states{{"fx_gen", {1, "state of v1"}}};
  window_->Start(*fresh_, old_, states);
  Fail(*fresh_);
  Fail(*fresh_);
  Fail(*fresh_);
  ASSERT_TRUE(window_->rollback_due());
  window_->StopTimer();  // the verdict is in: it cannot pass now
  clock_.Advance(std::chrono::seconds(60));
  Steps();
  EXPECT_EQ(verdicts_, std::vector<std::string>{"rollback"}) << "no pass after the verdict";
  HealthWindow::Failed f = window_->TakeRollback();
  EXPECT_EQ(f.bad, fresh_.get());
  EXPECT_EQ(f.previous, old_);
  EXPECT_EQ(f.previous_states, states);
  EXPECT_EQ(f.errors, 3u);
  EXPECT_EQ(f.window, std::chrono::seconds(30));
  EXPECT_FALSE(window_->active());
  EXPECT_FALSE(window_->rollback_due());
}

}  // namespace
}  // namespace molt::kernel::loader
