// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/refusal_log.h
//
// RefusalLog: the handshakes that failed, logged without a flood — one line per refusal reason
// per interval (net.refusal_log_seconds), the rest counted into the next line with the latest
// address and text (docs/network.md). The front door notes its refusals here, the link table the
// handshakes it ended, and its housekeeping flushes the counts.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_REFUSAL_LOG_H_
#define MOLT_KERNEL_NET_REFUSAL_LOG_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "kernel/src/core/clock.h"

namespace molt::kernel::net {

class RefusalLog {
 public:
  explicit RefusalLog(double interval_seconds) : interval_seconds_(interval_seconds) {}

  // A handshake failed for `reason` (a RefuseReason or ExitReason name): logged now when its
  // reason was quiet for the interval, else counted into the next line. True when a count waits
  // for Flush.
  bool Note(std::string_view reason, const std::string& address, std::string_view text,
            TimePoint now);
  // Writes the counted lines whose interval ended (every one when `all`).
  void Flush(bool all, TimePoint now);
  bool waiting() const;

 private:
  struct Window {
    TimePoint quiet_until{};
    std::uint64_t count = 0;  // refusals since the last line
    std::string address, text;
  };
  double interval_seconds_;
  std::map<std::string, Window, std::less<>> windows_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_REFUSAL_LOG_H_
