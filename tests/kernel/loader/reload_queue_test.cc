// SPDX-License-Identifier: Apache-2.0
// ReloadQueue: requests run on later steps (mount, then the swap), newest first, staged on a
// thread of their own with a background stager, a stuck stage abandoned at its deadline.
#include "kernel/src/loader/reload_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/kernel/loader/swap_fixture.h"

namespace molt::kernel::loader {
namespace {

class ReloadQueueTest : public SwapFixture {
 protected:
  void SetUp() override {
    SwapFixture::SetUp();
    queue_ = std::make_unique<ReloadQueue>(kernel_->scheduler(), *set_, *swap_, *stager_);
  }
  void TearDownParts() override {
    queue_.reset();
    SwapFixture::TearDownParts();
  }
  // A `done` that records each report as "<reason> ok" or "<reason> <error>".
  ReloadQueue::Done Hear() {
    return [this](const SwapReport& r) {
      heard_.push_back(r.reason + " " + (r.ok ? "ok" : r.error));
      reports_.push_back(r);
    };
  }
  std::unique_ptr<ReloadQueue> queue_;
  std::vector<std::string> heard_;
  std::vector<SwapReport> reports_;
};

TEST_F(ReloadQueueTest, TheMountAndTheSwapRunOnStepsOfTheirOwn) {
  BootWith("v1");
  queue_->Request(GenBuild("v2"), "test", Hear());
  EXPECT_TRUE(queue_->busy());
  EXPECT_FALSE(swap_->mounted()) << "nothing runs inside the request";
  Steps();
  EXPECT_TRUE(swap_->mounted());
  EXPECT_FALSE(queue_->busy());
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong v1"}) << "served between the two";
  Steps();
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong v2"});
  EXPECT_TRUE(heard_.empty()) << "the report comes in a task of its own";
  Steps();
  EXPECT_EQ(heard_, std::vector<std::string>{"test ok"});
}

TEST_F(ReloadQueueTest, TheNewestRequestWinsAndTheOneItReplacesIsTold) {
  BootWith("v1");
  queue_->Request(GenBuild("fail_init"), "first", Hear());
  queue_->Request(GenBuild("v2"), "second", Hear());
  ASSERT_EQ(heard_.size(), 1u);
  EXPECT_EQ(heard_[0], "first superseded by a newer reload request (second)");
  EXPECT_EQ(reports_[0].stage, "gate");
  EXPECT_EQ(reports_[0].serving, set_->serving().name);
  Steps(3);
  EXPECT_EQ(heard_, (std::vector<std::string>{"first superseded by a newer reload request (second)",
                                              "second ok"}));
}

TEST_F(ReloadQueueTest, AMountThatFailsIsHeardAtOnceAndAnAutomaticRequestDoesNotRetryIt) {
  BootWith("v1");
  queue_->Request(GenBuild("fail_init"), "operator", Hear());
  Steps();
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_EQ(reports_[0].stage, "mount");
  queue_->Request(GenBuild("fail_init"), "watch", Hear(), GenerationSwap::Trigger::kAutomatic);
  Steps();
  ASSERT_EQ(reports_.size(), 2u);
  EXPECT_EQ(reports_[1].stage, "gate");
  EXPECT_NE(reports_[1].error.find("it is not taken again automatically"), std::string::npos)
      << reports_[1].error;
}

TEST_F(ReloadQueueTest, WithABackgroundStagerTheBuildIsStagedOffTheKernelThread) {
  BootWith("v1");
  stager_->set_deadline(std::chrono::seconds(30));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> in_stage{false};
  std::atomic<std::thread::id> stage_thread;
  stager_->set_hook_for_testing([&, released] {
    stage_thread = std::this_thread::get_id();
    in_stage = true;
    released.wait();
  });
  queue_->Request(GenBuild("v2"), "test", Hear());
  ASSERT_TRUE(PumpUntil([&] { return in_stage.load(); }));
  EXPECT_TRUE(queue_->busy());
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong v1"}) << "the kernel thread serves on";
  // A request meanwhile waits for the stage in flight.
  queue_->Request(GenBuild("v2"), "later", Hear());
  release.set_value();
  ASSERT_TRUE(PumpUntil([&] { return heard_.size() == 2; }));
  EXPECT_EQ(heard_, (std::vector<std::string>{"test ok", "later ok"}));
  EXPECT_NE(stage_thread.load(), std::this_thread::get_id());
  EXPECT_GT(reports_[0].staged_ms, 0);
  EXPECT_LE(reports_[0].staged_ms, reports_[0].load_ms);
  EXPECT_FALSE(queue_->busy());
}

TEST_F(ReloadQueueTest, AStageStuckPastItsDeadlineFailsItsReloadAndTheNextOneRuns) {
  BootWith("v1");
  const std::string first = set_->serving().name;
  stager_->set_deadline(std::chrono::seconds(1));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> stages{0};
  stager_->set_hook_for_testing([&, released] {
    if (stages++ == 0) {
      released.wait();  // the first stage hangs until the end of the test
    }
  });
  queue_->Request(GenBuild("v2"), "first", Hear());
  ASSERT_TRUE(PumpUntil([&] { return stages.load() == 1; }));
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(PumpUntil([&] { return !heard_.empty(); }));
  EXPECT_EQ(reports_[0].stage, "mount");
  EXPECT_EQ(reports_[0].error, "reading the build in " + GenBuild("v2") +
                                   " took more than 1 s: abandoned (is its disk or file system "
                                   "stuck?); the serving generation serves on");
  EXPECT_EQ(reports_[0].serving, first);
  EXPECT_TRUE(swap_->failed_builds().empty()) << "nothing is known of the build itself";
  queue_->Request(GenBuild("v2"), "second", Hear());
  ASSERT_TRUE(PumpUntil([&] { return heard_.size() == 2; }));
  EXPECT_EQ(heard_[1], "second ok");
  release.set_value();
}

}  // namespace
}  // namespace molt::kernel::loader
