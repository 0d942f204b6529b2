// SPDX-License-Identifier: Apache-2.0
// Staging a build: the file system half of a load, and BuildStager running it on a thread of its
// own within a deadline (the manual clock moves it).
#include "kernel/src/loader/build_stager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "tests/kernel/loader/loader_fixture.h"

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;

class BuildStagerTest : public LoaderFixture {
 protected:
  void TearDownParts() override { stager_.reset(); }
  void SetUp() override {
    LoaderFixture::SetUp();
    stager_ = std::make_unique<BuildStager>(*kernel_);
  }
  std::unique_ptr<BuildStager> stager_;
};

TEST_F(BuildStagerTest, StageFilesCopiesEachFileUnderItsPrefixAndNamesWhatItRefuses) {
  const std::string so = GenBuild("v1") + "/fx_gen_v1.so";
  StagedFiles staged = StageFiles({so, copies_ + "-nowhere/gone.so"}, {}, copies_, "7.");
  ASSERT_TRUE(staged.status.ok()) << staged.status.ToString();
  ASSERT_EQ(staged.files.size(), 2u);
  ASSERT_TRUE(staged.files[0].library.has_value()) << staged.files[0].refusal;
  EXPECT_EQ(staged.files[0].library->source(), so);
  EXPECT_EQ(staged.files[0].library->copy(), copies_ + "/7.1-fx_gen_v1.so");
  EXPECT_TRUE(fs::exists(copies_ + "/7.1-fx_gen_v1.so"));
  EXPECT_FALSE(staged.files[1].library.has_value());
  EXPECT_NE(staged.files[1].refusal.find("gone.so"), std::string::npos) << staged.files[1].refusal;
  staged.files.clear();  // an unopened copy goes with its StagedLibrary
  EXPECT_FALSE(fs::exists(copies_ + "/7.1-fx_gen_v1.so"));
}

TEST_F(BuildStagerTest, StageFilesSaysWhenTheCopyDirectoryCannotBeMade) {
  fs::create_directories(copies_);
  std::ofstream(copies_ + "/file") << "a file, not a directory";
  StagedFiles staged =
      StageFiles({GenBuild("v1") + "/fx_gen_v1.so"}, {}, copies_ + "/file/sub", "1.");
  EXPECT_EQ(staged.status.code(), Status::Code::kIoError);
  EXPECT_NE(staged.status.message().find("cannot create the plugin copy directory \"" + copies_ +
                                         "/file/sub\""),
            std::string::npos)
      << staged.status.ToString();
}

TEST_F(BuildStagerTest, StageBuildReadsTheBuildAndStagesItsFiles) {
  StagedBuild staged = StageBuild(GenBuild("v2"), copies_, "3.");
  ASSERT_TRUE(staged.status.ok()) << staged.status.ToString();
  EXPECT_EQ(staged.build.id.rfind("local-", 0), 0u) << staged.build.id;
  ASSERT_EQ(staged.files.files.size(), 1u);
  EXPECT_TRUE(staged.files.files[0].library.has_value());
  EXPECT_GT(staged.ms, 0);
  StagedBuild missing = StageBuild(copies_ + "-nowhere", copies_, "4.");
  EXPECT_FALSE(missing.status.ok());
  EXPECT_TRUE(missing.files.files.empty());
}

TEST_F(BuildStagerTest, AJobRunsOnAThreadOfItsOwnAndItsResultComesBackOnTheKernelThread) {
  std::atomic<std::thread::id> job_thread;
  std::thread::id then_thread;
  double ms = 0;
  bool called = false;
  stager_->Run(
      [&] {
        job_thread = std::this_thread::get_id();
        StagedBuild staged;
        staged.ms = 42;
        return staged;
      },
      std::chrono::seconds(30),
      [&](StagedBuild* staged) {
        called = true;
        then_thread = std::this_thread::get_id();
        ms = staged != nullptr ? staged->ms : -1;
      });
  EXPECT_EQ(stager_->in_flight(), 1u);
  ASSERT_TRUE(PumpUntil([&] { return called; }));
  EXPECT_NE(job_thread.load(), std::this_thread::get_id());
  EXPECT_EQ(then_thread, std::this_thread::get_id());
  EXPECT_EQ(ms, 42);
  EXPECT_EQ(stager_->in_flight(), 0u);
}

