// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/connection.h
//
// Connection: the client side of the wire, what a molt_client is (sdk/include/molt/client.h). It
// owns an Asio io_context that only Step() runs, so I/O and every callback happen on the app's
// thread, inside a step: the handshake, frames in both directions, requests and their deadlines,
// pings, reconnecting with backoff and resuming the session, the replicas the server sends
// (ReplicaStore), and the controllers' client kernel (ClientKernel), to which it is the
// ClientPort. What it writes goes through a SendQueue paced to the limits the server's Welcome
// announced. An app that is not a frame loop waits with Wait(), or polls socket() for
// socket_events() with Timeout() itself. The server is not trusted: every frame is verified
// before it is read, and a frame over the client's cap ends the connection.
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
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernel/src/abi/struct_size.h"
#include "kernel/src/client/client_kernel.h"
#include "kernel/src/client/replica_store.h"
#include "kernel/src/client/send_queue.h"
#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/token_bucket.h"

namespace molt::wire {
struct Welcome;
struct Replica;
struct Channels;
struct ChannelInfo;
struct Redirect;
}  // namespace molt::wire

template <>
struct molt::kernel::abi::SizedStruct<molt_client_options> {
  static constexpr const char* kName = "molt_client_options";
  static constexpr const char* kSince = "client API 1";
  static constexpr std::uint32_t kMinSize = 24;
};

namespace molt::kernel::wire {
class TlsContext;
class TlsFilter;
class WebSocketFilter;
}  // namespace molt::kernel::wire

namespace molt::kernel::client {

class Connection final : public ClientPort {
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
  double rtt() const { return rtt_; }

  // --- Event-loop integration (client API 4) ---
  // The socket's descriptor while there is one, else -1.
  int socket() const;
  // MOLT_CLIENT_WAIT_READ / _WRITE: what to poll socket() for; 0 without a socket.
  std::int32_t socket_events() const;
  // Seconds until a step is due even if the socket stays quiet: 0 for now, -1 for never (only
  // the socket or the app wakes the client).
  double Timeout();
  // Blocks until socket() is ready for socket_events(), Timeout() passes, or `max_seconds` (an
  // infinite value: no limit besides Timeout()) pass. Runs no callback.
  Status Wait(double max_seconds);
  // Bytes waiting in the send queue (paced, or held while reconnecting).
  std::size_t queued_bytes() const { return queue_.bytes() + writing_.size() - written_; }

  // --- Channels, intents, requests, events ---
  Result<std::uint16_t> ChannelId(std::string_view name) const;
  Status SendIntent(std::uint16_t channel, std::span<const std::uint8_t> payload);
  // `done(status, payload)` runs exactly once: inside a later step, or when the connection ends.
  // REQUIRES: `timeout_seconds` finite and >= 0 (0: the channel's own timeout); the C entry
  // points check it (abi/bridge.h, SecondsArg).
  using ResponseFn = Callback<void(molt_status_t, std::span<const std::uint8_t>)>;
  Status SendRequest(std::uint16_t channel, std::span<const std::uint8_t> payload,
                     double timeout_seconds, ResponseFn done);
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

 private:
  static constexpr std::size_t kFrameOverhead = 64;  // envelope bytes around a payload
  static constexpr double kFirstReconnectDelay = 0.1;
  // A caller's seconds, clamped to what a timer can hold.
  static Duration Within(double seconds) { return Seconds(std::clamp(seconds, 0.0, 1e6)); }

  friend struct ConnectionFuzzer;  // tests/fuzz/client_fuzz.cc: frames in without a socket
  struct Impl;                     // the Asio objects (connection.cc)
  struct Channel {
    std::string name;
    std::int32_t kind = 0;  // molt::wire::ChannelKind
    double timeout_seconds = 15;
    double rate = 0;  // the server's, per second (the bucket admits a share of it)
    TokenBucket bucket{0, 1, TimePoint()};
  };
  struct Pending {
    ResponseFn done;
    TimePoint deadline;
  };
  struct Handler {
    molt_client_event_fn fn = nullptr;
    void* user_data = nullptr;
  };

