// SPDX-License-Identifier: Apache-2.0
// Logger: sink dispatch (copy-on-write list, so removal during an emit is safe), the spdlog
// console, captures, and the recursion guard.
#include "kernel/src/core/logger.h"

#include <fmt/chrono.h>
#include <molt/scope_exit.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace molt::kernel {
namespace {

struct SinkSlot {
  std::uint64_t id;
  Logger::Sink fn;
  std::atomic<bool> alive{true};
};

struct CaptureSlot {
  std::uint64_t id;
  Logger::CaptureFn fn;
};

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

spdlog::level::level_enum ToSpdlog(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
    case LogLevel::kOff:
      break;
  }
  return spdlog::level::off;
}

thread_local bool t_in_emit = false;

}  // namespace

struct Logger::State {
  std::mutex mu;
  std::uint64_t next_id = 1;
  std::shared_ptr<const std::vector<std::shared_ptr<SinkSlot>>> sinks =
      std::make_shared<std::vector<std::shared_ptr<SinkSlot>>>();
  std::vector<std::shared_ptr<CaptureSlot>> captures;
  std::shared_ptr<const Gate> gate;
  std::uint64_t gate_id = 0;
  ConsoleFormat format = ConsoleFormat::kText;
  std::shared_ptr<spdlog::logger> console;

  void Remove(std::uint64_t id) {
    std::lock_guard lock(mu);
    if (id == gate_id) {
      gate.reset();
      gate_id = 0;
      return;
    }
    auto copy = std::make_shared<std::vector<std::shared_ptr<SinkSlot>>>(*sinks);
    auto it = std::find_if(copy->begin(), copy->end(), [&](auto& s) { return s->id == id; });
    if (it != copy->end()) {
      (*it)->alive.store(false);
      copy->erase(it);
      sinks = std::move(copy);
      return;
    }
    captures.erase(
        std::remove_if(captures.begin(), captures.end(), [&](auto& c) { return c->id == id; }),
        captures.end());
  }
};

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "?";
}

bool ParseLogLevel(std::string_view name, LogLevel* level) {
  for (LogLevel l :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError, LogLevel::kOff}) {
    if (LogLevelName(l) == name) {
      *level = l;
      return true;
    }
  }
  return false;
}

Logger& Logger::Get() {
  static Logger* logger = new Logger();  // never destroyed: usable from static destructors
  return *logger;
}

Logger::Logger() : state_(std::make_shared<State>()) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  state_->console = std::make_shared<spdlog::logger>("molt", std::move(sink));
  state_->console->set_level(spdlog::level::trace);
  state_->console->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%v%$");
}

void Logger::SetConsoleFormat(ConsoleFormat format) {
  std::lock_guard lock(state_->mu);
  state_->format = format;
  state_->console->set_pattern(format == ConsoleFormat::kJson ? "%v"
                                                              : "%Y-%m-%d %H:%M:%S.%e %^%v%$");
}

Logger::Registration Logger::AddSink(Sink sink) {
  std::lock_guard lock(state_->mu);
  auto slot = std::make_shared<SinkSlot>();
  slot->id = state_->next_id++;
  slot->fn = std::move(sink);
  auto copy = std::make_shared<std::vector<std::shared_ptr<SinkSlot>>>(*state_->sinks);
  copy->push_back(slot);
  state_->sinks = std::move(copy);
  return Registration(slot->id);
}

Logger::Registration Logger::SetGate(Gate gate) {
  std::lock_guard lock(state_->mu);
  state_->gate = std::make_shared<const Gate>(std::move(gate));
  state_->gate_id = state_->next_id++;
  return Registration(state_->gate_id);
}

Logger::Registration Logger::Capture(CaptureFn fn) {
  std::lock_guard lock(state_->mu);
  auto slot = std::make_shared<CaptureSlot>();
  slot->id = state_->next_id++;
  slot->fn = std::move(fn);
  state_->captures.push_back(slot);
  return Registration(slot->id);
}

void Logger::Registration::Remove() noexcept {
  if (id_ != 0) {
    Logger::Get().state_->Remove(std::exchange(id_, 0));
  }
}

Logger::Registration& Logger::Registration::operator=(Registration&& other) noexcept {
  if (this != &other) {
    Remove();
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void Logger::Emit(std::string_view scope, LogLevel level, std::string_view message) {
  if (!Enabled(level) || t_in_emit) {
    return;
  }
  t_in_emit = true;
  ScopeExit reset = []() noexcept { t_in_emit = false; };

  const LogEntry entry{scope, level, message, std::chrono::system_clock::now()};
  std::shared_ptr<const std::vector<std::shared_ptr<SinkSlot>>> sinks;
  std::shared_ptr<CaptureSlot> capture;
  std::shared_ptr<const Gate> gate;
  ConsoleFormat format;
  {
    std::lock_guard lock(state_->mu);
    sinks = state_->sinks;
    if (!state_->captures.empty()) {
      capture = state_->captures.back();
    }
    gate = state_->gate;
    format = state_->format;
  }
  if (gate) {
    bool pass = true;
    try {
      pass = (*gate)(entry);
    } catch (...) {
      // A broken gate drops nothing.
    }
    if (!pass) {
      return;
    }
  }
  for (const auto& sink : *sinks) {
    if (!sink->alive.load(std::memory_order_relaxed)) {
      continue;
    }
    try {
      sink->fn(entry);
    } catch (...) {
      // Isolated: a broken sink never breaks the caller or the other sinks.
    }
  }
  if (!console_enabled()) {
    return;
  }
  if (capture) {
    std::string line = fmt::format("[{}] {}", scope, message);
    try {
      capture->fn(line, level);
    } catch (...) {
    }
    return;
  }
  std::string line;
  if (format == ConsoleFormat::kJson) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(entry.time);
    const auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(entry.time.time_since_epoch())
            .count() %
        1000;
    line = fmt::format("{{\"ts\":\"{:%Y-%m-%dT%H:%M:%S}.{:03}Z\",\"level\":\"{}\",\"scope\":",
                       fmt::gmtime(seconds), millis, LogLevelName(level));
    AppendJsonString(line, scope);
    line += ",\"msg\":";
    AppendJsonString(line, message);
    line += '}';
  } else {
    line = fmt::format("{:<5} [{}] {}", LogLevelName(level), scope, message);
  }
  state_->console->log(ToSpdlog(level), line);
}

}  // namespace molt::kernel
