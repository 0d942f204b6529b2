// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/network.h
//
// Network: the server side of the wire (spec: NetDriver, Packet). It owns the channel registry,
// the sessions and the connections, runs the handshake, and passes every inbound frame through
// the pipeline below before any plugin code sees it. Nothing on the path trusts a client byte.
//
//   Network net(kernel, options);
//   net.channels().Declare(spec, owner);         // plugins, during init
//   net.Listen();                                // TCP on the kernel's io_context
//   net.Send(chat_event, session, payload);      // server -> client
//
// The inbound pipeline, per frame, in order; every rejection is counted per channel and reason:
//   1. transport budgets: bytes and messages per connection (token buckets refilled per tick),
//      charged from the frame header before anything is decoded; blowing one ends the session
//      (Flood) and fires Net.FloodDetected (hook, fail-open) and the topic
//   2. frame size cap (net.max_frame_bytes): larger ends the connection (ProtocolError)
//   3. envelope verification (FlatBuffers verifier, bounded depth and table count)
//   4. channel lookup: a live channel of the message's kind
//   5. live session: before the welcome only Hello is accepted; a request whose id is still in
//      flight on the session is refused (never handled twice)
//   6. the channel's token bucket for this session (Net.RateLimited hook and topic)
//   7. payload verification (the channel's verifier) and its declarative rules
//   8. no validator (rules or hook handlers) and not Open: reject (fail-closed, warned once)
//   9. the Intent.<Channel> / Request.<Channel> hook chain, fail-closed
//  10. the handler, on the kernel thread; then the Intent.<Channel> topic (intents)
// Rejected intents are dropped; past net.offender_drop_first rejections in the offender window
// the client gets Error frames (with retry-after for rate limits, at most one per
// net.error_frame_gap); at net.offender_kick_after the session ends (Offender). Rejected
// requests are always answered (MOLT_ERR_REJECTED with the channel's reject payload, or
// MOLT_ERR_RATE_LIMITED with retry-after).
//
// The handshake: a connection is half-open until its Hello is accepted. Before any plugin code
// runs, the server bounds half-open connections per address (net.max_half_open_per_address) and
// in total (net.max_half_open): a new connection always gets a slot, made by refusing the
// half-open connection of that address, or of anyone, that has waited longest (docs/network.md,
// "Handshake slots"). It also caps handshakes per address per second and the time to finish
// (net.handshake_timeout_seconds). Refusals carry a Refuse frame with a reason; handshakes that
// end otherwise are counted by reason; both are logged at most once per reason per
// net.refusal_log_seconds, with a count. Then Auth.Hello (fail-closed)
// decides: in "dev" mode a hello with no Auth.Hello handler is accepted with its user id; in
// "production" mode Listen() refuses to start without a handler.
//
// A link that fails under its session (no Bye) leaves the session waiting
// net.resume_window_seconds for a Hello with its resume token; what is sent to it meanwhile is
// kept and delivered after the resumed Welcome (docs/network.md, "Lost links and resume"). A
// Hello of the same user without the token ends the waiting session first.
//
// The transport is a Peer: the TCP one lives in transport.cc (Asio stays out of this header);
// benchmarks and the fuzzer drive Receive() with a Peer of their own.
//
// One class, its jobs in files of their own: front_door.cc (admission, handshake slots, the
// Hello, resume), inbound.cc (the numbered pipeline, from bytes to the handler), requests.cc
// (pending requests and their answers), network.cc (the composition: listening, links, outbound
// frames, housekeeping, the wire inspector, the snapshot admin/ renders).
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_NETWORK_H_
#define MOLT_KERNEL_NET_NETWORK_H_

#include <molt/kernel/status.h>

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/core/token_bucket.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/front_door.h"
#include "kernel/src/net/replica.h"
#include "kernel/src/net/requests.h"
#include "kernel/src/net/session.h"
#include "kernel/src/net/wire_tap.h"

namespace molt::kernel {
class Kernel;
}

namespace molt::kernel::net {

class TcpTransport;

enum class AuthMode : std::uint8_t { kDev, kProduction };

// Defaults are documented in docs/network.md and settable as net.* configuration keys.
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
};

// One connection, as the Network sees it. The transport implements the I/O.
class Peer {
 public:
  explicit Peer(std::string address) : address_(std::move(address)) {}
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;
  virtual ~Peer() = default;

