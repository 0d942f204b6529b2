// SPDX-License-Identifier: Apache-2.0
// Connection: the client side of the wire (sdk/include/molt/client.h) as the composition of its
// parts (connection.h): the connection's state and how it changes (connecting, losing the link
// and coming back, following a Redirect, closing), the session a Welcome gives, what the server's
// frames do, the app's calls and listeners, and the step.
#include "kernel/src/client/connection.h"

#include <fmt/format.h>
#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "kernel/src/wire/envelope.h"

namespace molt::kernel::client {
namespace {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

constexpr double kDefaultConnectTimeout = 10;
constexpr std::size_t kDefaultSendQueue = 1 << 20;
constexpr double kDefaultReconnectMax = 8;
constexpr double kDefaultPredictTimeout = 2;  // spec: Prediction TimeoutSeconds
// What a Disconnect (or the destructor) still writes of the queue before the Bye.
constexpr Duration kFinishWrites = std::chrono::milliseconds(50);

// A Welcome's or a Channels frame's table as a list (none when absent).
std::vector<const w::ChannelInfo*> ChannelList(
    const fb::Vector<fb::Offset<w::ChannelInfo>>* infos) {
  if (infos == nullptr) {
    return {};
  }
  return {infos->begin(), infos->end()};
}

LinkOptions LinkOptionsOf(const molt_client_options& o) {
  LinkOptions l;
  l.tls = (o.flags & MOLT_CLIENT_TLS) != 0;
  l.tls_ca_file = o.tls_ca_file != nullptr ? o.tls_ca_file : "";
  l.tls_server_name = o.tls_server_name != nullptr ? o.tls_server_name : "";
  l.websocket = (o.flags & MOLT_CLIENT_WEBSOCKET) != 0;
  return l;
}

}  // namespace

Connection::Connection(const molt_client_options& o)
    : connect_timeout_(o.connect_timeout_seconds > 0 ? o.connect_timeout_seconds
                                                     : kDefaultConnectTimeout),
      reconnect_((o.flags & MOLT_CLIENT_NO_RECONNECT) == 0),
      predict_timeout_(Within(o.predict_timeout_seconds > 0 ? o.predict_timeout_seconds
                                                            : kDefaultPredictTimeout)),
      websocket_((o.flags & MOLT_CLIENT_WEBSOCKET) != 0),
      datagram_([this](std::span<const std::uint8_t> frame) { frames_.Dispatch(frame); }),
      link_(LinkOptionsOf(o), queue_, *this),
      sender_(queue_, link_, channels_, requests_, predictions_, datagram_, limits_,
              o.max_send_queue_bytes > 0 ? o.max_send_queue_bytes : kDefaultSendQueue),
      frames_(*this),
      reconnector_(o.reconnect_max_seconds > 0 ? o.reconnect_max_seconds : kDefaultReconnectMax) {}

Connection::~Connection() {
  kernel_.reset();      // controllers stop first: they may still send
  state_fn_ = nullptr;  // no callbacks from a client being destroyed
  resolved_fn_ = nullptr;
  handlers_.clear();
  all_channels_ = {};
  replicas_.ClearListeners();
  requests_.Silence();
  link_.FinishWrites(kFinishWrites);  // what the controllers sent as they stopped, then the Bye
  SayBye();  // like Disconnect: the server ends the session now, not after a resume window
  Teardown();
}

// --- The connection's state ------------------------------------------------------------------

Status Connection::Connect(std::string host, std::uint16_t port, std::string user,
                           std::span<const std::uint8_t> credentials,
                           std::span<const std::uint8_t> join_data) {
  if (state_ == MOLT_CLIENT_CONNECTING || state_ == MOLT_CLIENT_CONNECTED ||
      state_ == MOLT_CLIENT_RECONNECTING) {
    return Status::FailedPrecondition("already connecting or connected: disconnect first");
  }
  MOLT_RETURN_IF_ERROR(link_.Prepare());
  poll_set_.Invalidate();  // sockets open from here on
  host_ = std::move(host);
  port_ = port;
  user_ = std::move(user);
  credentials_.assign(credentials.begin(), credentials.end());
  join_data_.assign(join_data.begin(), join_data.end());
  StartAttempt();
  return Status::Ok();
}

void Connection::StartAttempt() {
  const std::uint64_t link = link_.Begin();
  attempting_ = true;
  if (state_ != MOLT_CLIENT_RECONNECTING) {  // a reconnect stays RECONNECTING until the Welcome
    SetState(MOLT_CLIENT_CONNECTING, "");
    if (link != link_.generation()) {
      return;  // the state callback disconnected
    }
  }
  connect_deadline_ = RealNow() + Within(connect_timeout_);
  link_.Connect(host_, port_);
}

void Connection::OnLinked() {
  heartbeat_.Received(RealNow());
  fb::FlatBufferBuilder b(256);
  auto hello = w::CreateHelloDirect(b, w::kProtocolVersion, 0, user_.c_str(), &credentials_,
                                    &join_data_, &resume_token_, device_quality_);
  link_.Send(w::FinishFrame(b, w::Body::Hello, hello.Union()));
}

void Connection::OnReceived() { heartbeat_.Received(RealNow()); }

void Connection::OnFrame(std::span<const std::uint8_t> frame) { frames_.Dispatch(frame); }

void Connection::Closed(const std::string& reason) {
  state_ = MOLT_CLIENT_CLOSED;  // before the requests' callbacks: they may not send any more
  Teardown();
  SetState(MOLT_CLIENT_CLOSED, reason);
}

void Connection::Lost(const std::string& reason) {
  if (reconnector_.redirected()) {
    return FollowRedirect();
  }
  if (!reconnect_ || !has_session()) {
    return Closed(reason);
  }
  DropLink();
  reconnector_.AfterLoss(RealNow());
  if (state_ != MOLT_CLIENT_RECONNECTING) {
    SetState(MOLT_CLIENT_RECONNECTING, reason);
  }
}

void Connection::FollowRedirect() {
  const Reconnector::Redirection to = reconnector_.Follow(RealNow());
  DropLink();
  host_ = to.host;
  port_ = to.port;
  resume_token_.clear();  // sessions do not move between servers: a fresh join there
  const std::string reason = "redirected to server " + to.server + " at " + to.host + ":" +
                             std::to_string(to.port) + " (" + to.reason + ")";
  if (state_ != MOLT_CLIENT_RECONNECTING) {
    SetState(MOLT_CLIENT_RECONNECTING, reason);
  }
}

void Connection::DropLink() {
  attempting_ = false;
  link_.Drop();
}

void Connection::Teardown() {
  DropLink();
  queue_.Clear();
  session_ = 0;
  resume_token_.clear();
  reconnector_.ForgetRedirect();
  reconnector_.Reset();
  requests_.FailAll();
  predictions_.FailAll(Resolved());
  datagram_.Close();
}

void Connection::SetState(std::int32_t state, const std::string& reason) {
  state_ = state;
  if (state_fn_ != nullptr) {
    state_fn_(state_user_, state, reason.c_str());
  }
  if (kernel_) {
    kernel_->State(state, reason);
  }
}

void Connection::Disconnect() {
  if (state_ == MOLT_CLIENT_IDLE || state_ == MOLT_CLIENT_CLOSED) {
    state_ = MOLT_CLIENT_IDLE;
    return;
  }
  link_.FinishWrites(kFinishWrites);  // what the app sent goes before the Bye
  SayBye();
  state_ = MOLT_CLIENT_IDLE;  // before the requests' callbacks: they may not send any more
  Teardown();
  poll_set_.Invalidate();
  SetState(MOLT_CLIENT_IDLE, "disconnected by the app");
}

void Connection::SayBye() {
  if (state_ != MOLT_CLIENT_CONNECTED) {
    return;
  }
  fb::FlatBufferBuilder b(64);
  link_.SayBye(w::FinishFrame(b, w::Body::Bye, w::CreateByeDirect(b, "ClientClosed", "").Union()));
}

// --- What the server sends -------------------------------------------------------------------

void Connection::OnWelcome(const w::Welcome& welcome) {
  if (!attempting_) {
    return Closed("the server sent a second welcome");
  }
  attempting_ = false;
  const std::uint64_t link = link_.generation();
  const bool was_reconnecting = state_ == MOLT_CLIENT_RECONNECTING;
  const bool resumed = was_reconnecting && welcome.resumed() && welcome.session_id() == session_;
  if (was_reconnecting && !resumed) {
    // The old session is gone: nobody will answer its requests, and what was queued for it
    // (with its channel ids) is not sent to the new one.
    queue_.DropApp();
    requests_.FailAll();
    predictions_.FailAll(Resolved());
    if (link != link_.generation()) {
      return;  // a callback disconnected
    }
  }
  if (!resumed && !replicas_.empty()) {
    DropReplicas();
    if (link != link_.generation()) {
      return;
    }
  }
  BeginSession(welcome, resumed, RealNow());
  SetState(MOLT_CLIENT_CONNECTED, !was_reconnecting ? ""
                                  : resumed
                                      ? "resumed"
                                      : "a new session: the server did not resume the old one");
  if (link == link_.generation()) {
    link_.Flush();  // what the app sent while the link was down goes now, after the Welcome
  }
}

void Connection::BeginSession(const w::Welcome& welcome, bool resumed, TimePoint now) {
  session_ = welcome.session_id();
  server_takes_device_ = welcome.device_hints();
  resume_token_.clear();
  if (welcome.resume_token() != nullptr) {
    resume_token_.assign(welcome.resume_token()->begin(), welcome.resume_token()->end());
  }
  reconnector_.Reset();
  limits_.tick_rate = welcome.tick_rate();
  limits_.bytes_per_tick = welcome.bytes_per_tick();
  limits_.messages_per_tick = welcome.messages_per_tick();
  limits_.burst_ticks = welcome.budget_burst_ticks() > 0 ? welcome.budget_burst_ticks() : 1;
  limits_.max_frame_bytes = welcome.max_frame_bytes();
  queue_.SetBudget(SendQueue::ForServer(limits_), now);
  // The datagram link the Welcome offers (not over WebSocket: a browser's transport), to the
  // host the reliable link reached; a link that cannot open leaves everything on this one.
  datagram_.Close();
  // Its key: the Welcome's, or over TLS (the Welcome offers a port and no key) exported from
  // the TLS session as the server did.
  if (!websocket_ && welcome.datagram_port() != 0) {
    const std::vector<std::uint8_t> key =
        welcome.datagram_key() != nullptr
            ? std::vector<std::uint8_t>(welcome.datagram_key()->begin(),
                                        welcome.datagram_key()->end())
            : link_.ExportKey(w::DatagramSeal::kTlsExporterLabel, w::DatagramSeal::kKeyBytes);
    const std::string& target = link_.target();
    if (!key.empty()) {
      (void)datagram_.Open(target.substr(0, target.rfind(':')), welcome.datagram_port(), key,
                           welcome.session_id());
    }
  }
  // Channels. A resumed session keeps the state of its rate limits, as the server does.
  channels_.Set(ChannelList(welcome.channels()), resumed, now, queue_);
  heartbeat_.Start(welcome.ping_interval_ms() > 0
                       ? Duration(std::chrono::milliseconds(welcome.ping_interval_ms()))
                       : Duration(std::chrono::seconds(1)),
                   now);
}

Status Connection::SetDeviceQuality(double quality) {
  if (!std::isfinite(quality) || quality < 0 || quality > 16) {
    return Status::InvalidArgument(
        fmt::format("the device quality must be a finite number in [0, 16] (1: the device keeps "
                    "its frame budget; 0 withdraws the hint), not {}",
                    quality));
  }
  device_quality_ = static_cast<float>(quality);
  if (state_ == MOLT_CLIENT_CONNECTED && server_takes_device_) {
    fb::FlatBufferBuilder b(64);
    link_.Send(w::FinishFrame(b, w::Body::Device, w::CreateDevice(b, device_quality_).Union()));
  }
  return Status::Ok();
}

void Connection::OnRefuse(const w::Refuse& r) {
  const std::string why =
      std::string(w::EnumNameRefuseReason(r.reason())) + ": " + (r.text() ? r.text()->str() : "");
  const bool passing =
      r.reason() == w::RefuseReason::RateLimited || r.reason() == w::RefuseReason::ServerFull ||
      r.reason() == w::RefuseReason::ShuttingDown || r.reason() == w::RefuseReason::Starting ||
      r.reason() == w::RefuseReason::Overloaded;
  if (state_ == MOLT_CLIENT_RECONNECTING && passing) {
    // A busy server is not the end of a session being resumed: try again later.
    reconnector_.AtLeast(r.retry_after_ms() / 1000.0);
    return Lost(why);
  }
  Closed(why);
}

void Connection::OnBye(const w::Bye& m) {
  if (reconnector_.redirected()) {
    return FollowRedirect();
  }
  Closed((m.reason() ? m.reason()->str() : "Bye") + ": " + (m.text() ? m.text()->str() : ""));
}

void Connection::OnRedirect(const w::Redirect& message) {
  if (!welcomed()) {
    return;  // nothing to follow: the Bye ends the session as it would have
  }
  (void)reconnector_.Redirect(message.address() ? message.address()->str() : "",
                              message.server() ? message.server()->str() : "",
                              message.reason() ? message.reason()->str() : "");
}

void Connection::OnServerEvent(std::uint16_t channel, std::uint32_t seq,
                               std::span<const std::uint8_t> payload) {
  if (seq != 0) {  // an unreliable channel's: latest-wins drops what is older than the newest
    if (ChannelTable::Channel* ch = channels_.Find(channel);
        ch != nullptr && !ch->TakeNewest(seq)) {
      ++stale_events_;
      return;
    }
  }
  auto h = handlers_.find(channel);
  const Handler handler = h != handlers_.end() ? h->second : all_channels_;
  const std::uint64_t link = link_.generation();
  if (handler.fn != nullptr) {
    handler.fn(handler.user_data, channel, payload.data(), payload.size());
  }
  if (kernel_ && link == link_.generation()) {  // the controllers' Bus
    if (const ChannelTable::Channel* ch = channels_.Find(channel)) {
      kernel_->Event(channel, ch->name, payload);
    }
  }
}

void Connection::OnAcks(std::span<const std::uint32_t> accepted,
                        std::span<const std::uint32_t> rejected) {
  predictions_.Ack(accepted, rejected, Resolved());
}

Predictions::Resolved Connection::Resolved() {
  return [this](std::uint16_t channel, std::uint32_t seq, molt_status_t status) {
    if (resolved_fn_ != nullptr) {
      resolved_fn_(resolved_user_, channel, seq, status == MOLT_OK ? 1 : 0, status);
    }
    if (kernel_) {  // the controllers' Bus: each resolution once, also as the session ends
      if (const ChannelTable::Channel* ch = channels_.Find(channel)) {
        kernel_->Resolved(ch->name, seq, status);
      }
    }
  };
}

void Connection::OnResponse(std::uint32_t id, molt_status_t status,
                            std::span<const std::uint8_t> payload) {
  (void)requests_.Answer(id, status, payload);  // none: answered late, after our own timeout
}

void Connection::OnPing(const w::Ping& m) {
  if (queued_bytes() > sender_.max_queue_bytes()) {
    return;  // a server that pings and never reads does not grow our queue
  }
  fb::FlatBufferBuilder b(64);
  sender_.Queue(w::FinishFrame(b, w::Body::Pong, w::CreatePong(b, m.seq(), m.time_ns()).Union()),
                std::nullopt);
}

void Connection::OnPong(const w::Pong& m) { heartbeat_.OnPong(m.seq(), m.time_ns(), RealNow()); }

void Connection::OnChannels(const w::Channels& message) {
  if (state_ != MOLT_CLIENT_CONNECTED) {
    return;  // not welcomed yet: the Welcome brings the table
  }
  channels_.Set(ChannelList(message.channels()), /*same_session=*/true, RealNow(), queue_);
}

void Connection::OnReplicaMessage(const w::Replica& message) {
  std::vector<ReplicaStore::Update> updates;
  if (Status s = replicas_.Apply(message, &updates); !s.ok()) {
    return Closed(s.message());
  }
  Deliver(updates);
}

void Connection::Deliver(const std::vector<ReplicaStore::Update>& updates) {
  const std::uint64_t link = link_.generation();
  for (const ReplicaStore::Update& u : updates) {
    if (link != link_.generation() || !replicas_.Holds(u.id)) {
      return;  // a callback disconnected, or removed what follows
    }
    for (const ReplicaStore::Listener& l : replicas_.ListenersOf(u.id)) {
      if (link != link_.generation() || !replicas_.Holds(u.id)) {
        break;
      }
      l.fn(l.user_data, u.id, u.what, u.field);
    }
    if (kernel_ && link == link_.generation()) {  // the controllers' Bus
      if (const ReplicaStore::Replica* r = replicas_.Find(u.id)) {
        kernel_->ReplicaUpdate(r->name, u.id, u.what, u.field);
      }
    }
    if (u.what == MOLT_CLIENT_REPLICA_REMOVED) {
      replicas_.Erase(u.id);  // gone once the callbacks returned
    }
  }
}

void Connection::DropReplicas() {
  for (std::uint32_t id : replicas_.Ids()) {
    if (replicas_.Holds(id)) {
      Deliver({{id, MOLT_CLIENT_REPLICA_REMOVED, -1}});
      replicas_.Erase(id);  // even when a callback disconnected: the old session's are gone
    }
  }
}

// --- What the app and its controllers call ---------------------------------------------------

Result<std::uint16_t> Connection::ChannelId(std::string_view name) const {
  if (!has_session()) {
    return Status::FailedPrecondition("not connected: channels come with the server's welcome");
  }
  return channels_.Id(name);  // while reconnecting: the last welcome's table
}

Status Connection::SendIntent(std::uint16_t channel, std::span<const std::uint8_t> payload) {
  if (!has_session()) {
    return Status::FailedPrecondition("not connected");
  }
  return sender_.Intent(channel, payload);
}

Result<std::uint32_t> Connection::SendPredicted(std::uint16_t channel,
                                                std::span<const std::uint8_t> payload) {
  if (!has_session()) {
    return Status::FailedPrecondition("not connected");
  }
  return sender_.Predict(channel, payload, predict_timeout_);
}

void Connection::OnResolved(molt_client_resolved_fn fn, void* user_data) {
  resolved_fn_ = fn;
  resolved_user_ = user_data;
}

Status Connection::SendRequest(std::uint16_t channel, std::span<const std::uint8_t> payload,
                               double timeout_seconds, ResponseFn done) {
  if (!has_session()) {
    return Status::FailedPrecondition("not connected");
  }
  return sender_.Request(channel, payload, timeout_seconds, std::move(done));
}

void Connection::OnEvent(std::uint16_t channel, molt_client_event_fn fn, void* user_data) {
  if (channel == MOLT_CLIENT_ALL_CHANNELS) {
    all_channels_ = {fn, user_data};
  } else if (fn == nullptr) {
    handlers_.erase(channel);
  } else {
    handlers_[channel] = {fn, user_data};
  }
}

void Connection::OnState(molt_client_state_fn fn, void* user_data) {
  state_fn_ = fn;
  state_user_ = user_data;
}

void Connection::OnReplica(std::string name, molt_client_replica_fn fn, void* user_data) {
  const std::string filter = name;
  replicas_.Listen(std::move(name), fn, user_data);
  if (fn == nullptr) {
    return;
  }
  // Replicas that arrived before anyone listened (spec: early packets are buffered).
  for (std::uint32_t id : replicas_.Ids(filter)) {
    if (replicas_.Holds(id)) {
      fn(user_data, id, MOLT_CLIENT_REPLICA_SNAPSHOT, -1);
    }
  }
}

Result<ClientKernel*> Connection::Controllers() {
  if (!kernel_) {
    Result<std::unique_ptr<ClientKernel>> k = ClientKernel::Boot(*this);
    if (!k.ok()) {
      // The only way to fail: the process's kernel is already booted, by another client.
      return Status::FailedPrecondition(
          "another client of this process runs the controllers: one client kernel per process");
    }
    kernel_ = std::move(k).value();
  }
  return kernel_.get();
}

Status Connection::Intent(std::string_view channel, std::span<const std::uint8_t> payload) {
  Result<std::uint16_t> id = ChannelId(channel);
  return id.ok() ? SendIntent(*id, payload) : id.status();
}

Status Connection::Request(std::string_view channel, std::span<const std::uint8_t> payload,
                           double timeout_seconds,
                           Callback<void(molt_status_t, std::string_view)> done) {
  MOLT_ASSIGN_OR_RETURN(std::uint16_t id, ChannelId(channel));
  return SendRequest(
      id, payload, timeout_seconds,
      [done = std::move(done)](molt_status_t status, std::span<const std::uint8_t> answer) mutable {
        done(status, std::string_view(reinterpret_cast<const char*>(answer.data()), answer.size()));
      });
}

Result<std::uint32_t> Connection::Predict(std::string_view channel,
                                          std::span<const std::uint8_t> payload) {
  MOLT_ASSIGN_OR_RETURN(const std::uint16_t id, ChannelId(channel));
  return SendPredicted(id, payload);
}

Status Connection::Pending(std::string_view channel,
                           const Callback<void(std::uint32_t, std::span<const std::uint8_t>)>& fn) {
  MOLT_ASSIGN_OR_RETURN(const std::uint16_t id, ChannelId(channel));
  for (const Predictions::Pending& p : predictions_.List(id)) {
    fn(p.seq, p.payload);
  }
  return Status::Ok();
}

Status Connection::ReplicaValue(std::string_view replica, std::string_view field, molt_value* out) {
  return replicas_.Value(replica, field, out);
}

// --- Stepping and waiting --------------------------------------------------------------------

void Connection::Step(double budget_seconds) {
  const TimePoint deadline = RealNow() + Within(budget_seconds);
  link_.Restart();
  more_ready_ = false;
  sender_.NewStep();
  while (link_.PollOne() != 0) {
    if (RealNow() >= deadline) {
      more_ready_ = true;  // handlers may still be ready: the next wait does not block
      break;
    }
  }
  datagram_.Service();
  Timers();
  if (kernel_ && kernel_->started()) {
    // Controllers: what the I/O left of the budget, and at least a quarter of it; a zero budget
    // ("what is ready now") runs them under the kernel's own frame budget.
    const auto quarter = std::chrono::duration_cast<Duration>(Within(budget_seconds) / 4);
    kernel_->Step(budget_seconds == 0 ? std::nullopt
                                      : std::optional(std::max(quarter, deadline - RealNow())));
  }
  poll_set_.Invalidate();  // a step opens and closes sockets: what to poll is read again
}

void Connection::Timers() {
  const TimePoint now = RealNow();
  if (link_.write_failed()) {
    return Lost(link_.TakeWriteError());
  }
  if (attempting_ && now > connect_deadline_) {
    return Lost("timed out connecting to " + link_.target() + " (connect_timeout_seconds)");
  }
  if (state_ == MOLT_CLIENT_RECONNECTING && !attempting_ && reconnector_.Due(now)) {
    StartAttempt();
  }
  if (!has_session()) {
    return;
  }
  requests_.ExpireDue(now, [this] { return has_session(); });
  if (!has_session()) {
    return;  // a request's callback ended the session
  }
  predictions_.ExpireDue(now, Resolved());
  if (!has_session()) {
    return;  // a rollback ended the session
  }
  if (state_ == MOLT_CLIENT_CONNECTED && link_.linked() && heartbeat_.Silent(now)) {
    return Lost("nothing from the server for " +
                std::to_string(static_cast<int>(ToSeconds(heartbeat_.silence()))) + " s");
  }
  if (welcomed()) {
    if (std::optional<Heartbeat::Ping> ping = heartbeat_.Due(now)) {
      fb::FlatBufferBuilder b(64);
      sender_.Queue(
          w::FinishFrame(b, w::Body::Ping, w::CreatePing(b, ping->seq, ping->time_ns).Union()),
          std::nullopt);
    }
  }
  link_.Flush();  // paced frames whose time came
}

double Connection::Timeout() {
  if (more_ready_ || link_.write_failed()) {
    return 0;
  }
  const TimePoint now = RealNow();
  TimePoint next = TimePoint::max();
  auto at = [&next](TimePoint t) { next = std::min(next, t); };
  if (link_.resolving()) {
    at(now + std::chrono::milliseconds(1));  // the resolver's thread cannot wake a poll
  }
  if (attempting_) {
    at(connect_deadline_);
  }
  if (state_ == MOLT_CLIENT_RECONNECTING && !attempting_) {
    at(reconnector_.next_attempt());
  }
  if (has_session()) {
    if (std::optional<TimePoint> deadline = requests_.NextDeadline()) {
      at(*deadline);
    }
    if (std::optional<TimePoint> deadline = predictions_.NextDeadline()) {
      at(*deadline);
    }
  }
  if (welcomed() && link_.linked()) {
    at(heartbeat_.next_ping());
    at(heartbeat_.silent_at());
    if (!link_.write_waiting()) {
      if (std::optional<TimePoint> release = queue_.NextRelease(now)) {
        at(*release);
      }
    }
  }
  if (kernel_ && kernel_->started()) {
    if (std::optional<TimePoint> wake = kernel_->NextWake()) {
      at(*wake);
    }
  }
  if (std::optional<TimePoint> service = datagram_.next_service()) {
    at(*service);  // ENet's retransmits and pings, and what arrived on its socket
  }
  if (next == TimePoint::max()) {
    return -1;
  }
  return next <= now ? 0 : std::chrono::duration<double>(next - now).count();
}

Status Connection::Wait(double max_seconds) {
  if (std::isnan(max_seconds) || max_seconds < 0) {
    return Status::InvalidArgument("max_seconds must be a number >= 0 (INFINITY: no limit)");
  }
  double wait = Timeout();
  if (wait < 0 || wait > max_seconds) {
    wait = max_seconds;
  }
  const int fd = socket();
  if (std::isinf(wait) && fd < 0) {
    return Status::FailedPrecondition(
        "nothing to wait for: the client has no connection and no timer (connect first)");
  }
  if (wait == 0) {
    return Status::Ok();
  }
  const std::int32_t events = socket_events();
  pollfd p{fd,
           static_cast<short>(((events & MOLT_CLIENT_WAIT_READ) != 0 ? POLLIN : 0) |
                              ((events & MOLT_CLIENT_WAIT_WRITE) != 0 ? POLLOUT : 0)),
           0};
  timespec ts{};
  if (!std::isinf(wait)) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Within(wait)).count();
    ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  }
  if (::ppoll(fd >= 0 ? &p : nullptr, fd >= 0 ? 1 : 0, std::isinf(wait) ? nullptr : &ts, nullptr) <
          0 &&
      errno != EINTR) {
    return Status::IoError(std::string("poll failed: ") + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace molt::kernel::client
