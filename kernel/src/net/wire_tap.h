// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/wire_tap.h
//
// WireTap: the wire inspector's recorder (spec: the debug panel's NET window). While an operator
// watches (the dashboard's inspector, GET /api/v1/wire), the network records every message it
// handles into a bounded ring: direction, kind, channel, session, payload size and its first
// bytes, the verdict, and the time the pipeline took. Nobody watching, it costs the pipeline one
// predictable branch per message: capture is leased, each read extends it, and it turns itself
// off (with the hook chain timing that comes with it) once the lease passes unrenewed.
//
//   net.tap().Lease(now, Seconds(10));          // the inspector asked: capture for 10 s more
//   WireTap::Page p = net.tap().Since(cursor);  // p.items, oldest first; p.next, p.lost
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_WIRE_TAP_H_
#define MOLT_KERNEL_NET_WIRE_TAP_H_

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/seq_ring.h"

namespace molt::kernel::net {

// One message as the inspector shows it.
struct WireFrame {
  std::uint64_t seq = 0;  // set by the ring
  std::chrono::system_clock::time_point time{};
  bool inbound = true;    // client -> server
  std::string_view kind;  // "intent", "request", "event", "response", "envelope"
  std::uint16_t channel = 0;
  std::string channel_name;        // "" when the id names no channel
  std::uint64_t session = 0;       // inbound: the sender; responses: the recipient; events: 0
  std::uint32_t recipients = 0;    // events: the sessions it was queued for
  std::uint32_t bytes = 0;         // the payload's size (the whole frame for bad envelopes)
  std::vector<std::uint8_t> head;  // its first kHeadBytes bytes
  // "accepted", "handler_error", a rejection reason ("rate_limited", "unguarded", ...) for
  // inbound messages; "sent" for events; the status name ("OK", "REJECTED", ...) for responses.
  std::string verdict;
  std::string detail;  // a rejection's text
  Duration took{};     // inbound: the pipeline, handler included
};

class WireTap {
 public:
  static constexpr std::size_t kCapacity = 256;
  static constexpr std::size_t kHeadBytes = 64;
  using Page = SeqRing<WireFrame>::Page;

  WireTap() : frames_(kCapacity) {}

  bool on() const { return on_; }
  TimePoint until() const { return until_; }  // the lease's end
  // Capture on (or kept on) until `now + lease`. Returns true when it was off.
  bool Lease(TimePoint now, Duration lease);
  // Capture off once its lease passed. Returns true when it turned off now.
  bool Expire(TimePoint now);

  // Keeps `frame`, stamped now, with the first kHeadBytes of `payload`. Returns its number.
  std::uint64_t Record(WireFrame frame, std::span<const std::uint8_t> payload);
  // Record() of a message the network handles: its direction, kind, channel (`channel_name` ""
  // when the id names none), session, payload and verdict. The caller checked on().
  std::uint64_t Note(bool inbound, std::string_view kind, std::uint16_t channel,
                     std::string_view channel_name, std::uint64_t session,
                     std::span<const std::uint8_t> payload, std::string verdict);
  // The frame numbered `seq` (its verdict comes after what the message caused), or nullptr once
  // pushed out. Valid until the next Record.
  WireFrame* Find(std::uint64_t seq) { return frames_.Find(seq); }
  Page Since(std::uint64_t since) const { return frames_.Since(since); }
  std::uint64_t last() const { return frames_.last(); }  // the newest frame's number

 private:
  bool on_ = false;
  TimePoint until_{};
  SeqRing<WireFrame> frames_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_WIRE_TAP_H_
