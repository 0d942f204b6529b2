// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/link.h
//
// Link: the network's state of one connection, kept in its Peer (peer.h) from the accept to the
// close. Each part of the network keeps its own fields here: the link table (link_table.h) the
// session, the clocks and the pings; the inbound pipeline (inbound_pipeline.h) the frame being
// read, the transport budgets and the offences; the handshake slots (handshake_slots.h) the
// connection's place among the half-open ones. Plain data: the parts own the rules.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_LINK_H_
#define MOLT_KERNEL_NET_LINK_H_

#include <cstdint>
#include <list>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/token_bucket.h"

namespace molt::kernel::net {

class Peer;

struct Link {
  // --- The link table's ---
  std::uint64_t session = 0;  // 0 until the Hello is welcomed
  bool closed = false;        // the network is done with it
  bool refused = false;       // a Refuse frame was sent: the close is accounted for
  TimePoint attached_at{};
  TimePoint last_receive{};
  std::uint32_t ping_seq = 0;

  // --- The inbound pipeline's ---
  std::vector<std::uint8_t> partial;  // an incomplete frame carried to the next read
  std::uint32_t frame_size = 0;       // of the frame in `partial`, once its header is read
  bool have_header = false;
  TokenBucket bytes{0, 1, TimePoint()};  // the transport budgets, refilled per tick
  TokenBucket messages{0, 1, TimePoint()};
  TimePoint offender_window_start{};
  std::uint32_t offences = 0;
  TimePoint last_error_frame{};

  // --- The handshake slots' ---
  bool in_handshake = false;  // holds a half-open slot, at `waiting`
  std::list<Peer*>::iterator waiting{};
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_LINK_H_
