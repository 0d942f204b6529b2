// SPDX-License-Identifier: Apache-2.0
// TcpTransport: an Asio acceptor, and connections read and written through an epoll set of the
// transport's own (one descriptor in Asio's loop). Reads go to Network::Receive; writes are
// non-blocking and batched per handler; nothing here blocks the kernel thread.
#include "kernel/src/net/transport.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/net/net_log.h"
#include "kernel/src/net/network.h"
#include "kernel/src/wire/tls.h"
#include "kernel/src/wire/websocket.h"

namespace molt::kernel::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

constexpr std::size_t kReadBuffer = 16 * 1024;
// Full reads one connection gets before the others ready with it have their turn.
constexpr int kReadsPerTurn = 4;
// Readiness events taken from the epoll set at once.
constexpr int kEventsPerHarvest = 64;

}  // namespace

class TcpPeer;

struct TcpTransport::Impl : std::enable_shared_from_this<TcpTransport::Impl> {
  Impl(Network& n, asio::io_context& i, std::shared_ptr<wire::TlsContext> t,
       std::optional<wire::WebSocketOptions> w)
      : net(n),
        io(i),
        tls(std::move(t)),
        websocket(std::move(w)),
        acceptor(i),
        retry(i),
        readiness(i) {}
  ~Impl() { CloseSpare(); }
  // Opens the connections' epoll set and starts watching it. False (errno set) if it cannot.
  bool OpenReadiness();
  // Waits, inside Asio's own loop, for the epoll set to have events.
  void WatchReadiness();
  // Hands each ready connection its events.
  void Harvest();
  void Accept();
  // Accept failed for lack of descriptors: refuse what waits, with the descriptor kept spare.
  void OutOfDescriptors(const error_code& ec);
  // Sends `fd` a Refuse (ServerFull; nothing over TLS, which could not read it) and closes it.
  void RefuseAndClose(int fd, const std::string& address, const std::string& why);
  // How many connections the descriptor limit leaves room for, keeping the reserve.
  void ComputeCapacity(std::size_t reserve);
  void AcceptLater();
  void OpenSpare() { spare = ::open("/dev/null", O_RDONLY | O_CLOEXEC); }
  void CloseSpare() {
    if (spare >= 0) {
      ::close(spare);
      spare = -1;
    }
  }
  // Drops the transport's reference later: the caller may still be inside the peer.
  void Forget(TcpPeer* peer);

  Network& net;
  asio::io_context& io;
  std::shared_ptr<wire::TlsContext> tls;            // null: plain TCP
  std::optional<wire::WebSocketOptions> websocket;  // set: every connection speaks WebSocket
  tcp::acceptor acceptor;
  asio::steady_timer retry;
  bool accepting = false;
  // One descriptor held in reserve: when accept fails for lack of descriptors, it is given up
  // for a moment to accept the waiting connection and refuse it with a reason, so the queue
  // drains instead of the acceptor waking again and again for a connection it cannot take.
  int spare = -1;
  std::size_t capacity = SIZE_MAX;  // connections (lingering ones included) before refusing
  std::size_t reserve = 0;
  TimePoint last_failure_log{};
  std::unordered_map<TcpPeer*, std::shared_ptr<TcpPeer>> peers;
  // The connections' readiness: their sockets are in an epoll set of the transport's own,
  // edge-triggered, watched as one descriptor by Asio's loop. A connection reads until a read
  // comes back short, which leaves the socket empty, and waits for the next edge: no read ends
  // in EAGAIN, where Asio's reactor asks the socket once more after every message it drained
  // (it knows a socket is empty only from a read of 0 bytes), and one wake of the loop serves
  // every connection ready in it with no allocation or lock per read.
  asio::posix::stream_descriptor readiness;
};

class TcpPeer final : public Peer, public std::enable_shared_from_this<TcpPeer> {
 public:
  // Takes the socket's descriptor from Asio: the transport's epoll set watches it (Watch()).
  TcpPeer(TcpTransport::Impl& t, int fd, std::string address)
      : Peer(std::move(address)), t_(t), fd_(fd), linger_(t.io), in_(kReadBuffer) {
    if (t.tls != nullptr) {
      tls_ = std::make_unique<wire::TlsFilter>(*t.tls, wire::TlsFilter::kServer, "");
    }
    if (t.websocket) {
      ws_ = std::make_unique<wire::WebSocketFilter>(*t.websocket);
    }
  }

