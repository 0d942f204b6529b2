// SPDX-License-Identifier: Apache-2.0
// Heartbeat: a client's pings, the round trip they measure, the silence that ends a link
// (heartbeat.h).
#include "kernel/src/client/heartbeat.h"

namespace molt::kernel::client {

void Heartbeat::Start(Duration period, TimePoint now) {
  period_ = period;
  next_ping_ = now + period_;
}

std::optional<Heartbeat::Ping> Heartbeat::Due(TimePoint now) {
  if (now < next_ping_) {
    return std::nullopt;
  }
  next_ping_ = now + period_;
  return Ping{++seq_, static_cast<std::uint64_t>(now.time_since_epoch().count())};
}

void Heartbeat::OnPong(std::uint32_t seq, std::uint64_t time_ns, TimePoint now) {
  const auto at = now.time_since_epoch().count();
  const auto sent = static_cast<std::int64_t>(time_ns);
  if (seq == seq_ && sent > 0 && sent <= at) {
    const double sample = static_cast<double>(at - sent) * 1e-9;
    rtt_ = rtt_ == 0 ? sample : (rtt_ * 7 + sample) / 8;
  }
}

}  // namespace molt::kernel::client
