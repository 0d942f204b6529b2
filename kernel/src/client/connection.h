// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/connection.h
//
// Connection: the client side of the wire, what a molt_client is (sdk/include/molt/client.h). Its
// I/O runs on an Asio io_context that only Step() runs, so I/O and every callback happen on the
// app's thread, inside a step: the handshake, frames in both directions, requests and their
// deadlines, pings, reconnecting with backoff and resuming the session, the replicas the server
// sends (ReplicaStore), and the controllers' client kernel (ClientKernel), to which it is the
// ClientPort. An app that is not a frame loop waits with Wait(), or polls socket() for
// socket_events() with Timeout() itself. The server is not trusted: every frame is verified
// before it is read, and a frame over the client's cap ends the connection.
//
// Connection is the composition of parts with one job each: the link (Link, link.h: connecting,
// TLS and WebSocket, reading frames, writing without blocking), the frames the server sends
// (FrameDispatcher, frame_dispatcher.h, which calls the handlers here), what is sent (Sender,
// sender.h, through a SendQueue paced to the limits the server's Welcome announced), the server's
// channels (ChannelTable), the requests in flight (RequestTable), the pings (Heartbeat) and when
// and where the next attempt goes (Reconnector). What stays here: the connection's state and its
// changes, the session (the Welcome, resuming), the app's listeners, and the step.
//
// Methods return a Status whose message is the text molt_client_last_error reports; the C entry
// points (client.cc) are thin shims over them.
//
// Thread safety: not thread-safe; REQUIRES one thread at a time (the one that steps).
#ifndef MOLT_KERNEL_CLIENT_CONNECTION_H_
#define MOLT_KERNEL_CLIENT_CONNECTION_H_

#include <molt/client.h>
#include <molt/kernel/status.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernel/src/abi/struct_size.h"
#include "kernel/src/client/channel_table.h"
#include "kernel/src/client/client_kernel.h"
#include "kernel/src/client/datagram_link.h"
#include "kernel/src/client/frame_dispatcher.h"
#include "kernel/src/client/heartbeat.h"
#include "kernel/src/client/link.h"
#include "kernel/src/client/poll_set.h"
#include "kernel/src/client/predictions.h"
#include "kernel/src/client/reconnector.h"
#include "kernel/src/client/replica_store.h"
#include "kernel/src/client/request_table.h"
#include "kernel/src/client/send_queue.h"
#include "kernel/src/client/sender.h"
#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"

template <>
struct molt::kernel::abi::SizedStruct<molt_client_options> {
  static constexpr const char* kName = "molt_client_options";
  static constexpr const char* kSince = "client API 1";
  static constexpr std::uint32_t kMinSize = 24;
};

namespace molt::kernel::client {

class Connection final : public ClientPort, private LinkSink, private ServerFrameHandler {
 public:
  // `options` as a current struct (ReadSized): zero fields take their defaults.
  explicit Connection(const molt_client_options& options);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  // Stops the controllers (what they send as they stop still goes, within 50 ms), says Bye and
  // closes; no callback runs.
  ~Connection() override;

  // --- The link ---
  // Starts connecting; the handshake proceeds inside Step(). FailedPrecondition while connecting
  // or connected; InvalidArgument when TLS is asked for and its CA file cannot be used.
  Status Connect(std::string host, std::uint16_t port, std::string user,
                 std::span<const std::uint8_t> credentials,
                 std::span<const std::uint8_t> join_data);
  // Writes what the send queue holds (for at most 50 ms, at the server's pace), says Bye and
  // closes: what is left is dropped, pending requests answer MOLT_ERR_TIMEOUT, the state becomes
  // IDLE. Nothing when idle.
  void Disconnect();
  // I/O and callbacks for about `budget_seconds` (0: what is ready), then timers, paced sends and
  // the controllers. REQUIRES: a finite budget >= 0.
  void Step(double budget_seconds);

  std::int32_t state() const { return state_; }
  std::uint64_t session() const { return session_; }
  double rtt() const { return heartbeat_.rtt(); }

