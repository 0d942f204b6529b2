// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/core/logger.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace molt::kernel {
namespace {

class LoggerTest : public ::testing::Test {
 protected:
  void SetUp() override { Logger::Get().SetLevel(LogLevel::kInfo); }
  void TearDown() override {
    Logger::Get().SetLevel(LogLevel::kInfo);
    Logger::Get().SetConsoleEnabled(true);
    Logger::Get().SetConsoleFormat(ConsoleFormat::kText);
  }
};

TEST_F(LoggerTest, SinksReceiveStructuredEntries) {
  std::vector<std::string> got;
  auto before = std::chrono::system_clock::now();
  std::chrono::system_clock::time_point when;
  auto sink = Logger::Get().AddSink([&](const LogEntry& e) {
    got.push_back(std::string(e.scope) + "|" + std::string(LogLevelName(e.level)) + "|" +
                  std::string(e.message));
    when = e.time;
  });
  auto quiet = Logger::Get().Capture([](std::string_view, LogLevel) {});
  LogScope("Shop").Warn("stock low: {} left of {}", 2, "potion");
  EXPECT_EQ(got, std::vector<std::string>{"Shop|warn|stock low: 2 left of potion"});
  EXPECT_GE(when, before);
}

TEST_F(LoggerTest, DebugIsHiddenUntilTheLevelAllowsIt) {
  std::vector<std::string> got;
  auto sink =
      Logger::Get().AddSink([&](const LogEntry& e) { got.push_back(std::string(e.message)); });
  auto quiet = Logger::Get().Capture([](std::string_view, LogLevel) {});
  LogScope log("T");
  log.Debug("hidden");
  Logger::Get().SetLevel(LogLevel::kDebug);
  log.Debug("shown");
  Logger::Get().SetLevel(LogLevel::kError);
  log.Warn("filtered");
  log.Error("kept");
  EXPECT_EQ(got, (std::vector<std::string>{"shown", "kept"}));
}

TEST_F(LoggerTest, ThrowingSinkDoesNotBreakTheCallerOrTheOtherSinks) {
  int second = 0;
  auto bad = Logger::Get().AddSink([](const LogEntry&) { throw std::runtime_error("disk full"); });
  auto good = Logger::Get().AddSink([&](const LogEntry&) { ++second; });
  auto quiet = Logger::Get().Capture([](std::string_view, LogLevel) {});
  EXPECT_NO_THROW(LogScope("T").Info("x"));
  EXPECT_EQ(second, 1);
}

TEST_F(LoggerTest, SinkRemovedDuringAnEmitIsNotCalledAndDoesNotSkipTheNext) {
  std::vector<std::string> got;
  Logger::Registration b;
  auto a = Logger::Get().AddSink([&](const LogEntry&) {
    got.push_back("a");
    b.Remove();
  });
  b = Logger::Get().AddSink([&](const LogEntry&) { got.push_back("b"); });
  auto c = Logger::Get().AddSink([&](const LogEntry&) { got.push_back("c"); });
  auto quiet = Logger::Get().Capture([](std::string_view, LogLevel) {});
  LogScope("T").Info("x");
  LogScope("T").Info("y");
  EXPECT_EQ(got, (std::vector<std::string>{"a", "c", "a", "c"}));
}

TEST_F(LoggerTest, RemovedSinkStopsReceiving) {
  int n = 0;
  auto quiet = Logger::Get().Capture([](std::string_view, LogLevel) {});
  {
    auto sink = Logger::Get().AddSink([&](const LogEntry&) { ++n; });
    LogScope("T").Info("x");
  }
  LogScope("T").Info("y");
  EXPECT_EQ(n, 1);
}

TEST_F(LoggerTest, CaptureRoutesConsoleLinesUntilReleased) {
  std::vector<std::string> lines;
  std::vector<LogLevel> levels;
  {
    auto capture = Logger::Get().Capture([&](std::string_view line, LogLevel level) {
      lines.push_back(std::string(line));
      levels.push_back(level);
    });
    LogScope("DataDriver PlayerData").Warn("save failed: {}", "busy");
  }
  EXPECT_EQ(lines, std::vector<std::string>{"[DataDriver PlayerData] save failed: busy"});
  EXPECT_EQ(levels, std::vector<LogLevel>{LogLevel::kWarn});
  testing::internal::CaptureStderr();
  LogScope("T").Info("to the console");
  EXPECT_NE(testing::internal::GetCapturedStderr().find("info  [T] to the console"),
            std::string::npos);
}

TEST_F(LoggerTest, NestedCapturesGoToTheNewest) {
  std::vector<std::string> outer, inner;
  auto a =
      Logger::Get().Capture([&](std::string_view l, LogLevel) { outer.push_back(std::string(l)); });
  {
    auto b = Logger::Get().Capture(
        [&](std::string_view l, LogLevel) { inner.push_back(std::string(l)); });
    LogScope("T").Info("1");
  }
  LogScope("T").Info("2");
  EXPECT_EQ(inner, std::vector<std::string>{"[T] 1"});
  EXPECT_EQ(outer, std::vector<std::string>{"[T] 2"});
}

TEST_F(LoggerTest, DisabledConsoleStillFeedsSinks) {
  int n = 0;
  auto sink = Logger::Get().AddSink([&](const LogEntry&) { ++n; });
  Logger::Get().SetConsoleEnabled(false);
  testing::internal::CaptureStderr();
  LogScope("T").Error("quiet");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(n, 1);
}

TEST_F(LoggerTest, JsonConsoleWritesOneEscapedObjectPerLine) {
  Logger::Get().SetConsoleFormat(ConsoleFormat::kJson);
  testing::internal::CaptureStderr();
  LogScope("Net").Warn("bad \"frame\"\n{}", 1);
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out.rfind("{\"ts\":\"", 0), 0u) << out;
  EXPECT_NE(
      out.find("Z\",\"level\":\"warn\",\"scope\":\"Net\",\"msg\":\"bad \\\"frame\\\"\\n1\"}\n"),
      std::string::npos)
      << out;
}

TEST_F(LoggerTest, SinkThatLogsDoesNotRecurse) {
  int n = 0;
  auto sink = Logger::Get().AddSink([&](const LogEntry&) {
    ++n;
    LogScope("Sink").Error("from inside a sink");
  });
  auto quiet = Logger::Get().Capture([](std::string_view, LogLevel) {});
  LogScope("T").Info("x");
  EXPECT_EQ(n, 1);
}

TEST(LogLevelTest, NamesRoundTrip) {
  for (LogLevel l :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError, LogLevel::kOff}) {
    LogLevel parsed;
    ASSERT_TRUE(ParseLogLevel(LogLevelName(l), &parsed));
    EXPECT_EQ(parsed, l);
  }
  LogLevel parsed;
  EXPECT_FALSE(ParseLogLevel("verbose", &parsed));
  EXPECT_LT(LogLevel::kDebug, LogLevel::kInfo);
  EXPECT_LT(LogLevel::kWarn, LogLevel::kError);
}

}  // namespace
}  // namespace molt::kernel