  // Joins the transport's epoll set, before the Network sees the connection (a refusal at
  // accept lingers, reading from it); bytes already waiting are reported at once. False (errno
  // set) if it cannot.
  bool Watch() {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = this;
    return ::epoll_ctl(t_.readiness.native_handle(), EPOLL_CTL_ADD, fd_, &ev) == 0;
  }

  // The epoll set says the socket changed: writable again (a flush waits), or bytes (or the
  // end) to read.
  void OnEvents(std::uint32_t events) {
    if (finished_ || fd_ < 0) {
      return;
    }
    if (waiting_ && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) {
      waiting_ = false;
      if (!done_) {
        Flush();
      }
    }
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) != 0) {
      Readable();
    }
  }

  bool websocket() const override { return ws_ != nullptr; }

  void Write(std::span<const std::uint8_t> frame) override {
    if (done_) {
      return;
    }
    if (ws_) {
      ws_->Send(frame);  // one binary message; waits inside the filter until the upgrade
      TakeWebSocketOutput();
    } else {
      Emit(frame);
    }
    PostFlush();
  }

  // Bytes to the client: through TLS when it is on.
  void Emit(std::span<const std::uint8_t> bytes) {
    if (tls_) {
      (void)tls_->Send(bytes);  // waits inside the filter until the handshake is done
      tls_->TakeOutput(&out_);
    } else {
      out_.insert(out_.end(), bytes.begin(), bytes.end());
    }
  }
  void TakeWebSocketOutput() {
    if (ws_->has_output()) {
      std::vector<std::uint8_t> bytes;
      ws_->TakeOutput(&bytes);
      Emit(bytes);
    }
  }

  void PostFlush() {
    if (!flush_posted_ && !waiting_) {
      flush_posted_ = true;
      asio::post(t_.io, [self = shared_from_this()] {
        self->flush_posted_ = false;
        if (!self->done_) {
          self->Flush();
        }
      });
    }
  }

  std::size_t queued_bytes() const override { return out_.size() - out_pos_; }

  void Close(bool flush) override {
    if (done_) {
      return;
    }
    done_ = true;
    if (flush && ws_ != nullptr) {
      ws_->Close(1000);  // the close frame, or, mid-upgrade, Linger answers the upgrade first
      TakeWebSocketOutput();
    }
    if (flush && tls_ != nullptr) {
      CloseTls();  // close_notify, or, mid-handshake, Linger finishes the handshake first
    }
    if (flush && WriteWhatFits() && queued_bytes() == 0) {
      Linger();
      return;
    }
    Abort();
    t_.Forget(this);
  }

  // TLS: once the handshake is done, what waited for it goes out, then close_notify.
  void CloseTls() {
    if (!tls_closed_ && tls_->Shutdown()) {
      tls_closed_ = true;
    }
    tls_->TakeOutput(&out_);
  }

  // Everything (the Bye last) is in the kernel's send buffer: send FIN, then read and discard
  // until the client closes too (or 2 s pass), so unread input does not turn the close into a
  // reset that could destroy the Bye in flight.
  // A TLS connection closed mid-handshake (a refusal at accept) goes on with the handshake here,
  // so its Refuse is sent encrypted; the FIN follows close_notify.
  void Linger() {
    if (HandshakesAnswered()) {
      ::shutdown(fd_, SHUT_WR);
    }
    lingering_ = true;
    linger_.expires_after(std::chrono::seconds(2));
    linger_.async_wait([self = shared_from_this()](boost::system::error_code) { self->Finish(); });
    // What the socket holds already brings no new edge: read it (later: this may run inside a
    // read, whose bytes are still in use).
    asio::post(t_.io, [self = shared_from_this()] { self->Readable(); });
  }
  // Nothing waits for a handshake to be answered: close_notify is queued (TLS), the upgrade was
  // answered (WebSocket).
  bool HandshakesAnswered() const {
    return (tls_ == nullptr || tls_closed_) && (ws_ == nullptr || ws_->answered());
  }
  // What a lingering connection reads: the handshakes' last steps, or nothing to keep.
  void OnDrain(std::size_t n) {
    if (!HandshakesAnswered()) {  // the handshakes go on; their output goes out
      std::span<const std::uint8_t> bytes(in_.data(), n);
      std::vector<std::uint8_t> plain;
      if (tls_ != nullptr && !tls_closed_) {
        if (!tls_->Receive(bytes, &plain).ok()) {
          Finish();
          return;
        }
        bytes = plain;
      }
      if (ws_ != nullptr && !ws_->answered()) {
        std::vector<std::uint8_t> ignored;
        (void)ws_->Receive(bytes, &ignored);  // the upgrade, then what waited for it
        TakeWebSocketOutput();
      }
      if (tls_ != nullptr) {
        CloseTls();
      }
      if (!WriteWhatFits()) {
        Finish();
        return;
      }
      if (HandshakesAnswered() && queued_bytes() == 0) {
        ::shutdown(fd_, SHUT_WR);
      }
    }
  }
  void Finish() {
    if (finished_) {
      return;
    }
    finished_ = true;
    linger_.cancel();
    Abort();
    t_.Forget(this);
  }

  // The transport goes away: close now, and no pending handler may reach it afterwards.
  void Discard() {
    finished_ = true;
    linger_.cancel();
    Abort();
  }

  // Closes the socket without a word to the Network (closing it leaves the epoll set too).
  void Abort() {
    done_ = true;
    if (fd_ >= 0) {
      ::shutdown(fd_, SHUT_RDWR);
      ::close(fd_);
      fd_ = -1;
    }
  }

 private:
  // Reads until a read comes back short (the socket is empty: the next bytes bring a new edge),
  // the socket would block, or the link ends; after kReadsPerTurn full reads the others have
  // their turn and this goes on later.
  void Readable() {
    for (int reads = 0; reads < kReadsPerTurn; ++reads) {
      if (finished_ || fd_ < 0 || (done_ && !lingering_)) {
        return;
      }
      const ssize_t n = ::recv(fd_, in_.data(), in_.size(), MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return;
      }
      if (lingering_) {
        if (n <= 0) {
          Finish();  // the client closed too, or the socket failed
        } else {
          OnDrain(static_cast<std::size_t>(n));
        }
      } else if (n <= 0) {
        Lost(n == 0 ? ExitReason::kClientClosed : ExitReason::kTransportError);
        return;
      } else {
        OnRead(static_cast<std::size_t>(n));
      }
      if (static_cast<std::size_t>(n) < in_.size()) {
        return;
      }
    }
    asio::post(t_.io, [self = shared_from_this()] { self->Readable(); });
  }

  void OnRead(std::size_t n) {
    std::span<const std::uint8_t> bytes(in_.data(), n);
    if (tls_ != nullptr) {
      plain_.clear();
      const Status s = tls_->Receive(bytes, &plain_);
      if (tls_->has_output()) {  // the handshake's answers
        tls_->TakeOutput(&out_);
        PostFlush();
      }
      if (!s.ok()) {
        t_.net.Fail(*this, s.message());
        return;
      }
      bytes = plain_;
    }
    if (ws_ != nullptr) {
      frames_.clear();
      const Status s = ws_->Receive(bytes, &frames_);
      TakeWebSocketOutput();
      PostFlush();
      if (!s.ok()) {  // its last words (an HTTP answer, a close frame) go out first
        t_.net.Fail(*this, s.message(), /*flush=*/true);
        return;
      }
      bytes = frames_;
    }
    if (!bytes.empty()) {
      t_.net.Receive(*this, bytes);
    }
    if (ws_ != nullptr && ws_->peer_closed() && !done_) {
      // The client's close frame, answered: as an EOF would, the link ends (it may resume).
      done_ = true;
      t_.net.Detach(*this, ExitReason::kClientClosed);
      if (WriteWhatFits() && queued_bytes() == 0) {
        Linger();
      } else {
        Abort();
        t_.Forget(this);
      }
      return;
    }
  }

  // The connection failed or the client closed it: tell the Network, then let go.
  void Lost(ExitReason reason) {
    done_ = true;
    t_.net.Detach(*this, reason);
    Abort();
    t_.Forget(this);
  }

  // Writes until the socket would block. False on a socket error.
  bool WriteWhatFits() {
    while (out_pos_ < out_.size()) {
      if (fd_ < 0) {
        return false;
      }
      const ssize_t n =
          ::send(fd_, out_.data() + out_pos_, out_.size() - out_pos_, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      }
      if (n < 0) {
        return false;
      }
      out_pos_ += static_cast<std::size_t>(n);
    }
    if (out_pos_ == out_.size()) {
      out_.clear();
      out_pos_ = 0;
    } else if (out_pos_ > 64 * 1024 && out_pos_ * 2 > out_.size()) {
      out_.erase(out_.begin(), out_.begin() + static_cast<std::ptrdiff_t>(out_pos_));
      out_pos_ = 0;
    }
    return true;
  }

  void Flush() {
    if (!WriteWhatFits()) {
      Lost(ExitReason::kTransportError);
      return;
    }
    if (queued_bytes() > 0) {
      waiting_ = true;  // the socket's next EPOLLOUT edge flushes again
    }
  }

  TcpTransport::Impl& t_;
  int fd_;                                     // -1 once closed
  std::unique_ptr<wire::TlsFilter> tls_;       // null: plain TCP
  std::vector<std::uint8_t> plain_;            // what the last read decrypted to
  std::unique_ptr<wire::WebSocketFilter> ws_;  // null: frames go on the stream as they are
  std::vector<std::uint8_t> frames_;           // what the last read's messages carried
  bool tls_closed_ = false;                    // close_notify is queued
  asio::steady_timer linger_;
  std::vector<std::uint8_t> in_;
  bool finished_ = false;
  bool lingering_ = false;  // closed to the Network; reading only to close cleanly
  std::vector<std::uint8_t> out_;
  std::size_t out_pos_ = 0;
  bool flush_posted_ = false;
  bool waiting_ = false;
  bool done_ = false;
};

