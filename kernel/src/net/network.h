// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/network.h
//
// Network: the server side of the wire (spec: NetDriver, Packet), composed of parts that each do
// one job. It owns the channel registry, the sessions and the replicas, listens (TCP, WebSocket,
// TLS: transport.h), and is the PeerSink (peer_sink.h) every transport reports to:
//
//   transport --bytes--> PeerSink (Network) --> InboundPipeline   frames, budgets, verification,
//                                              |                  rules, offences, the handler
//                                              +-> FrontDoor       admission, the Hello, resume,
//                                              |                  refusals
//                                              +-> PendingRequests open, answer, time out
//   LinkTable: the links, their end or loss, every outbound frame, housekeeping
//   Redirection: where a draining server's sessions go; WireTap: the wire inspector
//
//   Network net(kernel, options);
//   net.channels().Declare(spec, owner);         // plugins, during init
//   net.Listen();                                // TCP on the kernel's io_context
//   net.Send(chat_event, session, payload);      // server -> client
//
// The pipeline's steps are listed in inbound_pipeline.h, the handshake's in front_door.h. A link
// that fails under its session (no Bye) leaves the session waiting net.resume_window_seconds for
// a Hello with its resume token (docs/network.md, "Lost links and resume"). Benchmarks, the
// fuzzer and the test kit drive the network as a transport would: Attach(), Receive() with a
// Peer of their own.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_NETWORK_H_
#define MOLT_KERNEL_NET_NETWORK_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/datagram_links.h"
#include "kernel/src/net/datagram_transport.h"
#include "kernel/src/net/front_door.h"
#include "kernel/src/net/grids.h"
#include "kernel/src/net/handshake_slots.h"
#include "kernel/src/net/inbound_pipeline.h"
#include "kernel/src/net/link_table.h"
#include "kernel/src/net/net_governor.h"
#include "kernel/src/net/net_options.h"
#include "kernel/src/net/net_stats.h"
#include "kernel/src/net/peer.h"
#include "kernel/src/net/peer_sink.h"
#include "kernel/src/net/redirection.h"
#include "kernel/src/net/refusal_log.h"
#include "kernel/src/net/replica.h"
#include "kernel/src/net/requests.h"
#include "kernel/src/net/session.h"
#include "kernel/src/net/wire_tap.h"
#include "kernel/src/net/zones.h"

namespace molt::kernel {
class Kernel;
}

namespace molt::kernel::net {

class TcpTransport;

// One channel as an operator sees it: its declaration and its counters.
struct ChannelSnapshot {
  ChannelId id = 0;
  std::string name;
  ChannelKind kind = ChannelKind::kIntent;
  double rate = 0;
  double burst = 0;
  bool guarded = false;  // it has a validator: rules, or a handler on its hook point
  ChannelCounters counters;
};

// Everything the network counts, read at once on the kernel thread; admin/ renders it (the
// stats JSON's "net" section, the API's channels, /metrics).
struct NetSnapshot {
  std::uint16_t port = 0;
  std::size_t half_open = 0;
  std::size_t waiting_resume = 0;      // sessions whose link is lost, waiting for their client
  std::uint16_t websocket_port = 0;    // 0: no WebSocket endpoint
  std::size_t tcp_sessions = 0;        // sessions linked now over TCP
  std::size_t websocket_sessions = 0;  // and over WebSocket
  std::uint16_t udp_port = 0;          // 0: no datagram links (net.udp)
  std::size_t datagram_sessions = 0;   // sessions whose datagram link is bound now
  std::size_t datagram_peers = 0;      // ENet peers connected now, bound or not
  DatagramLinks::Counts datagrams;     // what the datagram links opened, refused, sent
  DatagramTransport::Counts udp;       // what reached the UDP socket, and what ENet ignored
  NetStats counters;
  Sessions::Stats sessions;
  ReplicaStats replicas;
  std::size_t zones = 0;                  // interest groups declared
  GridStats grids;                        // the spatial grids and their passes
  GovernorStats governor;                 // link tiers, their changes, the events shed
  LoadFigures load;                       // the kernel thread's load (new sessions refused)
  std::vector<ChannelSnapshot> channels;  // in the registry's order
};

class Network final : public PeerSink {
 public:
  using RedirectTarget = net::RedirectTarget;

  Network(Kernel& kernel, NetOptions options);
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;
  ~Network() override;

  ChannelRegistry& channels() { return channels_; }
  Sessions& sessions() { return sessions_; }
  // The sessions' datagram links (net.udp), and the UDP port they are served on (0: none).
  const DatagramLinks& datagrams() const { return datagrams_; }
  std::uint16_t udp_port() const { return datagrams_.port(); }
  Replicas& replicas() { return replicas_; }
  Zones& zones() { return zones_; }
  // Each session's link tier (net_governor.h).
  const NetGovernor& governor() const { return governor_; }
  Grids& grids() { return grids_; }
  const NetOptions& options() const { return options_; }
  Kernel& kernel() { return kernel_; }

