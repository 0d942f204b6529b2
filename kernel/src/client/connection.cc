// SPDX-License-Identifier: Apache-2.0
// Connection: the client side of the wire (sdk/include/molt/client.h), on an io_context that
// only Step() runs: the link (connecting, TLS, reading, writing, timers, losing it and coming
// back). What the server sends is read in connection_frames.cc; what the app and its controllers
// call, in connection_calls.cc.
#include "kernel/src/client/connection.h"

#include <poll.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>

#include "kernel/src/wire/envelope.h"
#include "kernel/src/wire/tls.h"
#include "kernel/src/wire/websocket.h"

namespace molt::kernel::client {
namespace {

namespace asio = boost::asio;
namespace fb = ::flatbuffers;
namespace w = ::molt::wire;
using tcp = asio::ip::tcp;

constexpr std::uint32_t kMaxInboundFrame = 16u << 20;  // the client's own cap on server frames
constexpr double kDefaultConnectTimeout = 10;
constexpr std::size_t kDefaultSendQueue = 1 << 20;
constexpr double kDefaultReconnectMax = 8;

}  // namespace

struct Connection::Impl {
  asio::io_context io;
  tcp::resolver resolver{io};
  tcp::socket socket{io};
};

Connection::Connection(const molt_client_options& o)
    : io_(std::make_unique<Impl>()),
      connect_timeout_(o.connect_timeout_seconds > 0 ? o.connect_timeout_seconds
                                                     : kDefaultConnectTimeout),
      max_send_queue_(o.max_send_queue_bytes > 0 ? o.max_send_queue_bytes : kDefaultSendQueue),
      reconnect_((o.flags & MOLT_CLIENT_NO_RECONNECT) == 0),
      reconnect_max_(o.reconnect_max_seconds > 0 ? o.reconnect_max_seconds : kDefaultReconnectMax),
      tls_wanted_((o.flags & MOLT_CLIENT_TLS) != 0),
      tls_ca_file_(o.tls_ca_file != nullptr ? o.tls_ca_file : ""),
      tls_server_name_(o.tls_server_name != nullptr ? o.tls_server_name : ""),
      websocket_((o.flags & MOLT_CLIENT_WEBSOCKET) != 0),
      backoff_(kFirstReconnectDelay) {}

Connection::~Connection() {
  kernel_.reset();      // controllers stop first: they may still send
  state_fn_ = nullptr;  // no callbacks from a client being destroyed
  handlers_.clear();
  all_channels_ = {};
  replicas_.ClearListeners();
  for (auto& [id, p] : pending_) {
    p.done = [](molt_status_t, std::span<const std::uint8_t>) {};
  }
  FinishWrites();  // what the controllers sent as they stopped, then the Bye
  SayBye();        // like Disconnect: the server ends the session now, not after a resume window
  Teardown();
}

// --- The link ------------------------------------------------------------------------------------

Status Connection::Connect(std::string host, std::uint16_t port, std::string user,
                           std::span<const std::uint8_t> credentials,
                           std::span<const std::uint8_t> join_data) {
  if (state_ == MOLT_CLIENT_CONNECTING || state_ == MOLT_CLIENT_CONNECTED ||
      state_ == MOLT_CLIENT_RECONNECTING) {
    return Status::FailedPrecondition("already connecting or connected: disconnect first");
  }
  if (tls_wanted_ && tls_context_ == nullptr) {
    MOLT_ASSIGN_OR_RETURN(std::shared_ptr<wire::TlsContext> context,
                          wire::TlsContext::Client(tls_ca_file_));
    tls_context_ = std::move(context);
  }
  host_ = std::move(host);
  port_ = port;
  user_ = std::move(user);
  credentials_.assign(credentials.begin(), credentials.end());
  join_data_.assign(join_data.begin(), join_data.end());
  StartAttempt();
  return Status::Ok();
}

void Connection::StartAttempt() {
  const std::uint64_t link = ++link_;
  attempting_ = true;
  if (state_ != MOLT_CLIENT_RECONNECTING) {  // a reconnect stays RECONNECTING until the Welcome
    SetState(MOLT_CLIENT_CONNECTING, "");
    if (link != link_) {
      return;  // the state callback disconnected
    }
  }
  connect_deadline_ = RealNow() + Within(connect_timeout_);
  target_ = host_ + ":" + std::to_string(port_);
  auto connected = [this, link](boost::system::error_code ec) {
    if (link != link_) {
      return;
    }
    if (ec) {
      return Lost("cannot connect to " + target_ + ": " + ec.message());
    }
    OnConnected();
  };
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host_, ec);
  if (!ec) {  // a numeric address: nothing to resolve
    io_->socket.async_connect(tcp::endpoint(address, port_), connected);
    return;
  }
  resolving_ = true;
  io_->resolver.async_resolve(
      host_, std::to_string(port_),
      [this, link, connected](boost::system::error_code e, tcp::resolver::results_type r) {
        if (link != link_) {
          return;
        }
        resolving_ = false;
        if (e) {
          return Lost("cannot resolve " + target_ + ": " + e.message());
        }
        asio::async_connect(
            io_->socket, r,
            [connected](boost::system::error_code e2, const tcp::endpoint&) { connected(e2); });
      });
}

