// SPDX-License-Identifier: Apache-2.0
// LogRing: the newest log lines, numbered, for the admin API.
#include "kernel/src/admin/log_ring.h"

namespace molt::kernel::admin {

LogRing::LogRing(std::size_t capacity)
    : lines_(capacity), sink_(Logger::Get().AddSink([this](const LogEntry& e) { Add(e); })) {}

void LogRing::Add(const LogEntry& entry) {
  std::lock_guard lock(mu_);
  lines_.Push(
      Line{0, entry.time, entry.level, std::string(entry.scope), std::string(entry.message)});
}

LogRing::Page LogRing::Since(std::uint64_t since) const {
  std::lock_guard lock(mu_);
  return lines_.Since(since);
}

}  // namespace molt::kernel::admin
