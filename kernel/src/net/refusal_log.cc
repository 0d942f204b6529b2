// SPDX-License-Identifier: Apache-2.0
// RefusalLog (refusal_log.h): one line per refusal reason per interval, the rest counted.
#include "kernel/src/net/refusal_log.h"

#include <algorithm>

#include "kernel/src/net/net_log.h"

namespace molt::kernel::net {

bool RefusalLog::Note(std::string_view reason, const std::string& address, std::string_view text,
                      TimePoint now) {
  auto it = windows_.find(reason);
  if (it == windows_.end()) {
    it = windows_.emplace(std::string(reason), Window()).first;
  }
  Window& window = it->second;
  if (window.count == 0 && now >= window.quiet_until) {
    kNetLog.Warn("refused a connection from {} ({}): {}", address, reason, text);
    window.quiet_until = now + Seconds(interval_seconds_);
    return false;
  }
  ++window.count;
  window.address = address;
  window.text = text;
  return true;
}

void RefusalLog::Flush(bool all, TimePoint now) {
  for (auto& [reason, window] : windows_) {
    if (window.count > 0 && (all || now >= window.quiet_until)) {
      kNetLog.Warn(
          "refused {} more connection(s) ({}) within {} s (net.refusal_log_seconds); the "
          "latest from {}: {}",
          window.count, reason, interval_seconds_, window.address, window.text);
      window.count = 0;
      window.quiet_until = now + Seconds(interval_seconds_);
    }
  }
}

bool RefusalLog::waiting() const {
  return std::any_of(windows_.begin(), windows_.end(),
                     [](const auto& w) { return w.second.count > 0; });
}

}  // namespace molt::kernel::net
