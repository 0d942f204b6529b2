// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/server/close_phase.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"

namespace molt::kernel {
namespace {

class Native : public Service {
 public:
  Native(std::string name, std::vector<std::string> deps, std::vector<std::string>* journal)
      : name_(std::move(name)), deps_(std::move(deps)), journal_(journal) {}
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& dependencies() const override { return deps_; }
  Status Init() override { return Status::Ok(); }
  Status Start() override { return Status::Ok(); }
  Status Stop() override {
    journal_->push_back("stop " + name_);
    if (block) {
      block();
    }
    return fail ? Status::Internal("flush failed") : Status::Ok();
  }
  std::function<void()> block;
  bool fail = false;

 private:
  std::string name_;
  std::vector<std::string> deps_;
  std::vector<std::string>* journal_;
};

class ClosePhaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kernel_ = std::move(Kernel::Boot({})).value();
    a_ = std::make_shared<Native>("A", std::vector<std::string>{}, &journal_);
    b_ = std::make_shared<Native>("B", std::vector<std::string>{"A"}, &journal_);
    ASSERT_TRUE(kernel_->RegisterService(a_).ok());
    ASSERT_TRUE(kernel_->RegisterService(b_).ok());
    ASSERT_TRUE(kernel_->Start().ok());
    kernel_->bus().Subscribe("Kernel.*", [this](std::string_view topic, Args args) {
      if (topic == "Kernel.Closing" || topic == "Kernel.Stopped") {
        journal_.push_back(std::string(topic) + "(" + std::string(args[0].AsString()) + ")");
      }
    });
  }

  std::unique_ptr<Kernel> kernel_;
  std::shared_ptr<Native> a_, b_;
  std::vector<std::string> journal_;
  std::vector<std::string> lines_;
  Logger::Registration capture_ = Logger::Get().Capture(
      [this](std::string_view l, LogLevel) { lines_.push_back(std::string(l)); });
};

TEST_F(ClosePhaseTest, ClosingThenEveryStopInReverseBootOrderThenStopped) {
  ClosePhase close(*kernel_, kCloseBudget, nullptr);
  bool done = false;
  b_->fail = true;  // isolated: A still stops
  EXPECT_TRUE(close.Begin("SIGTERM", [&] { done = true; }));
  EXPECT_TRUE(done);
  EXPECT_EQ(journal_, (std::vector<std::string>{"Kernel.Closing(SIGTERM)", "stop B", "stop A",
                                                "Kernel.Stopped(SIGTERM)"}));
  EXPECT_FALSE(kernel_->shut_down());  // the close phase does not shut the kernel down
}

TEST_F(ClosePhaseTest, ASecondCloseAndACloseAfterShutdownAreIgnored) {
  ClosePhase close(*kernel_, kCloseBudget, nullptr);
  ASSERT_TRUE(close.Begin("SIGTERM", nullptr));
  journal_.clear();
  lines_.clear();
  EXPECT_FALSE(close.Begin("SIGINT", nullptr));
  EXPECT_TRUE(journal_.empty());
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0],
            "[molt] close (SIGINT) ignored: a close is already running (SIGKILL forces an exit)");
  ASSERT_TRUE(kernel_->Shutdown().ok());
  ClosePhase late(*kernel_, kCloseBudget, nullptr);
  lines_.clear();
  EXPECT_FALSE(late.Begin("SIGTERM", nullptr));
  EXPECT_EQ(lines_,
            std::vector<std::string>{"[molt] close (SIGTERM) ignored: the kernel is shut down"});
}

TEST_F(ClosePhaseTest, OverBudgetWarnsAndCallsTheOverrunWhileTheStopStillRuns) {
  std::mutex mu;
  std::condition_variable cv;
  bool overrun = false;
  // B's stop blocks until the watchdog has fired: the close outlives its (tiny) budget.
  b_->block = [&] {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return overrun; });
  };
  ClosePhase close(*kernel_, std::chrono::milliseconds(50), [&] {
    std::lock_guard lock(mu);
    overrun = true;
    cv.notify_all();
  });
  ASSERT_TRUE(close.Begin("SIGTERM", nullptr));
  EXPECT_TRUE(overrun);
  EXPECT_NE(
      std::find(lines_.begin(), lines_.end(), "[molt] close stop phase still running after 0.05s"),
      lines_.end());
  EXPECT_EQ(journal_.back(), "Kernel.Stopped(SIGTERM)");  // the stops went on and finished
}

}  // namespace
}  // namespace molt::kernel
