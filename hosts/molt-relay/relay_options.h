// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/relay_options.h
//
// molt-relay's flags (molt-relay --help): parsed and checked, each mistake told naming its flag.
// Included by relay.h and main.cc.
#ifndef MOLT_HOSTS_MOLT_RELAY_RELAY_OPTIONS_H_
#define MOLT_HOSTS_MOLT_RELAY_RELAY_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <variant>

#include "hosts/molt-relay/impairment.h"
#include "hosts/molt-relay/socket_address.h"

namespace molt::relay {

struct RelayOptions {
  HostPort listen{"127.0.0.1", 0};  // where clients send (port 0: an ephemeral port)
  HostPort to;                      // the server
  ImpairmentSettings impairment;    // the same model for both directions
  std::uint64_t seed = 1;           // the client-to-server model's; the other's derives from it
  std::uint64_t rebind_after = 0;   // a client's datagrams per upstream socket; 0: never rebind
  std::chrono::milliseconds duration{0};  // run this long; 0: until SIGINT or SIGTERM
};

// Parses molt-relay's command line. Returns the options, or the exit code when molt-relay is
// done: 0 after --help (printed to stdout), 2 after a bad flag (told on stderr, naming the flag).
std::variant<int, RelayOptions> ParseRelayOptions(int argc, char** argv);

}  // namespace molt::relay

#endif  // MOLT_HOSTS_MOLT_RELAY_RELAY_OPTIONS_H_