void TcpTransport::Impl::Forget(TcpPeer* peer) {
  asio::post(io, [weak = weak_from_this(), peer] {
    if (auto self = weak.lock()) {
      self->peers.erase(peer);
    }
  });
}

void TcpTransport::Impl::Accept() {
  acceptor.async_accept([weak = weak_from_this()](error_code ec, tcp::socket socket) {
    auto self = weak.lock();
    if (self == nullptr || !self->accepting) {
      return;
    }
    if (ec == asio::error::no_descriptors || ec.value() == ENFILE) {
      self->OutOfDescriptors(ec);
      return;
    }
    if (ec) {  // anything else: say so (at most every 10 s), wait a moment, go on accepting
      if (const TimePoint now = RealNow();
          now - self->last_failure_log > std::chrono::seconds(10)) {
        self->last_failure_log = now;
        kNetLog.Warn("accept failed: {}; retrying every 100 ms", ec.message());
      }
      self->AcceptLater();
      return;
    }
    error_code ignored;
    const auto remote = socket.remote_endpoint(ignored);
    const std::string address = ignored ? std::string("?") : remote.address().to_string();
    if (self->peers.size() >= self->capacity) {  // the reserve is the server's: refuse now
      rlimit limit{};
      ::getrlimit(RLIMIT_NOFILE, &limit);
      self->RefuseAndClose(
          socket.release(ignored), address,
          fmt::format("{} connections hold every descriptor but the {} kept for the server's own "
                      "files (RLIMIT_NOFILE {}, net.descriptor_reserve): raise the limit "
                      "(ulimit -n, LimitNOFILE=)",
                      self->peers.size(), self->reserve,
                      static_cast<unsigned long long>(limit.rlim_cur)));
      self->Accept();
      return;
    }
    socket.set_option(tcp::no_delay(true), ignored);
    socket.non_blocking(true, ignored);
    const int fd = socket.release(ignored);
    if (ignored) {
      self->Accept();
      return;
    }
    auto peer = std::make_shared<TcpPeer>(*self, fd, address);
    if (!peer->Watch()) {
      kNetLog.Warn("cannot watch a connection from {}: {}; closed it", address,
                   std::strerror(errno));
      peer->Abort();
      self->Accept();
      return;
    }
    self->peers.emplace(peer.get(), peer);
    if (!self->net.Attach(*peer)) {
      peer->Abort();
      self->peers.erase(peer.get());
    }
    self->Accept();
  });
}

