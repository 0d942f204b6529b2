// SPDX-License-Identifier: Apache-2.0
// ErrorWatch: repeats of a warning or error within a window become one line with a count, and
// each distinct one a Kernel.ScriptError per window.
#include "kernel/src/admin/error_watch.h"

#include <gtest/gtest.h>

#include <thread>

#include "kernel/src/core/kernel.h"

namespace molt::kernel::admin {
namespace {

class ErrorWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KernelOptions o;
    o.clock = &clock_;
    kernel_ = std::move(Kernel::Boot(std::move(o))).value();
    capture_ = Logger::Get().Capture(
        [this](std::string_view line, LogLevel) { lines_.emplace_back(line); });
    published_ = kernel_->bus().Subscribe("Kernel.ScriptError", [this](std::string_view, Args a) {
      errors_.push_back({std::string(a[0].AsString()), std::string(a[1].AsString()),
                         std::string(a[2].AsString()), a[3].as.i});
    });
  }
  void TearDown() override {
    published_.Disconnect();
    (void)kernel_->Shutdown();
  }
  // Moves the clock past the window's end and steps: the window closes.
  void CloseWindow() {
    clock_.Advance(std::chrono::seconds(1));
    kernel_->scheduler().Step();
  }
  std::size_t Count(const std::string& line) const {
    return static_cast<std::size_t>(std::count(lines_.begin(), lines_.end(), line));
  }

  struct Published {
    std::string message, trace, source;
    std::int64_t count;
  };
  ManualClock clock_;
  std::unique_ptr<Kernel> kernel_;
  Logger::Registration capture_;
  Connection published_;
  std::vector<std::string> lines_;
  std::vector<Published> errors_;
};

TEST_F(ErrorWatchTest, RepeatsInAWindowBecomeOneLineWithACountAndOneScriptError) {
  ErrorWatch watch(*kernel_, std::chrono::seconds(1));
  LogScope plugin("fx@local-1#1");
  for (int i = 0; i < 12; ++i) {
    plugin.Warn("tick failed: {}", "boom");
  }
  LogScope("molt").Error("the disk is full");
  for (int i = 0; i < 3; ++i) {
    plugin.Info("below the warnings: never merged");
  }
  EXPECT_EQ(Count("[fx@local-1#1] tick failed: boom"), 1u);
  EXPECT_EQ(Count("[molt] the disk is full"), 1u);
  EXPECT_EQ(Count("[fx@local-1#1] below the warnings: never merged"), 3u);
  const ErrorWatch::Counts c = watch.counts();
  EXPECT_EQ(c.warnings, 12u);
  EXPECT_EQ(c.errors, 1u);
  EXPECT_EQ(c.merged, 11u);
  ASSERT_EQ(watch.Recent().size(), 2u);
  EXPECT_TRUE(errors_.empty()) << "published when the window closes";

  CloseWindow();
  EXPECT_EQ(Count("[fx@local-1#1] tick failed: boom (x12 in 1 s)"), 1u);
  EXPECT_EQ(Count("[molt] the disk is full (x1 in 1 s)"), 0u) << "a single one needs no summary";
  ASSERT_EQ(errors_.size(), 2u);
  EXPECT_EQ(errors_[0].message, "tick failed: boom");
  EXPECT_EQ(errors_[0].trace, "");
  EXPECT_EQ(errors_[0].source, "fx@local-1#1");
  EXPECT_EQ(errors_[0].count, 12);
  EXPECT_EQ(errors_[1].message, "the disk is full");
  EXPECT_EQ(errors_[1].count, 1);

  // A new window: the first occurrence is logged again.
  plugin.Warn("tick failed: {}", "boom");
  EXPECT_EQ(Count("[fx@local-1#1] tick failed: boom"), 2u);
  const std::vector<ErrorWatch::Entry> recent = watch.Recent();
  ASSERT_EQ(recent.size(), 3u);  // the open window's one, then the last window's two
  EXPECT_EQ(recent[0].count, 1u);
  EXPECT_EQ(recent[1].message, "the disk is full");
  EXPECT_EQ(recent[2].count, 12u);
  CloseWindow();
  EXPECT_EQ(errors_.size(), 3u);
}

TEST_F(ErrorWatchTest, MergesWhatOtherThreadsLogAndStopsWhenDestroyed) {
  {
    ErrorWatch watch(*kernel_, std::chrono::seconds(1));
    std::thread other([] {
      for (int i = 0; i < 100; ++i) {
        LogScope("Store").Error("write failed: disk I/O error");
      }
    });
    other.join();
    EXPECT_EQ(Count("[Store] write failed: disk I/O error"), 1u);
    EXPECT_EQ(watch.counts().merged, 99u);
    CloseWindow();
    EXPECT_EQ(Count("[Store] write failed: disk I/O error (x100 in 1 s)"), 1u);
    LogScope("Store").Error("write failed: disk I/O error");
    LogScope("Store").Error("write failed: disk I/O error");
  }
  // Destroyed mid-window: what it merged is logged, not lost.
  EXPECT_EQ(Count("[Store] write failed: disk I/O error (x2 in 1 s)"), 1u);
  LogScope("Store").Error("write failed: disk I/O error");
  LogScope("Store").Error("write failed: disk I/O error");
  EXPECT_EQ(Count("[Store] write failed: disk I/O error"), 4u) << "no gate once it is gone";
}

}  // namespace
}  // namespace molt::kernel::admin