void Connection::OnConnected() {
  boost::system::error_code ignored;
  io_->socket.set_option(tcp::no_delay(true), ignored);
  io_->socket.non_blocking(true, ignored);  // Flush writes without blocking
  linked_ = true;
  last_receive_ = RealNow();
  // The Hello goes first; what the app queued while the link was down waits for the Welcome.
  fb::FlatBufferBuilder b(256);
  auto hello = w::CreateHelloDirect(b, w::kProtocolVersion, 0, user_.c_str(), &credentials_,
                                    &join_data_, &resume_token_);
  const std::span<const std::uint8_t> frame = w::FinishFrame(b, w::Body::Hello, hello.Union());
  writing_.clear();
  written_ = 0;
  // The TLS handshake first, then the WebSocket upgrade: the Hello waits inside the filters.
  if (tls_context_ != nullptr) {
    tls_ = std::make_unique<wire::TlsFilter>(*tls_context_, wire::TlsFilter::kClient,
                                             tls_server_name_.empty() ? host_ : tls_server_name_);
    if (Status s = tls_->Begin(); !s.ok()) {
      return Closed(s.message());
    }
  }
  if (websocket_) {
    wire::WebSocketOptions o;
    o.role = wire::WebSocketOptions::kClient;
    o.host = target_;
    ws_ = std::make_unique<wire::WebSocketFilter>(std::move(o));
  }
  Encode(frame);
  Flush();
  Read();
}

void Connection::Read() {
  const std::uint64_t link = link_;
  io_->socket.async_read_some(
      asio::buffer(in_), [this, link](boost::system::error_code ec, std::size_t n) {
        if (link != link_) {
          return;
        }
        if (ec) {
          if (ec == asio::error::eof && ws_ != nullptr && !ws_->answered()) {
            return Lost(
                "the server closed the connection without answering the WebSocket "
                "upgrade: is " +
                target_ + " a WebSocket port (moltd --ws)?" +
                (tls_ == nullptr ? " One under TLS (wss://) needs MOLT_CLIENT_TLS." : ""));
          }
          return Lost(ec == asio::error::eof ? "the server closed the connection"
                                             : "connection lost: " + ec.message());
        }
        last_receive_ = RealNow();
        // A refused certificate, a refused upgrade: neither gets better by retrying.
        std::span<const std::uint8_t> bytes(in_.data(), n);
        if (tls_ != nullptr) {  // the plaintext goes to the WebSocket filter, or is the frames
          plain_.clear();
          if (const Status s = tls_->Receive(bytes, ws_ != nullptr ? &plain_ : &rx_); !s.ok()) {
            return Closed(s.message());
          }
          bytes = plain_;
        }
        if (ws_ != nullptr) {
          if (const Status s = ws_->Receive(bytes, &rx_); !s.ok()) {
            TakeFilterOutput();  // a close frame saying why, best effort
            Flush();
            return Closed(s.message());
          }
        } else if (tls_ == nullptr) {
          rx_.insert(rx_.end(), bytes.begin(), bytes.end());
        }
        // The handshake's next flight, the upgrade's waiting Hello, a pong.
        if ((tls_ != nullptr && tls_->has_output()) || (ws_ != nullptr && ws_->has_output())) {
          TakeFilterOutput();
          Flush();
        }
        Parse(link);
        if (link == link_ && ws_ != nullptr && ws_->peer_closed()) {
          return Lost("the server closed the WebSocket (" + ws_->peer_close() + ")");
        }
        if (link == link_) {
          Read();
        }
      });
}