bool TcpTransport::Impl::OpenReadiness() {
  const int fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  readiness.assign(fd);
  WatchReadiness();
  return true;
}

void TcpTransport::Impl::WatchReadiness() {
  readiness.async_wait(asio::posix::stream_descriptor::wait_read,
                       [weak = weak_from_this()](error_code ec) {
                         if (auto self = weak.lock(); self != nullptr && !ec) {
                           self->Harvest();
                         }
                       });
}

void TcpTransport::Impl::Harvest() {
  const std::shared_ptr<Impl> keep = shared_from_this();  // a handler may end the transport
  epoll_event events[kEventsPerHarvest];
  const int n = ::epoll_wait(readiness.native_handle(), events, kEventsPerHarvest, 0);
  for (int i = 0; i < n; ++i) {
    // A connection closed by an earlier one's events is still here (Forget erases it later),
    // and knows it is closed.
    auto it = peers.find(static_cast<TcpPeer*>(events[i].data.ptr));
    if (it != peers.end()) {
      const std::shared_ptr<TcpPeer> peer = it->second;
      peer->OnEvents(events[i].events);
    }
  }
  if (n == kEventsPerHarvest) {  // more may be ready: take them after what else waits
    asio::post(io, [weak = weak_from_this()] {
      if (auto self = weak.lock()) {
        self->Harvest();
      }
    });
    return;
  }
  WatchReadiness();
}

