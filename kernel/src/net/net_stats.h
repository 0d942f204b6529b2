// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/net_stats.h
//
// NetStats: the network's counters. One struct, owned by the Network and counted into by its
// parts (the front door, the inbound pipeline, the link table); read at once into the snapshot
// (network.h) that admin/ renders as JSON and Prometheus text.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_NET_STATS_H_
#define MOLT_KERNEL_NET_NET_STATS_H_

#include <array>
#include <cstdint>

#include "kernel/src/net/channel.h"
#include "kernel/src/net/exit_reason.h"

namespace molt::kernel::net {

struct NetStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t half_open_evicted = 0;  // refused to make room for a newer connection
  std::uint64_t refused_handshake_rate = 0;
  std::uint64_t handshake_timeouts = 0;
  std::uint64_t handshakes_refused = 0;      // Refuse frames (every reason, evictions included)
  std::uint64_t refused_no_descriptors = 0;  // accepted only to be refused: no descriptor left
  std::uint64_t refused_overloaded = 0;      // new sessions refused while overloaded
  // Half-open connections that ended without a Welcome or a Refuse, by ExitReason (client
  // closed, timed out, protocol error, transport error, server shutdown).
  std::array<std::uint64_t, kExitReasonCount> handshakes_dropped{};
  std::uint64_t transport_floods = 0;
  std::uint64_t transport_flood_bytes = 0;
  std::uint64_t slow_readers = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t frames_in = 0;
  std::uint64_t error_frames = 0;
  std::uint64_t links_lost = 0;          // sessions detached to wait for a resume
  std::uint64_t resumes = 0;             // sessions resumed by their client
  std::uint64_t resumes_expired = 0;     // detached sessions ended when the window passed
  std::uint64_t resumes_superseded = 0;  // ... ended when their user joined afresh
  // Rejections not attributable to a channel (flood, frame size, envelope, unknown channel).
  std::array<std::uint64_t, kRejectCount> transport_rejected{};
  // Totals over every channel (spec: Net.Stats).
  std::uint64_t intents_accepted = 0;
  std::uint64_t intents_rejected = 0;
  std::uint64_t intents_rate_limited = 0;
  std::uint64_t requests_accepted = 0;
  std::uint64_t requests_rejected = 0;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_NET_STATS_H_