  const std::string& address() const { return address_; }
  SessionId session() const { return session_; }
  bool closed() const { return closed_; }

  // Queues one encoded frame (length prefix included) without blocking.
  virtual void Write(std::span<const std::uint8_t> frame) = 0;
  // Bytes queued and not yet written (the slow-reader check).
  virtual std::size_t queued_bytes() const = 0;
  // The connection is a WebSocket (the counters say how many sessions use each transport).
  virtual bool websocket() const { return false; }
  // Closes the transport once the queued frames are written (or at once when `flush` is
  // false). Called once, by the Network; the transport must not call Network again after it.
  virtual void Close(bool flush) = 0;

 private:
  friend class Network;
  friend class HandshakeSlots;
  std::string address_;
  SessionId session_ = 0;
  bool closed_ = false;
  TimePoint attached_at_{};
  TimePoint last_receive_{};
  std::vector<std::uint8_t> partial_;  // an incomplete frame carried to the next Receive
  std::uint32_t frame_size_ = 0;       // of the frame in partial_, once its header is read
  bool have_header_ = false;
  TokenBucket bytes_{0, 1, TimePoint()};
  TokenBucket messages_{0, 1, TimePoint()};
  TimePoint offender_window_start_{};
  std::uint32_t offences_ = 0;
  TimePoint last_error_frame_{};
  std::uint32_t ping_seq_ = 0;
  bool refused_ = false;       // a Refuse frame was sent: the close is accounted for
  bool in_handshake_ = false;  // in the network's HandshakeSlots, at waiting_
  std::list<Peer*>::iterator waiting_{};
};

struct NetStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t half_open_evicted = 0;  // refused to make room for a newer connection
  std::uint64_t refused_handshake_rate = 0;
  std::uint64_t handshake_timeouts = 0;
  std::uint64_t handshakes_refused = 0;      // Refuse frames (every reason, evictions included)
  std::uint64_t refused_no_descriptors = 0;  // accepted only to be refused: no descriptor left
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
  NetStats counters;
  Sessions::Stats sessions;
  ReplicaStats replicas;
  std::vector<ChannelSnapshot> channels;  // in the registry's order
};

class Network {
 public:
  Network(Kernel& kernel, NetOptions options);
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;
  ~Network();

  ChannelRegistry& channels() { return channels_; }
  Sessions& sessions() { return sessions_; }
  Replicas& replicas() { return replicas_; }
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
  void SetServing(bool serving) { serving_ = serving; }
  bool serving() const { return serving_; }
  // Sends the whole channel table (a Channels frame) to every connected session: a swap added or
  // retired channels. Sessions whose link is lost get it in the Welcome that resumes them.
  // Returns how many were told.
  std::size_t AnnounceChannels();
  // The close begins: no new connection or handshake is accepted (a Hello gets Refuse
  // ShuttingDown); the sessions there are keep being served until Shutdown().
  void StopAccepting();
  // Stops accepting and ends every session with ServerShutdown (a Bye frame, then the close).
  // Runs as the kernel's first shutdown step, while services still work. Idempotent.
  void Shutdown();
  // The server drains (docs/fleet.md, "Draining a server"): from here a Hello that resumes no
  // session of this server is refused (ShuttingDown), while a client whose link was lost may
  // still resume its session until the close (StopAccepting). Idempotent.
  void Drain();
  // Drain(), and every connected session is told where to go next, spread over `targets` (at
  // least one): each session goes to the target with the fewest sessions so far (those it
  // serves plus those sent to it; ties: the first), among those with an address for its link's
  // transport (`address` for TCP, `websocket_address` for WebSocket; none: it is told nothing).
  // It gets a Redirect frame naming that server at that address, with `reason`; a session
  // resumed later is told after its Welcome; the Bye that ends each at Shutdown() says the
  // same in its text, and a refused Hello names the least loaded target. Returns the targets,
  // each one's `sessions` grown by those sent to it.
  struct RedirectTarget {
    std::string server;
    std::string address;
    std::string websocket_address;
    std::uint64_t sessions = 0;  // what it serves already
  };
  const std::vector<RedirectTarget>& Redirect(std::vector<RedirectTarget> targets,
                                              std::string reason);