void Connection::Parse(std::uint64_t link) {
  std::size_t at = 0;
  while (link == link_ && rx_.size() - at >= 4) {
    std::uint32_t size = 0;
    std::memcpy(&size, rx_.data() + at, 4);
    if (size == 0 || size > kMaxInboundFrame) {
      return Closed("the server sent a frame of " + std::to_string(size) + " bytes");
    }
    if (rx_.size() - at < 4 + std::size_t{size}) {
      break;
    }
    OnFrame(std::span<const std::uint8_t>(rx_.data() + at, 4 + std::size_t{size}));
    at += 4 + std::size_t{size};
  }
  if (link == link_) {
    rx_.erase(rx_.begin(), rx_.begin() + static_cast<std::ptrdiff_t>(at));
  }
}

void Connection::Closed(const std::string& reason) {
  state_ = MOLT_CLIENT_CLOSED;  // before the requests' callbacks: they may not send any more
  Teardown();
  SetState(MOLT_CLIENT_CLOSED, reason);
}

void Connection::Lost(const std::string& reason) {
  if (redirect_) {
    return FollowRedirect();
  }
  const bool had_session = state_ == MOLT_CLIENT_CONNECTED || state_ == MOLT_CLIENT_RECONNECTING;
  if (!reconnect_ || !had_session) {
    return Closed(reason);
  }
  DropTransport();
  std::uniform_real_distribution<double> jitter(0.75, 1.25);
  next_attempt_ = RealNow() + Within(backoff_ * jitter(rng_));
  backoff_ = std::min(backoff_ * 2, reconnect_max_);
  if (state_ != MOLT_CLIENT_RECONNECTING) {
    SetState(MOLT_CLIENT_RECONNECTING, reason);
  }
}

void Connection::FollowRedirect() {
  const Redirection to = *std::exchange(redirect_, std::nullopt);
  DropTransport();
  host_ = to.host;
  port_ = to.port;
  resume_token_.clear();  // sessions do not move between servers: a fresh join there
  backoff_ = kFirstReconnectDelay;
  // Spread over the first backoff: not every client of the drained server in the same instant.
  std::uniform_real_distribution<double> spread(0, kFirstReconnectDelay);
  next_attempt_ = RealNow() + Within(spread(rng_));
  const std::string reason = "redirected to server " + to.server + " at " + to.host + ":" +
                             std::to_string(to.port) + " (" + to.reason + ")";
  if (state_ != MOLT_CLIENT_RECONNECTING) {
    SetState(MOLT_CLIENT_RECONNECTING, reason);
  }
}

void Connection::DropTransport() {
  ++link_;  // completions of the old link are ignored from here on
  attempting_ = false;
  resolving_ = false;
  linked_ = false;
  write_waiting_ = false;
  write_error_.clear();
  boost::system::error_code ignored;
  io_->resolver.cancel();
  io_->socket.close(ignored);
  io_->socket = tcp::socket(io_->io);
  tls_.reset();
  ws_.reset();
  rx_.clear();
  writing_.clear();  // on the wire when the link broke: may be lost
  written_ = 0;
}

void Connection::Teardown() {
  DropTransport();
  queue_.Clear();
  session_ = 0;
  resume_token_.clear();
  redirect_.reset();
  backoff_ = kFirstReconnectDelay;
  FailPending();
}

void Connection::FailPending() {
  std::map<std::uint32_t, Pending> requests = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : requests) {
    p.done(MOLT_ERR_TIMEOUT, {});
  }
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
  FinishWrites();  // what the app sent goes before the Bye
  SayBye();
  state_ = MOLT_CLIENT_IDLE;  // before the requests' callbacks: they may not send any more
  Teardown();
  SetState(MOLT_CLIENT_IDLE, "disconnected by the app");
}

