// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/server/close_phase.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
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
  // A plugin's stop() abandoned at its deadline answers so (PluginInstance::StopWithin).
  Status StopWithin(Duration limit) override {
    if (!overrun) {
      return Stop();
    }
    journal_->push_back("stop " + name_ + " (cut)");
    return Status::TimedOut(fmt::format("stop() did not return within {:g} s", ToSeconds(limit)));
  }
  std::function<void()> block;
  bool fail = false;
  bool overrun = false;

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

// The drain and the `stopped` hook, as Assembly::Close gives them.
ClosePhase::Hooks Journaled(std::vector<std::string>& journal) {
  return {.drain = [&journal] { journal.push_back("drain"); },
          .stopped = [&journal] { journal.push_back("stopped"); }};
}

TEST_F(ClosePhaseTest, ClosingThenEveryStopInReverseBootOrderThenStoppedThenTheDrain) {
  ClosePhase close(*kernel_, {}, nullptr);
  b_->fail = true;  // isolated: A still stops
  EXPECT_TRUE(close.Begin("SIGTERM", Journaled(journal_)));
  EXPECT_EQ(journal_, (std::vector<std::string>{"Kernel.Closing(SIGTERM)", "stop B", "stop A",
                                                "Kernel.Stopped(SIGTERM)", "drain", "stopped"}));
  EXPECT_TRUE(close.overruns().empty());  // a failure is not an overrun
  EXPECT_FALSE(kernel_->shut_down());     // the close phase does not shut the kernel down
  EXPECT_NE(
      std::find_if(lines_.begin(), lines_.end(),
                   [](const std::string& l) {
                     return l.starts_with("[molt] stopped (SIGTERM): every service stopped in");
                   }),
      lines_.end());
  close.Finish();
}

// The drain waits for Kernel.Stopped at most drain_wait: past it, it runs between two stops and
// the stops go on.
TEST_F(ClosePhaseTest, TheDrainRunsBetweenTwoStopsOnceItsWaitPassed) {
  ClosePhase close(*kernel_, {.drain_wait = Duration::zero()}, nullptr);
  EXPECT_TRUE(close.Begin("SIGTERM", Journaled(journal_)));
  EXPECT_EQ(journal_, (std::vector<std::string>{"Kernel.Closing(SIGTERM)", "stop B", "drain",
                                                "stop A", "Kernel.Stopped(SIGTERM)", "stopped"}));
  close.Finish();
}

// A stop cut at its deadline is named, with how long it ran, and the close goes on.
TEST_F(ClosePhaseTest, AStopCutAtItsDeadlineIsNamedAndTheRestStillStop) {
  ClosePhase close(*kernel_, {}, nullptr);
  b_->overrun = true;
  EXPECT_TRUE(close.Begin("SIGTERM", Journaled(journal_)));
  EXPECT_EQ(journal_, (std::vector<std::string>{"Kernel.Closing(SIGTERM)", "stop B (cut)", "stop A",
                                                "Kernel.Stopped(SIGTERM)", "drain", "stopped"}));
  ASSERT_EQ(close.overruns().size(), 1u);
  EXPECT_TRUE(close.overruns()[0].starts_with("B (")) << close.overruns()[0];
  EXPECT_NE(std::find_if(lines_.begin(), lines_.end(),
                         [](const std::string& l) {
                           return l.starts_with("[molt] stopped (SIGTERM) in ") &&
                                  l.find(", 1 stop(s) cut at their deadline: B (") !=
                                      std::string::npos;
                         }),
            lines_.end())
      << ::testing::PrintToString(lines_);
  close.Finish();
}

TEST_F(ClosePhaseTest, ASecondCloseAndACloseAfterShutdownAreIgnored) {
  ClosePhase close(*kernel_, {}, nullptr);
  ASSERT_TRUE(close.Begin("SIGTERM", {}));
  journal_.clear();
  lines_.clear();
  EXPECT_FALSE(close.Begin("SIGINT", Journaled(journal_)));
  EXPECT_TRUE(journal_.empty());
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0],
            "[molt] close (SIGINT) ignored: a close is already running (SIGKILL forces an exit)");
  close.Finish();
  ASSERT_TRUE(kernel_->Shutdown().ok());
  ClosePhase late(*kernel_, {}, nullptr);
  lines_.clear();
  EXPECT_FALSE(late.Begin("SIGTERM", {}));
  EXPECT_EQ(lines_,
            std::vector<std::string>{"[molt] close (SIGTERM) ignored: the kernel is shut down"});
}

// A stop with no deadline of its own (a native service) that blocks: the watchdog warns at the
// budget and cuts the close at its deadline, from its own thread, while the stop still runs.
TEST_F(ClosePhaseTest, AStuckCloseIsWarnedAtTheBudgetAndCutAtTheDeadline) {
  std::mutex mu;
  std::condition_variable cv;
  bool cut = false;
  b_->block = [&] {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return cut; });
  };
  ClosePhase close(
      *kernel_,
      {.budget = std::chrono::milliseconds(50), .deadline = std::chrono::milliseconds(100)}, [&] {
        std::lock_guard lock(mu);
        cut = true;
        cv.notify_all();
      });
  ASSERT_TRUE(close.Begin("SIGTERM", Journaled(journal_)));
  EXPECT_TRUE(cut);
  const auto warned =
      std::find(lines_.begin(), lines_.end(), "[molt] close stop phase still running after 0.05s");
  ASSERT_NE(warned, lines_.end()) << ::testing::PrintToString(lines_);
  EXPECT_NE(std::find_if(warned, lines_.end(),
                         [](const std::string& l) {
                           return l.starts_with(
                               "[molt] the close did not finish in 0.1 s: the "
                               "kernel thread is stuck");
                         }),
            lines_.end())
      << ::testing::PrintToString(lines_);
  EXPECT_EQ(journal_.back(), "stopped");  // the stops went on and finished
}

}  // namespace
}  // namespace molt::kernel
