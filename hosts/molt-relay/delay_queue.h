// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/delay_queue.h
//
// DelayQueue: the datagrams molt-relay holds until they are due, in a min-heap on (due time,
// sequence). The sequence is the order they were queued in, so copies due at the same time leave
// in arrival order: with no delay and no jitter the relay keeps the order it was given. It knows
// no socket and reads no clock: the relay passes the times. Included by relay.h.
//
// Thread safety: none; the relay's thread owns it.
#ifndef MOLT_HOSTS_MOLT_RELAY_DELAY_QUEUE_H_
#define MOLT_HOSTS_MOLT_RELAY_DELAY_QUEUE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "hosts/molt-relay/socket_address.h"

namespace molt::relay {

enum class Direction {
  kToServer,  // from a client, out of its upstream socket to the server
  kToClient,  // from the server, out of the listen socket to the client
};

// One copy of a datagram on its way.
struct Datagram {
  Direction direction = Direction::kToServer;
  SocketAddress client;  // whose datagram it is: the relay's table of clients is keyed by it
  std::vector<std::uint8_t> bytes;
};

class DelayQueue {
 public:
  using Clock = std::chrono::steady_clock;

  // Holds `datagram` until `due`.
  void Push(Clock::time_point due, Datagram datagram);
  // The datagram due first, removed, when it is due at `now` or earlier; else nothing. Of two
  // due at the same time, the one pushed first.
  std::optional<Datagram> PopDue(Clock::time_point now);
  // When the first datagram is due; nothing when none is held.
  std::optional<Clock::time_point> NextDue() const;

  // Datagrams held, in all and going one way.
  std::size_t size() const { return heap_.size(); }
  std::size_t size(Direction direction) const { return held_[static_cast<int>(direction)]; }

 private:
  struct Entry {
    Clock::time_point due;
    std::uint64_t sequence;
    Datagram datagram;
  };
  // The heap's order: the entry due last (of two due together, queued last) is the greatest.
  static bool Later(const Entry& a, const Entry& b);

  std::vector<Entry> heap_;  // std::push_heap / pop_heap with Later: the front is due first
  std::uint64_t next_sequence_ = 0;
  std::size_t held_[2] = {0, 0};
};

}  // namespace molt::relay

#endif  // MOLT_HOSTS_MOLT_RELAY_DELAY_QUEUE_H_