void Connection::SayBye() {
  if (state_ != MOLT_CLIENT_CONNECTED || !linked_ || written_ != writing_.size()) {
    return;
  }
  fb::FlatBufferBuilder b(64);
  const std::span<const std::uint8_t> bye =
      w::FinishFrame(b, w::Body::Bye, w::CreateByeDirect(b, "ClientClosed", "").Union());
  Encode(bye);  // then a close frame and close_notify: the last bytes of the link
  if (ws_ != nullptr) {
    ws_->Close(1000);
  }
  if (tls_ != nullptr) {
    TakeFilterOutput();
    tls_->Shutdown();
  }
  TakeFilterOutput();
  boost::system::error_code ignored;
  io_->socket.write_some(asio::buffer(writing_), ignored);
}

void Connection::FinishWrites() {
  // Plain non-blocking writes and polls: no Asio handler runs, so no callback of the app does.
  const TimePoint deadline = RealNow() + std::chrono::milliseconds(50);
  while (linked_ && welcomed() && write_error_.empty() && RealNow() < deadline) {
    switch (WriteReady()) {
      case WriteState::kFailed:
        return;
      case WriteState::kBlocked: {
        pollfd p{socket(), POLLOUT, 0};
        ::poll(&p, 1,
               static_cast<int>(
                   std::chrono::ceil<std::chrono::milliseconds>(deadline - RealNow()).count()));
        break;
      }
      case WriteState::kDone: {
        const std::optional<TimePoint> next = queue_.NextRelease(RealNow());
        if (!next) {
          return;  // everything is written
        }
        std::this_thread::sleep_for(std::min(*next, deadline) - RealNow());  // paced
        break;
      }
    }
  }
}

// --- Stepping and waiting ------------------------------------------------------------------------

void Connection::Step(double budget_seconds) {
  const TimePoint deadline = RealNow() + Within(budget_seconds);
  io_->io.restart();
  more_ready_ = false;
  wrote_since_step_ = false;
  while (io_->io.poll_one() != 0) {
    if (RealNow() >= deadline) {
      more_ready_ = true;  // handlers may still be ready: the next wait does not block
      break;
    }
  }
  Timers();
  if (kernel_ && kernel_->started()) {
    // Controllers: what the I/O left of the budget, and at least a quarter of it; a zero budget
    // ("what is ready now") runs them under the kernel's own frame budget.
    const auto quarter = std::chrono::duration_cast<Duration>(Within(budget_seconds) / 4);
    kernel_->Step(budget_seconds == 0 ? std::nullopt
                                      : std::optional(std::max(quarter, deadline - RealNow())));
  }
}

void Connection::Timers() {
  const TimePoint now = RealNow();
  if (!write_error_.empty()) {
    return Lost(std::exchange(write_error_, {}));
  }
  if (attempting_ && now > connect_deadline_) {
    return Lost("timed out connecting to " + target_ + " (connect_timeout_seconds)");
  }
  if (state_ == MOLT_CLIENT_RECONNECTING && !attempting_ && now >= next_attempt_) {
    StartAttempt();
  }
  if (state_ != MOLT_CLIENT_CONNECTED && state_ != MOLT_CLIENT_RECONNECTING) {
    return;
  }
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (now >= it->second.deadline) {
      Pending p = std::move(it->second);
      it = pending_.erase(it);
      p.done(MOLT_ERR_TIMEOUT, {});
      if (state_ != MOLT_CLIENT_CONNECTED && state_ != MOLT_CLIENT_RECONNECTING) {
        return;
      }
    } else {
      ++it;
    }
  }
  if (state_ == MOLT_CLIENT_CONNECTED && linked_ && now - last_receive_ > Silence()) {
    return Lost("nothing from the server for " +
                std::to_string(static_cast<int>(ToSeconds(Silence()))) + " s");
  }
  if (welcomed() && now >= next_ping_) {
    next_ping_ = now + ping_period_;
    fb::FlatBufferBuilder b(64);
    const auto t = static_cast<std::uint64_t>(now.time_since_epoch().count());
    Queue(w::FinishFrame(b, w::Body::Ping, w::CreatePing(b, ++ping_seq_, t).Union()), std::nullopt);
  }
  Flush();  // paced frames whose time came
}

int Connection::socket() const {
  return io_->socket.is_open() ? static_cast<int>(io_->socket.native_handle()) : -1;
}

std::int32_t Connection::socket_events() const {
  if (socket() < 0) {
    return 0;
  }
  if (!linked_) {
    return MOLT_CLIENT_WAIT_WRITE;  // connecting: writable once connected
  }
  return MOLT_CLIENT_WAIT_READ | (write_waiting_ ? MOLT_CLIENT_WAIT_WRITE : 0);
}