void TcpTransport::Impl::AcceptLater() {
  retry.expires_after(std::chrono::milliseconds(100));
  retry.async_wait([weak = weak_from_this()](error_code e) {
    if (auto s = weak.lock(); s != nullptr && !e && s->accepting) {
      s->Accept();
    }
  });
}

void TcpTransport::Impl::OutOfDescriptors(const error_code& ec) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  const std::string why = fmt::format(
      "accept failed: {}; the server may hold {} descriptors (RLIMIT_NOFILE), so new connections "
      "are "
      "refused until some close: raise the limit (ulimit -n, LimitNOFILE=) or lower "
      "net.max_sessions",
      ec.message(), static_cast<unsigned long long>(limit.rlim_cur));
  CloseSpare();
  sockaddr_storage from{};
  socklen_t from_len = sizeof(from);
  const int fd = ::accept4(acceptor.native_handle(), reinterpret_cast<sockaddr*>(&from), &from_len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
  const int accept_errno = fd < 0 ? errno : 0;
  if (fd >= 0) {
    tcp::endpoint remote;
    std::memcpy(remote.data(), &from, std::min<std::size_t>(from_len, remote.capacity()));
    remote.resize(std::min<std::size_t>(from_len, remote.capacity()));
    RefuseAndClose(fd, remote.address().to_string(), why);
  }
  OpenSpare();
  if (spare >= 0 && (fd >= 0 || accept_errno == EAGAIN || accept_errno == EWOULDBLOCK)) {
    // Out of descriptors, accept fails whether or not a connection waits: wait for one to
    // arrive before trying again, so the loop never spins. Each is taken and refused in turn.
    acceptor.async_wait(tcp::acceptor::wait_read, [weak = weak_from_this()](error_code e) {
      if (auto s = weak.lock(); s != nullptr && !e && s->accepting) {
        s->Accept();
      }
    });
    return;
  }
  // No descriptor to spare (something else took it): wait, then try again.
  if (const TimePoint now = RealNow(); now - last_failure_log > std::chrono::seconds(10)) {
    last_failure_log = now;
    kNetLog.Warn("{}; no descriptor is left even to refuse them: retrying every 100 ms", why);
  }
  AcceptLater();
}

