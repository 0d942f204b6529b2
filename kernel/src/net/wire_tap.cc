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

std::uint64_t WireTap::Note(bool inbound, std::string_view kind, std::uint16_t channel,
                            std::string_view channel_name, std::uint64_t session,
                            std::span<const std::uint8_t> payload, std::string verdict) {
  WireFrame f;
  f.inbound = inbound;
  f.kind = kind;
  f.channel = channel;
  f.channel_name = channel_name;
  f.session = session;
  f.bytes = static_cast<std::uint32_t>(payload.size());
  f.verdict = std::move(verdict);
  return Record(std::move(f), payload);
}

}  // namespace molt::kernel::net