  // --- Event-loop integration (client API 4) ---
  // The descriptor to poll while there is a socket, else -1: the reliable link's socket, or,
  // while the datagram link is open too, one epoll descriptor for both (PollSet, poll_set.h).
  int socket() const {
    return poll_set_.Use(link_.socket(), link_.socket_events(), datagram_.socket());
  }
  // MOLT_CLIENT_WAIT_READ / _WRITE: what to poll socket() for; 0 without a socket.
  std::int32_t socket_events() const {
    (void)socket();
    return poll_set_.events(link_.socket_events());
  }
  // Seconds until a step is due even if the socket stays quiet: 0 for now, -1 for never (only
  // the socket or the app wakes the client).
  double Timeout();
  // Blocks until socket() is ready for socket_events(), Timeout() passes, or `max_seconds` (an
  // infinite value: no limit besides Timeout()) pass. Runs no callback.
  Status Wait(double max_seconds);
  // Bytes waiting in the send queue (paced, or held while reconnecting).
  std::size_t queued_bytes() const { return sender_.queued_bytes(); }

  // --- Channels, intents, requests, events ---
  Result<std::uint16_t> ChannelId(std::string_view name) const;
  Status SendIntent(std::uint16_t channel, std::span<const std::uint8_t> payload);
  // `done(status, payload)` runs exactly once: inside a later step, or when the connection ends.
  // REQUIRES: `timeout_seconds` finite and >= 0 (0: the channel's own timeout); the C entry
  // points check it (abi/bridge.h, SecondsArg).
  using ResponseFn = RequestTable::Done;
  Status SendRequest(std::uint16_t channel, std::span<const std::uint8_t> payload,
                     double timeout_seconds, ResponseFn done);
  // A predicted intent (client API 8): its seq; resolved once through OnResolved's listener,
  // accepted, rejected, or timed out after the client's predict timeout (2 s by default).
  Result<std::uint32_t> SendPredicted(std::uint16_t channel, std::span<const std::uint8_t> payload);
  void OnResolved(molt_client_resolved_fn fn, void* user_data);
  // The predicted intents not yet resolved, oldest first (0xFFFF: on every channel).
  std::vector<Predictions::Pending> PendingPredictions(std::uint16_t channel) const {
    return predictions_.List(channel);
  }
  // The device's quality (client API 9): in every Hello from now on, and at once to a connected
  // server that takes hints (its Welcome said device_hints). InvalidArgument unless finite and in
  // [0, 16].
  Status SetDeviceQuality(double quality);
  // Unreliable messages dropped here by latest-wins (older than the newest taken).
  std::uint64_t stale_events() const { return stale_events_; }
  // One handler per channel (MOLT_CLIENT_ALL_CHANNELS: the catch-all); a null `fn` removes it.
  void OnEvent(std::uint16_t channel, molt_client_event_fn fn, void* user_data);
  void OnState(molt_client_state_fn fn, void* user_data);

  // --- Replicas ---
  // Sets the listener for replicas named `name` (empty: every replica) and announces the ones
  // already held as SNAPSHOT.
  void OnReplica(std::string name, molt_client_replica_fn fn, void* user_data);
  const ReplicaStore& replicas() const { return replicas_; }

  // --- Controllers ---
  // The process's client kernel, booted on first use; FailedPrecondition when another client of
  // this process runs it.
  Result<ClientKernel*> Controllers();
  ClientKernel* controllers_if_booted() { return kernel_.get(); }

  // --- ClientPort: what controllers ask of the connection ---
  Status Intent(std::string_view channel, std::span<const std::uint8_t> payload) override;
  Status Request(std::string_view channel, std::span<const std::uint8_t> payload,
                 double timeout_seconds,
                 Callback<void(molt_status_t, std::string_view)> done) override;
  Status ReplicaValue(std::string_view replica, std::string_view field, molt_value* out) override;
  Result<std::uint32_t> Predict(std::string_view channel,
                                std::span<const std::uint8_t> payload) override;
  Status Pending(std::string_view channel,
                 const Callback<void(std::uint32_t, std::span<const std::uint8_t>)>& fn) override;

 private:
  friend struct ConnectionFuzzer;  // tests/fuzz/client_fuzz.cc: frames in without a socket
  struct Handler {
    molt_client_event_fn fn = nullptr;
    void* user_data = nullptr;
  };
  // A caller's seconds, clamped to what a timer can hold.
  static Duration Within(double seconds) { return Seconds(std::clamp(seconds, 0.0, 1e6)); }

