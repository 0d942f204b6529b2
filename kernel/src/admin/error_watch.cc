// SPDX-License-Identifier: Apache-2.0
// ErrorWatch: warnings and errors deduplicated per window, published as Kernel.ScriptError.
#include "kernel/src/admin/error_watch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernel/src/core/kernel.h"
#include "kernel/src/core/value.h"

namespace molt::kernel::admin {
namespace {

thread_local bool t_summarizing = false;  // the summary lines pass the gate

std::string WindowText(Duration d) {
  return fmt::format("{:g} s", std::round(ToSeconds(d) * 10) / 10);  // "30 s", "0.5 s"
}

}  // namespace

ErrorWatch::ErrorWatch(Kernel& kernel, Duration window)
    : kernel_(kernel),
      window_(window),
      task_(kernel.scheduler().Every(
          window, [this] { CloseWindow(true); }, Priority::kKernel,
          TaskOrigin::Named("error watch"))),
      gate_(
          Logger::Get().SetGate([state = state_](const LogEntry& e) { return Gate(*state, e); })) {}

ErrorWatch::~ErrorWatch() {
  task_.Cancel();
  gate_.Remove();
  CloseWindow(/*publish=*/false);  // the kernel may be shut down: only the log lines
}

bool ErrorWatch::Gate(State& state, const LogEntry& e) {
  if (e.level < LogLevel::kWarn || t_summarizing) {
    return true;
  }
  std::lock_guard lock(state.mu);
  (e.level == LogLevel::kError ? state.counts.errors : state.counts.warnings)++;
  std::string key;
  key.reserve(e.scope.size() + 1 + e.message.size());
  key.append(e.scope).push_back('\0');
  key.append(e.message);
  auto it = state.open.find(key);
  if (it == state.open.end()) {
    if (state.open.size() < kMaxKeys) {
      state.open.emplace(std::move(key), Entry{std::string(e.scope), std::string(e.message),
                                               e.level, 1, e.time, e.time});
    }
    return true;
  }
  ++it->second.count;
  it->second.last = e.time;
  ++state.counts.merged;
  return false;
}

void ErrorWatch::CloseWindow(bool publish) {
  std::vector<Entry> window;
  {
    std::lock_guard lock(state_->mu);
    for (auto& [key, entry] : state_->open) {
      window.push_back(std::move(entry));
    }
    state_->open.clear();
  }
  std::sort(window.begin(), window.end(),
            [](const Entry& a, const Entry& b) { return a.first < b.first; });
  {
    t_summarizing = true;
    for (const Entry& e : window) {
      if (e.count > 1) {
        Logger::Get().Emit(e.scope, e.level,
                           fmt::format("{} (x{} in {})", e.message, e.count, WindowText(window_)));
      }
    }
    t_summarizing = false;
  }
  for (const Entry& e : publish ? window : std::vector<Entry>()) {
    const Value args[] = {Value::String(e.message), Value::String(""), Value::String(e.scope),
                          Value::Int(static_cast<std::int64_t>(e.count))};
    kernel_.bus().Publish("Kernel.ScriptError", args);
  }
  std::lock_guard lock(state_->mu);
  state_->closed = std::move(window);
}

std::vector<ErrorWatch::Entry> ErrorWatch::Recent() const {
  std::lock_guard lock(state_->mu);
  std::vector<Entry> open;
  for (const auto& [key, entry] : state_->open) {
    open.push_back(entry);
  }
  std::sort(open.begin(), open.end(),
            [](const Entry& a, const Entry& b) { return a.first > b.first; });
  std::vector<Entry> out = std::move(open);
  out.insert(out.end(), state_->closed.rbegin(), state_->closed.rend());
  return out;
}

ErrorWatch::Counts ErrorWatch::counts() const {
  std::lock_guard lock(state_->mu);
  return state_->counts;
}

}  // namespace molt::kernel::admin