  // --- The transport's side ---
  // A new connection. False: the network is shut down; close it without a word. (Refusals go
  // through the connection itself: a Refuse frame, then the close.)
  bool Attach(Peer& peer);
  // Bytes arrived on `peer`: frames are parsed and passed through the pipeline.
  void Receive(Peer& peer, std::span<const std::uint8_t> bytes);
  // The transport accepted a connection it cannot keep (no descriptor to spare): counted, logged
  // (rate-limited) with `why`, and the Refuse frame (ServerFull, a retry-after) to send it.
  std::vector<std::uint8_t> RefuseOverCapacity(const std::string& address, std::string_view why);
  // The transport failed under `peer` (a TLS error): the connection ends as TransportError with
  // `text`, logged, without a word to the client; `flush`: after what the transport queued
  // itself (a WebSocket's HTTP answer or close frame).
  void Fail(Peer& peer, std::string_view text, bool flush = false);
  // The transport closed on its own (EOF, error). `peer` is not used afterwards. The session
  // waits net.resume_window_seconds for its client to come back (resume) before it ends.
  void Detach(Peer& peer, ExitReason reason);

  // --- Outbound ---
  // Queues an event on `channel` (an event channel) to one session, a list, or everyone.
  Status Send(ChannelId channel, SessionId session, std::span<const std::uint8_t> payload);
  Status SendList(ChannelId channel, std::span<const SessionId> sessions,
                  std::span<const std::uint8_t> payload);
  Status Broadcast(ChannelId channel, std::span<const std::uint8_t> payload);
  // Answers a request. STALE when it was already answered, timed out, or its session left.
  Status Reply(RequestToken token, Status::Code status, std::span<const std::uint8_t> payload);
  // Answers every request still pending on `channel` at once, with `status` and a retry-after:
  // the handlers that took them are going away (a swap's hard stop). Returns how many.
  std::size_t RefusePending(ChannelId channel, Status::Code status, double retry_after);
  // Ends a session with Kicked; `text` goes to the client in the Bye frame.
  Status Kick(SessionId session, std::string_view text);

  // --- The wire inspector (wire_tap.h) ---
  // An operator watches: capture messages, and time hook chains, for `lease` more. Both stop on
  // their own once a lease passes unrenewed (a kernel task at the lease's end).
  void Inspect(Duration lease);
  const WireTap& tap() const { return tap_; }

  NetStats stats() const { return stats_; }
  std::size_t peers() const { return peers_.size(); }
  std::size_t half_open() const { return slots_.size(); }
  NetSnapshot Snapshot() const;

 private:
  friend class Replicas;  // sends its frames with SendTo

  // --- front_door.cc: admission and the Hello ---
  void OnHello(Peer& peer, const void* hello);
  // Makes room for one more half-open connection from `address`: refuses the oldest of that
  // address when it has its share, then the oldest of all when the total is reached.
  void MakeHandshakeRoom(const std::string& address);
  void Refuse(Peer& peer, std::uint8_t reason, std::string_view text, double retry_after);
  // A handshake failed (`reason`: a RefuseReason or ExitReason name): logged at most once per
  // reason per net.refusal_log_seconds, the others counted into the next line.
  void LogRefusal(std::string_view reason, const std::string& address, std::string_view text);
  // The session that `token` (a Hello's resume token) names, waiting for its client; or nullptr.
  Session* Resumable(std::span<const std::uint8_t> token, std::string_view user);

  // --- inbound.cc: the pipeline, steps 3-10 (Receive holds 1-2) ---
  void Frame(Peer& peer, std::span<const std::uint8_t> frame);
  // Steps 4-10; while the wire inspector watches, InboundTapped records them.
  void OnInbound(Peer& peer, bool request, ChannelId channel, std::uint32_t request_id,
                 std::span<const std::uint8_t> payload) {
    if (tap_.on()) {
      InboundTapped(peer, request, channel, request_id, payload);
    } else {
      Inbound(peer, request, channel, request_id, payload);
    }
  }
  void InboundTapped(Peer& peer, bool request, ChannelId channel, std::uint32_t request_id,
                     std::span<const std::uint8_t> payload);
  void Inbound(Peer& peer, bool request, ChannelId channel, std::uint32_t request_id,
               std::span<const std::uint8_t> payload);
  void RejectMessage(Peer& peer, Channel* channel, Reject reason, bool request,
                     std::uint32_t request_id, double retry_after, std::string_view text);
  void Offence(Peer& peer, Channel* channel, Reject reason, double retry_after,
               std::string_view text, bool answered);
  void Flood(Peer& peer, std::size_t bytes, std::size_t budget);

