// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/net_options.h
//
// NetOptions: the network's settings, every one a net.* configuration key with its default
// documented in docs/network.md (server/settings.cc reads them). Every part of the network reads
// the same struct, owned by the Network.
#ifndef MOLT_KERNEL_NET_NET_OPTIONS_H_
#define MOLT_KERNEL_NET_NET_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace molt::kernel::net {

enum class AuthMode : std::uint8_t { kDev, kProduction };

struct NetOptions {
  std::string bind_address = "127.0.0.1";
  std::uint16_t port = 7777;  // 0: any free port (port() tells which)
  double tick_rate = 60;      // Hz: the transport budgets are per tick
  std::uint32_t max_frame_bytes = 8192;
  std::uint32_t bytes_per_tick = 8192;       // spec: Packet's 8 KB per player per heartbeat
  std::uint32_t messages_per_tick = 64;      // ours (the spec leaves it open)
  double budget_burst_ticks = 4;             // how many ticks of budget may arrive at once
  std::size_t max_outbound_bytes = 1 << 20;  // per session; more is a slow reader
  double handshake_timeout_seconds = 5;
  std::size_t max_half_open = 1024;            // in total; then the oldest is refused
  std::size_t max_half_open_per_address = 16;  // then that address's oldest is refused
  double handshakes_per_address = 20;          // per second, burst twice that (players share NATs)
  std::size_t max_sessions = 10000;
  double ping_interval_seconds = 1;
  double idle_timeout_seconds = 15;
  double resume_window_seconds = 30;  // a lost link's session waits this long; 0: no resume
  AuthMode auth = AuthMode::kDev;
  std::uint32_t offender_drop_first = 5;
  double offender_window_seconds = 10;
  std::uint32_t offender_kick_after = 300;  // spec: 300 refused messages within 10 s
  double error_frame_gap_seconds = 0.25;
  double refusal_log_seconds = 10;  // one log line per refusal reason per interval, with a count
  // Descriptors kept for the server's own files (the database, plugins a swap opens, logs):
  // connections past RLIMIT_NOFILE less these (and less what was open at Listen) are refused.
  // 0: no reserve; connections take descriptors until accept itself fails.
  std::size_t descriptor_reserve = 32;
  // TLS for every client connection when both are set (PEM files; docs/network.md, "TLS").
  std::string tls_cert_file;
  std::string tls_key_file;
  // "ADDRESS:PORT" of a WebSocket endpoint carrying the same frames (browsers; wss:// with the
  // TLS files above); empty: none. Its Origin allow-list (empty: any origin).
  std::string websocket;
  std::vector<std::string> websocket_origins;
  // "ADDRESS:PORT" of the UDP port for the sessions' datagram links (IPv4); empty: none, and
  // unreliable channels and predicted intents travel over the reliable links.
  std::string udp;
  // The UDP port the Welcome names, when clients reach the datagram port by another (a NAT or a
  // container's port mapping, a relay); 0: the port bound.
  std::uint32_t udp_public_port = 0;
  // Sessions with a datagram link at once (1..4095, ENet's limit per port); the sessions past it
  // are offered none. Each ENet service walks this many peer slots, used or not: size it to the
  // action players a server holds (docs/network.md, "The datagram link").
  std::uint32_t udp_max_links = 256;
  // The NetGovernor's limits (net_governor.h; docs/network.md, "Link tiers"): a link is Good
  // within every good limit, Poor past any poor limit, Strained between; a better tier is taken
  // after governor_up_after gradings (one a second) in a row found it.
  double governor_good_rtt_ms = 100;
  double governor_poor_rtt_ms = 250;
  double governor_good_jitter_ms = 20;
  double governor_poor_jitter_ms = 60;
  double governor_good_loss = 0.02;
  double governor_poor_loss = 0.08;
  std::uint32_t governor_up_after = 3;
  // A client whose device quality (Hello.device_quality, 2.7) is said and below this is graded
  // Strained at best (spec: DeviceStrainQuality); 0: device hints are ignored.
  double governor_device_strained = 0.5;
  // The load gauge (load_gauge.h; docs/network.md, "A full server says so"): overloaded after
  // this long with the kernel thread in steps at least half the time and at least half of them
  // leaving work waiting, and no longer after as long without; while it is, new sessions are
  // refused (Overloaded) and told to retry after about overload_retry_after_seconds (±25%, so they
  // do not all come back at once). 0: never.
  double overload_seconds = 2;
  double overload_retry_after_seconds = 5;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_NET_OPTIONS_H_
