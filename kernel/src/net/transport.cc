// SPDX-License-Identifier: Apache-2.0
// TcpTransport: an Asio acceptor, and connections read and written through an epoll set of the
// transport's own (one descriptor in Asio's loop). Reads go to the PeerSink; writes are
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
#include "kernel/src/net/peer_sink.h"
#include "kernel/src/net/tcp_peer.h"
#include "kernel/src/wire/tls.h"
#include "kernel/src/wire/websocket.h"

namespace molt::kernel::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

// Readiness events taken from the epoll set at once.
constexpr int kEventsPerHarvest = 64;

}  // namespace

struct TcpTransport::Impl final : TcpPeerOwner, std::enable_shared_from_this<TcpTransport::Impl> {
  Impl(PeerSink& n, asio::io_context& i, std::shared_ptr<wire::TlsContext> t,
       std::optional<wire::WebSocketOptions> w)
      : net(n),
        io_context(i),
        tls(std::move(t)),
        websocket(std::move(w)),
        acceptor(i),
        retry(i),
        readiness_set(i) {}
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
  // --- TcpPeerOwner ---
  asio::io_context& io() override { return io_context; }
  PeerSink& sink() override { return net; }
  int readiness() override { return readiness_set.native_handle(); }
  void Forget(TcpPeer* peer) override;

  PeerSink& net;  // the network: what the connections report to
  asio::io_context& io_context;
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
  asio::posix::stream_descriptor readiness_set;
};

void TcpTransport::Impl::Forget(TcpPeer* peer) {
  asio::post(io_context, [weak = weak_from_this(), peer] {
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
    auto peer = std::make_shared<TcpPeer>(*self, fd, address, self->tls.get(), self->websocket);
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
  readiness_set.assign(fd);
  WatchReadiness();
  return true;
}

void TcpTransport::Impl::WatchReadiness() {
  readiness_set.async_wait(asio::posix::stream_descriptor::wait_read,
                           [weak = weak_from_this()](error_code ec) {
                             if (auto self = weak.lock(); self != nullptr && !ec) {
                               self->Harvest();
                             }
                           });
}

void TcpTransport::Impl::Harvest() {
  const std::shared_ptr<Impl> keep = shared_from_this();  // a handler may end the transport
  epoll_event events[kEventsPerHarvest];
  const int n = ::epoll_wait(readiness_set.native_handle(), events, kEventsPerHarvest, 0);
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
    asio::post(io_context, [weak = weak_from_this()] {
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

TcpTransport::TcpTransport(PeerSink& network, asio::io_context& io,
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
  if (!impl_->readiness_set.is_open() && !impl_->OpenReadiness()) {
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
