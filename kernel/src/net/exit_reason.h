// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/exit_reason.h
//
// Why a connection or a session ended (spec: ExitReason): what a transport reports when its link
// fails (peer_sink.h), what Kernel.SessionEnd and Session.End carry, what the counters are keyed
// by. Included by the transports and everything above them.
#ifndef MOLT_KERNEL_NET_EXIT_REASON_H_
#define MOLT_KERNEL_NET_EXIT_REASON_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace molt::kernel::net {

enum class ExitReason : std::uint8_t {
  kClientClosed,    // the client said bye or closed the socket
  kKicked,          // a plugin or the operator kicked it
  kTimedOut,        // nothing received for net.idle_timeout_seconds
  kProtocolError,   // a malformed or out-of-order frame, an oversized frame
  kFlood,           // the transport byte or message budget was blown
  kSlowReader,      // the outbound queue passed net.max_outbound_bytes
  kOffender,        // too many rejected messages in the offender window
  kServerShutdown,  // the server is closing
  kTransportError,  // the socket failed
};
inline constexpr std::size_t kExitReasonCount = 9;

// "ClientClosed", "Kicked", ...
constexpr std::string_view ExitReasonName(ExitReason reason) {
  switch (reason) {
    case ExitReason::kClientClosed:
      return "ClientClosed";
    case ExitReason::kKicked:
      return "Kicked";
    case ExitReason::kTimedOut:
      return "TimedOut";
    case ExitReason::kProtocolError:
      return "ProtocolError";
    case ExitReason::kFlood:
      return "Flood";
    case ExitReason::kSlowReader:
      return "SlowReader";
    case ExitReason::kOffender:
      return "Offender";
    case ExitReason::kServerShutdown:
      return "ServerShutdown";
    case ExitReason::kTransportError:
      return "TransportError";
  }
  return "Unknown";
}

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_EXIT_REASON_H_