  // --- requests.cc ---
  // Step 10 for a request: opened as pending (with its timeout), then handed to the handler.
  void OpenRequest(Session& session, Channel& channel, std::uint32_t request_id,
                   std::span<Value> args);
  // `channel`: the request's (0 when it named none), for the wire inspector.
  void SendResponse(Session& session, ChannelId channel, std::uint32_t id, Status::Code status,
                    std::span<const std::uint8_t> payload, double retry_after);

  // --- network.cc: links, outbound frames, housekeeping, the inspector ---
  // `flush`: what is queued goes out first even where `reason` would drop it (Fail()'s).
  void End(Peer& peer, ExitReason reason, std::string_view text, bool flush = false);
  // Unlinks `peer` from the network; its session ends, or waits for a resume when `resumable`.
  void Unlink(Peer& peer, ExitReason reason, bool resumable);
  // Queues `frame` for `s`: to its peer, or to its outbox while the link is lost.
  void SendTo(Session& s, std::span<const std::uint8_t> frame);
  // The drain's target of session `s` (linked), chosen at its first call; null when no target
  // has an address for its link's transport.
  const std::pair<const RedirectTarget*, const std::string*> TargetOf(Session& s);
  // Sends `s` its target (a Redirect frame); false when it has none.
  bool SendRedirect(Session& s);
  // The Bye's text for `peer` at Shutdown(): where its session goes when a drain said so.
  std::string ShutdownText(Peer& peer);
  void SendFrame(Peer& peer, std::span<const std::uint8_t> frame);
  void Housekeep();
  void ArmHousekeeping();
  // Ends the inspection when its lease passes unrenewed (a one-shot task, moved by each lease).
  void ArmInspectionEnd(TimePoint now);
  // Records a message for the wire inspector (the caller checked tap_.on()); returns its number.
  std::uint64_t Tap(bool inbound, std::string_view kind, ChannelId id, const Channel* ch,
                    SessionId session, std::span<const std::uint8_t> payload, std::string verdict);

  Kernel& kernel_;
  NetOptions options_;
  ChannelRegistry channels_;
  Sessions sessions_;
  Replicas replicas_;  // after sessions_: it subscribes to them
  Hooks::Point* auth_point_;
  Hooks::Point* rate_limited_point_;
  Hooks::Point* flood_point_;
  Bus::Topic* rate_limited_topic_;
  Bus::Topic* flood_topic_;
  Bus::Topic* rejected_topic_;
  Bus::Topic* resumed_topic_;
  std::unique_ptr<TcpTransport> transport_;
  std::unique_ptr<TcpTransport> websocket_;  // net.websocket
  std::vector<Peer*> peers_;                 // attached and not closed
  std::vector<SessionId> detached_;          // sessions waiting for a resume
  HandshakeSlots slots_;
  RefusalLog refusals_;
  PendingRequests requests_;
  std::uint64_t housekeeping_ = 0;  // the scheduler task id while peers exist
  TimePoint batch_now_{};           // the clock, read once per Receive for every frame in it
  std::vector<std::uint64_t> frame_scratch_;    // an aligned copy of a misaligned frame
  std::vector<std::uint64_t> payload_scratch_;  // ... and of a misaligned payload
  NetStats stats_;
  WireTap tap_;
  TaskHandle inspection_end_;  // the one-shot task that ends an unrenewed inspection
  // The last rejection RejectMessage counted, and its text while the tap is on: what OnInbound
  // records as the message's verdict.
  Reject last_reject_ = Reject::kFlood;
  std::uint64_t rejections_ = 0;
  std::string reject_text_;
  bool shut_down_ = false;
  bool closing_ = false;   // StopAccepting()
  bool draining_ = false;  // Drain()
  struct Redirection {
    std::vector<RedirectTarget> targets;  // sessions counts grow as sessions are sent there
    std::string reason;
    std::unordered_map<SessionId, std::size_t> chosen;  // session -> targets index
  };
  std::optional<Redirection> redirect_;  // Redirect()
  bool serving_ = true;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_NETWORK_H_