  // One attempt: resolve (names only), connect, Hello.
  void StartAttempt();
  void OnConnected();
  void Read();
  void Parse(std::uint64_t link);
  void OnFrame(std::span<const std::uint8_t> frame);
  void OnWelcome(const molt::wire::Welcome& welcome);
  // A swap changed the server's channel table while connected: the whole new table.
  void OnChannels(const molt::wire::Channels& message);
  // Replaces the channel table with `infos`. A channel that keeps its id, name, rate and burst
  // keeps its token bucket when `same_session`.
  void SetChannels(const std::vector<const molt::wire::ChannelInfo*>& infos, bool same_session,
                   TimePoint now);
  void OnReplicaMessage(const molt::wire::Replica& message);
  // The server drains (wire 2.4): remembers where this session goes next.
  void OnRedirect(const molt::wire::Redirect& message);
  // The link ended after a Redirect: joins the server it named afresh (a new session there), as
  // the same user with the same credentials and join data, whether or not reconnecting is on.
  void FollowRedirect();
  // Delivers replica updates to the listeners and the controllers' Bus while the link lasts.
  void Deliver(const std::vector<ReplicaStore::Update>& updates);
  // The new session is not the old one: what the old one was sent is gone.
  void DropReplicas();
  // The server ended it (Refuse, Bye, a bad frame): no retry.
  void Closed(const std::string& reason);
  // The link failed: with a session to resume, retry after a backoff; otherwise Closed.
  void Lost(const std::string& reason);
  // Closes the socket; the queue and the requests in flight stay for the next link.
  void DropTransport();
  // Drops the link, the queue, the session and every pending request (answered TIMEOUT).
  void Teardown();
  void FailPending();
  void SetState(std::int32_t state, const std::string& reason);
  // Checks a send: connected, the channel of that kind, frame size, queue room, rate limit.
  Result<Channel*> CheckSend(std::uint16_t id, std::int32_t kind, std::size_t size);
  // Queues an encoded frame (app frames name their channel); the first since the last step is
  // written at once, the others at the next step, in one write.
  void Queue(std::span<const std::uint8_t> frame, std::optional<std::uint16_t> channel);
  // Writes what the queue releases, without blocking; waits for writability when the socket is
  // full.
  void Flush();
  enum class WriteState { kDone, kBlocked, kFailed };
  // Frames (one or more, size-prefixed) to the socket's bytes after what is being written: each
  // a WebSocket message when the link speaks WebSocket, then TLS records when it speaks TLS.
  void Encode(std::span<const std::uint8_t> frames);
  // What the filters hold for the socket (the upgrade request, a pong, TLS handshake messages)
  // goes after what is being written.
  void TakeFilterOutput();
  // Writes `writing_`, and what the queue releases now once it is written, until the socket is
  // full (kBlocked), nothing more may go yet (kDone), or a write fails (kFailed: write_error_).
  WriteState WriteReady();
  // Silence from the server this long is a lost link: three ping periods and two seconds.
  Duration Silence() const { return 3 * ping_period_ + std::chrono::seconds(2); }
  // Best effort: a Bye written now, unless a write is in flight.
  void SayBye();
  // Writes the queue (non-blocking writes and polls, no Asio handler: no app callback runs), at
  // the server's pace, for at most 50 ms.
  void FinishWrites();
  void Timers();
  bool welcomed() const { return state_ == MOLT_CLIENT_CONNECTED && !attempting_; }

  std::unique_ptr<Impl> io_;
  // Options.
  const double connect_timeout_;
  const std::size_t max_send_queue_;
  const bool reconnect_;
  const double reconnect_max_;
  const bool tls_wanted_;  // MOLT_CLIENT_TLS
  const std::string tls_ca_file_;
  const std::string tls_server_name_;
  std::shared_ptr<wire::TlsContext> tls_context_;  // made at the first Connect
  std::unique_ptr<wire::TlsFilter> tls_;           // this link's, once TCP connected
  const bool websocket_;                           // MOLT_CLIENT_WEBSOCKET
  std::unique_ptr<wire::WebSocketFilter> ws_;      // this link's, once TCP connected
  std::vector<std::uint8_t> plain_;   // released by the queue, or read, for the filters
  std::vector<std::uint8_t> ws_out_;  // the WebSocket filter's bytes, for TLS
  // The link.
  std::uint64_t link_ = 0;  // grows with every link; completions of an older one are ignored
  std::int32_t state_ = MOLT_CLIENT_IDLE;
  bool attempting_ = false;  // an attempt (resolve, connect, Hello) waits for its Welcome
  bool resolving_ = false;
  bool linked_ = false;            // TCP connected: frames may be written (the Hello first)
  bool write_waiting_ = false;     // waiting for the socket to take more
  bool more_ready_ = false;        // the last step stopped with I/O still ready
  std::string write_error_;        // a write failed outside a step: Lost at the next one
  bool wrote_since_step_ = false;  // a send flushed since the last step: the next ones wait for it
  double backoff_;
  TimePoint next_attempt_{};
  TimePoint connect_deadline_{};
  TimePoint last_receive_{};
  TimePoint next_ping_{};
  std::minstd_rand rng_{std::random_device{}()};
  std::string host_;
  std::uint16_t port_ = 0;
  std::string target_;
  std::string user_;
  std::vector<std::uint8_t> credentials_;
  std::vector<std::uint8_t> join_data_;
  std::vector<std::uint8_t> resume_token_;
  struct Redirection {
    std::string host;
    std::uint16_t port = 0;
    std::string server;
    std::string reason;
  };
  std::optional<Redirection> redirect_;  // followed when this link ends
  // Inbound.
  std::vector<std::uint8_t> in_ = std::vector<std::uint8_t>(16 * 1024);
  std::vector<std::uint8_t> rx_;
  std::vector<std::uint64_t> frame_scratch_;
  std::vector<std::uint64_t> payload_scratch_;
  // Outbound.
  SendQueue queue_;
  std::vector<std::uint8_t> writing_;  // released by the queue, being written
  std::size_t written_ = 0;            // of writing_
  // The session.
  std::uint64_t session_ = 0;
  SendQueue::ServerLimits limits_;
  Duration ping_period_ = std::chrono::seconds(1);  // the Welcome's ping interval
  std::uint32_t ping_seq_ = 0;
  double rtt_ = 0;
  std::unordered_map<std::uint16_t, Channel> channels_;
  std::unordered_map<std::string, std::uint16_t> ids_;
  std::uint32_t next_request_ = 1;
  std::map<std::uint32_t, Pending> pending_;
  // The app's.
  std::unordered_map<std::uint16_t, Handler> handlers_;
  Handler all_channels_;
  molt_client_state_fn state_fn_ = nullptr;
  void* state_user_ = nullptr;
  ReplicaStore replicas_;
  // The process's client kernel, when this client loaded or added controllers.
  std::unique_ptr<ClientKernel> kernel_;
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_CONNECTION_H_
