// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/logger.h
//
// The kernel's logger (spec: Logger). One process-wide Logger dispatches structured entries
// {scope, level, message, time} to sinks; the console is one of them, written through spdlog as
// text or JSON lines. Code logs through a LogScope:
//
//   LogScope log("DataDriver");
//   log.Warn("profile {} is {} bytes over the limit", user_id, excess);
//
// Levels: Debug < Info < Warn < Error; entries below the level are dropped before formatting.
// Sinks are isolated: an exception from one is caught and the others still run, and a sink removed
// while an entry is being emitted is not called again and does not make the next one skip.
// Capture() routes console lines to a handler while the returned guard lives (tests use it).
//
// Thread safety: every member is safe to call from any thread. Sinks run on the emitting thread,
// and must not log themselves (the entry is dropped: no recursion).
#ifndef MOLT_KERNEL_CORE_LOGGER_H_
#define MOLT_KERNEL_CORE_LOGGER_H_

#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace molt::kernel {

enum class LogLevel : std::int32_t { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

// "debug", "info", "warn", "error", "off".
std::string_view LogLevelName(LogLevel level);
// Parses a name LogLevelName returns; false when `name` is none of them.
bool ParseLogLevel(std::string_view name, LogLevel* level);

// One log entry as sinks see it. The views are valid only during the sink call.
struct LogEntry {
  std::string_view scope;
  LogLevel level;
  std::string_view message;
  std::chrono::system_clock::time_point time;
};

enum class ConsoleFormat { kText, kJson };

class Logger {
 public:
  using Sink = std::function<void(const LogEntry&)>;
  // Decides, before any sink or the console, whether an entry is emitted at all (false drops
  // it). One gate at a time: ErrorWatch's deduplication.
  using Gate = std::function<bool(const LogEntry&)>;
  // A console line ("[scope] message") and its level.
  using CaptureFn = std::function<void(std::string_view line, LogLevel level)>;

  // Removes its sink (or ends its capture) when destroyed or on Remove(); move-only.
  class [[nodiscard]] Registration {
   public:
    Registration() = default;
    Registration(Registration&& other) noexcept : id_(std::exchange(other.id_, 0)) {}
    Registration& operator=(Registration&& other) noexcept;
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    ~Registration() { Remove(); }
    void Remove() noexcept;

   private:
    friend class Logger;
    explicit Registration(std::uint64_t id) : id_(id) {}
    std::uint64_t id_ = 0;
  };

  // The process-wide logger.
  static Logger& Get();

  void SetLevel(LogLevel level) { level_.store(level, std::memory_order_relaxed); }
  LogLevel level() const { return level_.load(std::memory_order_relaxed); }
  bool Enabled(LogLevel level) const { return level >= this->level() && level != LogLevel::kOff; }

  // Turns console output on or off; sinks still receive every entry.
  void SetConsoleEnabled(bool enabled) { console_.store(enabled, std::memory_order_relaxed); }
  bool console_enabled() const { return console_.load(std::memory_order_relaxed); }
  // Text ("2026-11-29 10:00:00.123 warn  [scope] message") or one JSON object per line.
  void SetConsoleFormat(ConsoleFormat format);

  // Adds a sink that receives every entry at or above the level.
  Registration AddSink(Sink sink);
  // Installs `gate` (replacing any other) until the guard is destroyed. It runs on the emitting
  // thread, must be thread-safe and must not log; an exception from it lets the entry through.
  Registration SetGate(Gate gate);
  // Routes console lines to `fn` instead of the console until the guard is destroyed. Captures
  // nest: the newest one receives the lines.
  Registration Capture(CaptureFn fn);

  // Emits one entry. Most code uses LogScope instead.
  void Emit(std::string_view scope, LogLevel level, std::string_view message);

 private:
  Logger();
  struct State;
  std::atomic<LogLevel> level_{LogLevel::kInfo};
  std::atomic<bool> console_{true};
  std::shared_ptr<State> state_;
};

// A named source of log entries (spec: Logger.scope(name)). Cheap to copy.
class LogScope {
 public:
  explicit LogScope(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }

  template <class... A>
  void Debug(fmt::format_string<A...> f, A&&... a) const {
    Log(LogLevel::kDebug, f, std::forward<A>(a)...);
  }
  template <class... A>
  void Info(fmt::format_string<A...> f, A&&... a) const {
    Log(LogLevel::kInfo, f, std::forward<A>(a)...);
  }
  template <class... A>
  void Warn(fmt::format_string<A...> f, A&&... a) const {
    Log(LogLevel::kWarn, f, std::forward<A>(a)...);
  }
  template <class... A>
  void Error(fmt::format_string<A...> f, A&&... a) const {
    Log(LogLevel::kError, f, std::forward<A>(a)...);
  }

  template <class... A>
  void Log(LogLevel level, fmt::format_string<A...> f, A&&... a) const {
    Logger& logger = Logger::Get();
    if (logger.Enabled(level)) {
      logger.Emit(name_, level, fmt::format(f, std::forward<A>(a)...));
    }
  }

 private:
  std::string name_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_LOGGER_H_
