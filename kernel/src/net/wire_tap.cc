// SPDX-License-Identifier: Apache-2.0
// WireTap: the wire inspector's bounded, leased recorder.
#include "kernel/src/net/wire_tap.h"

#include <algorithm>
#include <utility>

namespace molt::kernel::net {

bool WireTap::Lease(TimePoint now, Duration lease) {
  until_ = std::max(until_, now + lease);
  return !std::exchange(on_, true);
}

bool WireTap::Expire(TimePoint now) {
  if (!on_ || now < until_) {
    return false;
  }
  on_ = false;
  return true;
}

std::uint64_t WireTap::Record(WireFrame frame, std::span<const std::uint8_t> payload) {
  frame.time = std::chrono::system_clock::now();
  frame.head.assign(payload.begin(),
                    payload.begin() + static_cast<std::ptrdiff_t>(
                                          std::min<std::size_t>(payload.size(), kHeadBytes)));
  return frames_.Push(std::move(frame));
}

}  // namespace molt::kernel::net
