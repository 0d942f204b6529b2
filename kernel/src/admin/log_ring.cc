// SPDX-License-Identifier: Apache-2.0
// LogRing: the newest log lines, numbered, for the admin API.
#include "kernel/src/admin/log_ring.h"

namespace molt::kernel::admin {

LogRing::LogRing(std::size_t capacity)
    : capacity_(capacity == 0 ? 1 : capacity),
      sink_(Logger::Get().AddSink([this](const LogEntry& e) { Add(e); })) {}

void LogRing::Add(const LogEntry& entry) {
  std::lock_guard lock(mu_);
  if (lines_.size() == capacity_) {
    lines_.pop_front();
  }
  lines_.push_back(Line{next_seq_++, entry.time, entry.level, std::string(entry.scope),
                        std::string(entry.message)});
}

LogRing::Page LogRing::Since(std::uint64_t since) const {
  std::lock_guard lock(mu_);
  Page page;
  page.next = next_seq_ - 1;
  if (lines_.empty() || since >= page.next) {
    page.next = std::max(page.next, since);
    return page;
  }
  const std::uint64_t first = lines_.front().seq;
  if (since + 1 < first) {
    page.lost = first - since - 1;
  }
  const std::size_t skip = since < first ? 0 : static_cast<std::size_t>(since - first + 1);
  page.lines.assign(lines_.begin() + static_cast<std::ptrdiff_t>(skip), lines_.end());
  return page;
}

}  // namespace molt::kernel::admin
