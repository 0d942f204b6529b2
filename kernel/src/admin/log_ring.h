// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/log_ring.h
//
// LogRing: the newest log lines of the process, kept in memory for the admin API and the debug
// bundle (spec: the logs ring, §43). A Logger sink: every entry at or above the logger's level is
// numbered (1, 2, ...) and kept until `capacity` newer ones push it out. A reader asks for the
// lines after the last number it saw (`since`), so a dashboard tails the log without repeats:
//
//   LogRing ring(500);
//   LogRing::Page page = ring.Since(last_seen);   // page.items, page.next (the next cursor)
//
// Thread safety: every member is safe from any thread (a mutex; the sink runs on the emitting
// thread and copies one line).
#ifndef MOLT_KERNEL_ADMIN_LOG_RING_H_
#define MOLT_KERNEL_ADMIN_LOG_RING_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"
#include "kernel/src/core/seq_ring.h"

namespace molt::kernel::admin {

class LogRing {
 public:
  static constexpr std::size_t kDefaultCapacity = 500;

  struct Line {
    std::uint64_t seq = 0;  // 1 for the first line the ring saw
    std::chrono::system_clock::time_point time;
    LogLevel level = LogLevel::kInfo;
    std::string scope;
    std::string message;
  };
  using Page = SeqRing<Line>::Page;  // page.items: the lines, oldest first

  // Registers itself as a sink of the process-wide Logger until destroyed.
  explicit LogRing(std::size_t capacity = kDefaultCapacity);
  LogRing(const LogRing&) = delete;
  LogRing& operator=(const LogRing&) = delete;

  // The lines numbered above `since` that the ring still holds (0: all of them).
  Page Since(std::uint64_t since) const;

 private:
  void Add(const LogEntry& entry);

  mutable std::mutex mu_;
  SeqRing<Line> lines_;
  Logger::Registration sink_;  // last: removed before the lines go
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_LOG_RING_H_
