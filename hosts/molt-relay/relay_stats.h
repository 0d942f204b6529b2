// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/relay_stats.h
//
// RelayStats: what molt-relay counted, each direction apart, and the one JSON line it prints on
// exit. Included by relay.h and main.cc.
//
// For each direction, once the relay stopped:
//   in - dropped + duplicated == out + send_errors + pending
// (a copy is sent, refused by the kernel, or still held when the relay stopped).
#ifndef MOLT_HOSTS_MOLT_RELAY_RELAY_STATS_H_
#define MOLT_HOSTS_MOLT_RELAY_RELAY_STATS_H_

#include <cstdint>
#include <string>

namespace molt::relay {

// One direction's counts.
struct DirectionStats {
  std::uint64_t in = 0;           // datagrams received
  std::uint64_t out = 0;          // copies sent (a duplicated datagram counts twice)
  std::uint64_t dropped = 0;      // datagrams the model lost
  std::uint64_t duplicated = 0;   // second copies the model made
  std::uint64_t reordered = 0;    // copies held back an extra delay + jitter
  std::uint64_t send_errors = 0;  // copies the kernel refused (a full buffer, no route)
  std::uint64_t pending = 0;      // copies held, not yet due
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
};

struct RelayStats {
  DirectionStats to_server;   // from the clients to the server
  DirectionStats to_client;   // from the server back to the clients
  std::uint64_t clients = 0;  // distinct client addresses seen
  std::uint64_t rebinds = 0;  // upstream sockets replaced (--rebind-after)

  // One line of JSON, no newline:
  // {"to_server":{"in":3,"out":3,...},"to_client":{...},"clients":1,"rebinds":0}
  std::string ToJson() const;
};

}  // namespace molt::relay

#endif  // MOLT_HOSTS_MOLT_RELAY_RELAY_STATS_H_