void TcpTransport::Impl::RefuseAndClose(int fd, const std::string& address,
                                        const std::string& why) {
  const std::vector<std::uint8_t> refuse = net.RefuseOverCapacity(address, why);
  if (websocket) {  // an HTTP answer a browser shows, before its request is even read
    static constexpr std::string_view kBusy =
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
        "Content-Length: 25\r\nConnection: close\r\n\r\nthe server is full: retry\n";
    if (tls == nullptr) {
      (void)::send(fd, kBusy.data(), kBusy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  } else if (tls == nullptr) {
    (void)::send(fd, refuse.data(), refuse.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

void TcpTransport::Impl::ComputeCapacity(std::size_t keep) {
  reserve = keep;
  rlimit limit{};
  if (keep == 0 || ::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return;
  }
  std::size_t open = 0;  // what the process holds now: its files, the acceptor, the spare
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++open;
  }
  const std::size_t used = (open > 0 ? open - 1 : 0) + keep;  // less the listing's own
  capacity = limit.rlim_cur > used ? static_cast<std::size_t>(limit.rlim_cur) - used : 0;
}

TcpTransport::TcpTransport(Network& network, asio::io_context& io,
                           std::shared_ptr<wire::TlsContext> tls,
                           std::optional<wire::WebSocketOptions> websocket)
    : impl_(std::make_shared<Impl>(network, io, std::move(tls), std::move(websocket))) {}

TcpTransport::~TcpTransport() {
  StopAccepting();
  for (auto& [raw, peer] : impl_->peers) {
    peer->Discard();
  }
  impl_->peers.clear();
}

Status TcpTransport::Listen(const std::string& address, std::uint16_t port, std::size_t reserve) {
  error_code ec;
  const auto ip = asio::ip::make_address(address, ec);
  if (ec) {
    return Status::InvalidArgument(fmt::format(
        "net.bind \"{}\" is not an IP address (use 127.0.0.1, 0.0.0.0 or ::)", address));
  }
  const tcp::endpoint endpoint(ip, port);
  tcp::acceptor& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) {
    a.set_option(tcp::acceptor::reuse_address(true), ec);
  }
  if (!ec) {
    a.bind(endpoint, ec);
  }
  if (!ec) {
    a.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    error_code ignored;
    a.close(ignored);
    return Status::IoError(
        fmt::format("cannot listen on {}:{}: {}; pick another net.port (0 "
                    "picks a free one) or stop what holds it",
                    address, port, ec.message()));
  }
  if (!impl_->readiness.is_open() && !impl_->OpenReadiness()) {
    const std::string why = std::strerror(errno);
    a.close(ec);
    return Status::IoError(fmt::format("cannot open an epoll set for the connections: {}", why));
  }
  impl_->accepting = true;
  a.native_non_blocking(true, ec);  // OutOfDescriptors accepts without Asio, and must not block
  impl_->OpenSpare();
  impl_->ComputeCapacity(reserve);
  impl_->Accept();
  if (impl_->websocket) {
    kNetLog.Info("WebSocket clients on {}://{}:{}/{}", impl_->tls != nullptr ? "wss" : "ws",
                 address, this->port(),
                 impl_->websocket->origins.empty()
                     ? std::string(" (any origin)")
                     : fmt::format(" (origins: {})", fmt::join(impl_->websocket->origins, ", ")));
  } else {
    kNetLog.Info("listening on {}:{}{}", address, this->port(),
                 impl_->tls != nullptr ? " (TLS 1.2 and 1.3)" : "");
  }
  if (impl_->tls == nullptr && !ip.is_loopback()) {
    kNetLog.Warn(
        "{} is not a loopback address and TLS is off: credentials and game traffic cross the "
        "network in the clear; give --tls-cert and --tls-key (net.tls_cert, net.tls_key)",
        address);
  }
  return Status();
}

std::uint16_t TcpTransport::port() const {
  error_code ec;
  const auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void TcpTransport::StopAccepting() {
  impl_->accepting = false;
  error_code ec;
  impl_->acceptor.close(ec);
  impl_->retry.cancel();
}

}  // namespace molt::kernel::net