  // Starts accepting TCP connections on the kernel's io_context (over TLS when net.tls_cert and
  // net.tls_key are set). Fails (naming the address, the file and the fix) when the port is
  // taken, a TLS file is unreadable or wrong, or in production auth mode without an Auth.Hello
  // handler.
  Status Listen();
  // The bound port once listening, else 0; the WebSocket endpoint's (net.websocket), else 0.
  std::uint16_t port() const;
  std::uint16_t websocket_port() const;
  // Whether a plugin generation serves (true by default). While none does, every Hello, resumes
  // included, gets Refuse Starting with a retry-after: a client never joins a server with no
  // game behind it (loader/plugin_host.h says when, through the host layer).
  void SetServing(bool serving) { front_door_.SetServing(serving); }
  bool serving() const { return front_door_.serving(); }
  // Sends the whole channel table (a Channels frame) to every connected session: a swap added or
  // retired channels. Sessions whose link is lost get it in the Welcome that resumes them.
  // Returns how many were told.
  std::size_t AnnounceChannels();
  // The close begins: no new connection or handshake is accepted (a Hello gets Refuse
  // ShuttingDown); the sessions there are keep being served until Shutdown().
  void StopAccepting();
  // Stops accepting and ends every session with ServerShutdown (a Bye frame, then the close);
  // the Bye says "the server is shutting down", with `why` in parentheses when given (the
  // close's reason: "SIGTERM"). Runs as the kernel's first shutdown step, while services still
  // work. Idempotent.
  void Shutdown(std::string_view why = {});
  // The server drains (docs/fleet.md, "Draining a server"): from here a Hello that resumes no
  // session of this server is refused (ShuttingDown), while a client whose link was lost may
  // still resume its session until the close (StopAccepting). Idempotent.
  void Drain();
  // Drain(), and every connected session is told where to go next, spread over `targets` (at
  // least one; redirection.h says how). Returns the targets, each one's `sessions` grown by
  // those sent to it.
  const std::vector<RedirectTarget>& Redirect(std::vector<RedirectTarget> targets,
                                              std::string reason);

  // --- PeerSink: the transports' side (peer_sink.h) ---
  bool Attach(Peer& peer) override;
  void Receive(Peer& peer, std::span<const std::uint8_t> bytes) override {
    pipeline_.Receive(peer, bytes);
  }
  void Detach(Peer& peer, ExitReason reason) override;
  void Fail(Peer& peer, std::string_view text, bool flush) override;
  std::vector<std::uint8_t> RefuseOverCapacity(const std::string& address,
                                               std::string_view why) override;

  // --- Outbound ---
  // Queues an event on `channel` (an event channel) to one session, a list, or everyone.
  Status Send(ChannelId channel, SessionId session, std::span<const std::uint8_t> payload);
  Status SendList(ChannelId channel, std::span<const SessionId> sessions,
                  std::span<const std::uint8_t> payload);
  Status Broadcast(ChannelId channel, std::span<const std::uint8_t> payload);
  // Answers a request. STALE when it was already answered, timed out, or its session left.
  Status Reply(RequestToken token, Status::Code status, std::span<const std::uint8_t> payload) {
    return requests_.Reply(token, status, payload);
  }
  // Answers every request still pending on `channel` at once, with `status` and a retry-after:
  // the handlers that took them are going away (a swap's hard stop). Returns how many.
  std::size_t RefusePending(ChannelId channel, Status::Code status, double retry_after) {
    return requests_.RefusePending(channel, status, retry_after);
  }
  // Ends a session with Kicked; `text` goes to the client in the Bye frame.
  Status Kick(SessionId session, std::string_view text) { return links_.Kick(session, text); }

  // --- The wire inspector (wire_tap.h) ---
  // An operator watches: capture messages, and time hook chains, for `lease` more. Both stop on
  // their own once a lease passes unrenewed (a kernel task at the lease's end).
  void Inspect(Duration lease);
  const WireTap& tap() const { return tap_; }

  NetStats stats() const { return stats_; }
  std::size_t peers() const { return links_.peers().size(); }
  std::size_t half_open() const { return slots_.size(); }
  NetSnapshot Snapshot() const;

 private:
  // Ends the inspection when its lease passes unrenewed (a one-shot task, moved by each lease).
  void ArmInspectionEnd(TimePoint now);
  void StopTransports();

  Kernel& kernel_;
  NetOptions options_;
  NetStats stats_;
  ChannelRegistry channels_;
  Sessions sessions_;
  NetGovernor governor_;  // after sessions_: it grades them
  HandshakeSlots slots_;
  RefusalLog refusals_;
  LinkTable links_;
  Replicas replicas_;  // after sessions_: it subscribes to them
  Zones zones_;        // after replicas_: its members are sources of their interest
  Grids grids_;        // likewise
  WireTap tap_;
  Redirection redirection_;
  PendingRequests requests_;
  DatagramLinks datagrams_;
  FrontDoor front_door_;
  InboundPipeline pipeline_;
  std::unique_ptr<TcpTransport> transport_;
  std::unique_ptr<TcpTransport> websocket_;  // net.websocket
  std::unique_ptr<DatagramTransport> udp_;   // net.udp: the sessions' datagram links
  TaskHandle inspection_end_;                // the one-shot task that ends an unrenewed inspection
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_NETWORK_H_