double Connection::Timeout() {
  if (more_ready_ || !write_error_.empty()) {
    return 0;
  }
  const TimePoint now = RealNow();
  TimePoint next = TimePoint::max();
  auto at = [&next](TimePoint t) { next = std::min(next, t); };
  if (resolving_) {
    at(now + std::chrono::milliseconds(1));  // the resolver's thread cannot wake a poll
  }
  if (attempting_) {
    at(connect_deadline_);
  }
  if (state_ == MOLT_CLIENT_RECONNECTING && !attempting_) {
    at(next_attempt_);
  }
  if (state_ == MOLT_CLIENT_CONNECTED || state_ == MOLT_CLIENT_RECONNECTING) {
    for (const auto& [id, p] : pending_) {
      at(p.deadline);
    }
  }
  if (welcomed() && linked_) {
    at(next_ping_);
    at(last_receive_ + Silence());
    if (!write_waiting_) {
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

// --- Sending -------------------------------------------------------------------------------------

void Connection::Queue(std::span<const std::uint8_t> frame, std::optional<std::uint16_t> channel) {
  queue_.Push(frame, channel);
  // The first frame since the last step leaves at once (a lone request is not delayed); what
  // follows it before the next step leaves in one write there.
  if (!wrote_since_step_) {
    wrote_since_step_ = true;
    Flush();
  }
}

Connection::WriteState Connection::WriteReady() {
  for (;;) {
    if (written_ == writing_.size()) {
      writing_.clear();
      written_ = 0;
      if (!welcomed()) {
        return WriteState::kDone;
      }
      if (tls_ != nullptr || ws_ != nullptr) {
        plain_.clear();
        if (queue_.Release(RealNow(), &plain_) == 0) {
          return WriteState::kDone;
        }
        Encode(plain_);
      } else if (queue_.Release(RealNow(), &writing_) == 0) {
        return WriteState::kDone;
      }
    }
    boost::system::error_code ec;
    const std::size_t n = io_->socket.write_some(
        asio::buffer(writing_.data() + written_, writing_.size() - written_), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      return WriteState::kBlocked;
    }
    if (ec) {
      // Reported from the next step's timers: a send never runs the app's callbacks.
      write_error_ = "connection lost: " + ec.message();
      return WriteState::kFailed;
    }
    written_ += n;
  }
}

void Connection::Encode(std::span<const std::uint8_t> frames) {
  if (ws_ != nullptr) {
    for (std::size_t at = 0; frames.size() - at >= 4;) {  // the queue holds whole frames
      std::uint32_t size = 0;
      std::memcpy(&size, frames.data() + at, 4);
      ws_->Send(frames.subspan(at, 4 + std::size_t{size}));
      at += 4 + std::size_t{size};
    }
  } else if (tls_ != nullptr) {
    (void)tls_->Send(frames);
  } else {
    if (written_ == writing_.size()) {
      writing_.clear();
      written_ = 0;
    }
    writing_.insert(writing_.end(), frames.begin(), frames.end());
  }
  TakeFilterOutput();
}

void Connection::TakeFilterOutput() {
  if (written_ == writing_.size()) {
    writing_.clear();
    written_ = 0;
  }
  if (ws_ != nullptr && tls_ != nullptr) {
    ws_out_.clear();
    ws_->TakeOutput(&ws_out_);
    if (!ws_out_.empty()) {
      (void)tls_->Send(ws_out_);
    }
  } else if (ws_ != nullptr) {
    ws_->TakeOutput(&writing_);
  }
  if (tls_ != nullptr) {
    tls_->TakeOutput(&writing_);
  }
}

void Connection::Flush() {
  if (!linked_ || write_waiting_ || !write_error_.empty() || WriteReady() != WriteState::kBlocked) {
    return;
  }
  write_waiting_ = true;
  const std::uint64_t link = link_;
  io_->socket.async_wait(tcp::socket::wait_write, [this, link](boost::system::error_code e) {
    if (link != link_) {
      return;
    }
    write_waiting_ = false;
    if (e) {
      return Lost("connection lost: " + e.message());
    }
    Flush();
  });
}

}  // namespace molt::kernel::client