// A job that stages a copy: the copy lives as long as its result.
std::function<StagedBuild()> CopyingJob(const std::string& copies, std::atomic<bool>* finished) {
  return [copies, finished, job = StageBuildJob(LoaderFixture::GenBuild("v1"), copies, "5.")] {
    StagedBuild staged = job();
    *finished = true;
    return staged;
  };
}

TEST_F(BuildStagerTest, AJobPastItsDeadlineIsAbandonedAndItsLateResultDropped) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> finished{false};
  stager_->set_hook_for_testing([released] { released.wait(); });
  std::vector<bool> heard;  // true: a result, false: abandoned
  stager_->Run(CopyingJob(copies_, &finished), std::chrono::seconds(1),
               [&](StagedBuild* staged) { heard.push_back(staged != nullptr); });
  clock_.Advance(std::chrono::milliseconds(999));
  Steps();
  EXPECT_TRUE(heard.empty());
  clock_.Advance(std::chrono::milliseconds(1));
  Steps();
  EXPECT_EQ(heard, std::vector<bool>{false});
  EXPECT_EQ(stager_->in_flight(), 0u);
  release.set_value();
  // The late result reaches the kernel thread, finds no one waiting, and its copy goes with it.
  const std::string copy = copies_ + "/5.1-fx_gen_v1.so";
  ASSERT_TRUE(PumpUntil([&] { return finished.load() && !fs::exists(copy); }));
  EXPECT_EQ(heard, std::vector<bool>{false});
}

TEST_F(BuildStagerTest, AbandonLeavesAJobStillRunningAnsweringNoOne) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> finished{false};
  stager_->set_hook_for_testing([released] { released.wait(); });
  int heard = 0;
  stager_->Run(CopyingJob(copies_, &finished), std::chrono::seconds(1),
               [&](StagedBuild*) { ++heard; });
  stager_->Abandon();
  clock_.Advance(std::chrono::seconds(2));
  Steps();
  EXPECT_EQ(heard, 0) << "no deadline fires once abandoned";
  release.set_value();
  const std::string copy = copies_ + "/5.1-fx_gen_v1.so";
  ASSERT_TRUE(PumpUntil([&] { return finished.load() && !fs::exists(copy); }));
  EXPECT_EQ(heard, 0);
}

TEST_F(BuildStagerTest, StageBuildJobStagesTheBuildInItsDirectory) {
  std::function<StagedBuild()> job = StageBuildJob(GenBuild("v1"), copies_, "9.");
  StagedBuild staged = job();
  ASSERT_TRUE(staged.status.ok()) << staged.status.ToString();
  ASSERT_EQ(staged.files.files.size(), 1u);
  EXPECT_EQ(staged.files.files[0].library->copy(), copies_ + "/9.1-fx_gen_v1.so");
}

TEST(BuildStagerTimeoutTest, NamesTheDirectoryAndTheDeadline) {
  EXPECT_EQ(BuildStager::Timeout("/builds/b7", std::chrono::seconds(60)),
            "reading the build in /builds/b7 took more than 60 s: abandoned (is its disk or file "
            "system stuck?)");
}

TEST_F(BuildStagerTest, StagesInlineUnlessADeadlineIsSet) {
  EXPECT_FALSE(stager_->background());
  stager_->set_deadline(std::chrono::seconds(60));
  EXPECT_TRUE(stager_->background());
  EXPECT_EQ(stager_->deadline(), std::chrono::seconds(60));
}

}  // namespace
}  // namespace molt::kernel::loader