  // --- The connection's state ---
  // One attempt: a new link, connecting, then the Hello (OnLinked).
  void StartAttempt();
  // The server ended it (Refuse, Bye, a bad frame): no retry.
  void Closed(const std::string& reason);
  // The link failed: with a session to resume, retry after a backoff; otherwise Closed.
  void Lost(const std::string& reason);
  // The link ended after a Redirect: joins the server it named afresh (a new session there), as
  // the same user with the same credentials and join data, whether or not reconnecting is on.
  void FollowRedirect();
  // Closes the link; the queue and the requests in flight stay for the next link.
  void DropLink();
  // Drops the link, the queue, the session and every pending request (answered TIMEOUT).
  void Teardown();
  void SetState(std::int32_t state, const std::string& reason);
  bool has_session() const {
    return state_ == MOLT_CLIENT_CONNECTED || state_ == MOLT_CLIENT_RECONNECTING;
  }
  bool welcomed() const { return state_ == MOLT_CLIENT_CONNECTED && !attempting_; }
  // Best effort: a Bye written now, unless a write is in flight.
  void SayBye();
  void Timers();

  // --- LinkSink: what the link tells ---
  void OnLinked() override;
  void OnReceived() override;
  void OnFrame(std::span<const std::uint8_t> frame) override;
  void OnLinkLost(const std::string& reason) override { Lost(reason); }
  void OnLinkRefused(const std::string& reason) override { Closed(reason); }
  bool Welcomed() const override { return welcomed(); }

  // --- ServerFrameHandler: what the server sends ---
  void OnWelcome(const molt::wire::Welcome& welcome) override;
  void OnRefuse(const molt::wire::Refuse& refuse) override;
  void OnBye(const molt::wire::Bye& bye) override;
  // The server drains (wire 2.4): remembers where this session goes next.
  void OnRedirect(const molt::wire::Redirect& redirect) override;
  void OnServerEvent(std::uint16_t channel, std::uint32_t seq,
                     std::span<const std::uint8_t> payload) override;
  void OnAcks(std::span<const std::uint32_t> accepted,
              std::span<const std::uint32_t> rejected) override;
  // What tells the app a predicted intent was decided.
  Predictions::Resolved Resolved();
  void OnResponse(std::uint32_t id, molt_status_t status,
                  std::span<const std::uint8_t> payload) override;
  void OnPing(const molt::wire::Ping& ping) override;
  void OnPong(const molt::wire::Pong& pong) override;
  void OnReplicaMessage(const molt::wire::Replica& replica) override;
  // A swap changed the server's channel table while connected: the whole new table.
  void OnChannels(const molt::wire::Channels& channels) override;
  void OnBadFrame(const std::string& reason) override { Closed(reason); }
  // The session of a Welcome: a new one drops what the old one was sent and was sent.
  void BeginSession(const molt::wire::Welcome& welcome, bool resumed, TimePoint now);
  // Delivers replica updates to the listeners and the controllers' Bus while the link lasts.
  void Deliver(const std::vector<ReplicaStore::Update>& updates);
  // The new session is not the old one: what the old one was sent is gone.
  void DropReplicas();

  // Options.
  const double connect_timeout_;
  const bool reconnect_;
  const Duration predict_timeout_;
  const bool websocket_;
  // The parts (declared in the order they are made: each refers to those before it).
  SendQueue queue_;
  SendQueue::ServerLimits limits_;
  ChannelTable channels_;
  RequestTable requests_;
  Predictions predictions_;
  DatagramLink datagram_;     // the session's datagram link, when its Welcome offered one
  mutable PollSet poll_set_;  // what socket() is while both links have a socket
  Link link_;
  Sender sender_;
  FrameDispatcher frames_;
  Heartbeat heartbeat_;
  Reconnector reconnector_;
  // The connection.
  std::int32_t state_ = MOLT_CLIENT_IDLE;
  bool attempting_ = false;  // an attempt (resolve, connect, Hello) waits for its Welcome
  bool more_ready_ = false;  // the last step stopped with I/O still ready
  TimePoint connect_deadline_{};
  std::string host_;
  std::uint16_t port_ = 0;
  std::string user_;
  std::vector<std::uint8_t> credentials_;
  std::vector<std::uint8_t> join_data_;
  std::vector<std::uint8_t> resume_token_;
  float device_quality_ = 0;          // said in the Hello and in Device bodies; 0: not said
  bool server_takes_device_ = false;  // the session's Welcome said device_hints
  std::uint64_t session_ = 0;
  // The app's.
  std::unordered_map<std::uint16_t, Handler> handlers_;
  Handler all_channels_;
  molt_client_state_fn state_fn_ = nullptr;
  void* state_user_ = nullptr;
  molt_client_resolved_fn resolved_fn_ = nullptr;
  void* resolved_user_ = nullptr;
  std::uint64_t stale_events_ = 0;
  ReplicaStore replicas_;
  // The process's client kernel, when this client loaded or added controllers.
  std::unique_ptr<ClientKernel> kernel_;
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_CONNECTION_H_
