// SPDX-License-Identifier: Apache-2.0
// TcpPeer (tcp_peer.h): one connection's reads until a short read, its non-blocking writes, and
// its lingering close.
#include "kernel/src/net/tcp_peer.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <chrono>

#include "kernel/src/net/peer_sink.h"

namespace molt::kernel::net {
namespace {

namespace asio = boost::asio;

constexpr std::size_t kReadBuffer = 16 * 1024;
// Full reads one connection gets before the others ready with it have their turn.
constexpr int kReadsPerTurn = 4;

}  // namespace

TcpPeer::TcpPeer(TcpPeerOwner& owner, int fd, std::string address, wire::TlsContext* tls,
                 const std::optional<wire::WebSocketOptions>& websocket)
    : Peer(std::move(address)), owner_(owner), fd_(fd), linger_(owner.io()), in_(kReadBuffer) {
  if (tls != nullptr) {
    tls_ = std::make_unique<wire::TlsFilter>(*tls, wire::TlsFilter::kServer, "");
  }
  if (websocket) {
    ws_ = std::make_unique<wire::WebSocketFilter>(*websocket);
  }
}

bool TcpPeer::Watch() {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.ptr = this;
  return ::epoll_ctl(owner_.readiness(), EPOLL_CTL_ADD, fd_, &ev) == 0;
}

void TcpPeer::OnEvents(std::uint32_t events) {
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

void TcpPeer::Write(std::span<const std::uint8_t> frame) {
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

void TcpPeer::Emit(std::span<const std::uint8_t> bytes) {
  if (tls_) {
    (void)tls_->Send(bytes);  // waits inside the filter until the handshake is done
    tls_->TakeOutput(&out_);
  } else {
    out_.insert(out_.end(), bytes.begin(), bytes.end());
  }
}

void TcpPeer::TakeWebSocketOutput() {
  if (ws_->has_output()) {
    std::vector<std::uint8_t> bytes;
    ws_->TakeOutput(&bytes);
    Emit(bytes);
  }
}

void TcpPeer::PostFlush() {
  if (!flush_posted_ && !waiting_) {
    flush_posted_ = true;
    asio::post(owner_.io(), [self = shared_from_this()] {
      self->flush_posted_ = false;
      if (!self->done_) {
        self->Flush();
      }
    });
  }
}

void TcpPeer::Close(bool flush) {
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
  owner_.Forget(this);
}

void TcpPeer::CloseTls() {
  if (!tls_closed_ && tls_->Shutdown()) {
    tls_closed_ = true;
  }
  tls_->TakeOutput(&out_);
}

void TcpPeer::Linger() {
  if (HandshakesAnswered()) {
    ::shutdown(fd_, SHUT_WR);
  }
  lingering_ = true;
  linger_.expires_after(std::chrono::seconds(2));
  linger_.async_wait([self = shared_from_this()](boost::system::error_code) { self->Finish(); });
  // What the socket holds already brings no new edge: read it (later: this may run inside a
  // read, whose bytes are still in use).
  asio::post(owner_.io(), [self = shared_from_this()] { self->Readable(); });
}

bool TcpPeer::HandshakesAnswered() const {
  return (tls_ == nullptr || tls_closed_) && (ws_ == nullptr || ws_->answered());
}

void TcpPeer::OnDrain(std::size_t n) {
  if (HandshakesAnswered()) {
    return;  // nothing to keep
  }
  // The handshakes go on; their output goes out.
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

void TcpPeer::Finish() {
  if (finished_) {
    return;
  }
  finished_ = true;
  linger_.cancel();
  Abort();
  owner_.Forget(this);
}

void TcpPeer::Discard() {
  finished_ = true;
  linger_.cancel();
  Abort();
}

void TcpPeer::Abort() {
  done_ = true;
  if (fd_ >= 0) {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    fd_ = -1;
  }
}

void TcpPeer::Readable() {
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
  asio::post(owner_.io(), [self = shared_from_this()] { self->Readable(); });
}

void TcpPeer::OnRead(std::size_t n) {
  PeerSink& sink = owner_.sink();
  std::span<const std::uint8_t> bytes(in_.data(), n);
  if (tls_ != nullptr) {
    plain_.clear();
    const Status s = tls_->Receive(bytes, &plain_);
    if (tls_->has_output()) {  // the handshake's answers
      tls_->TakeOutput(&out_);
      PostFlush();
    }
    if (!s.ok()) {
      sink.Fail(*this, s.message(), /*flush=*/false);
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
      sink.Fail(*this, s.message(), /*flush=*/true);
      return;
    }
    bytes = frames_;
  }
  if (!bytes.empty()) {
    sink.Receive(*this, bytes);
  }
  if (ws_ != nullptr && ws_->peer_closed() && !done_) {
    // The client's close frame, answered: as an EOF would, the link ends (it may resume).
    done_ = true;
    sink.Detach(*this, ExitReason::kClientClosed);
    if (WriteWhatFits() && queued_bytes() == 0) {
      Linger();
    } else {
      Abort();
      owner_.Forget(this);
    }
  }
}

void TcpPeer::Lost(ExitReason reason) {
  done_ = true;
  owner_.sink().Detach(*this, reason);
  Abort();
  owner_.Forget(this);
}

bool TcpPeer::WriteWhatFits() {
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

void TcpPeer::Flush() {
  if (!WriteWhatFits()) {
    Lost(ExitReason::kTransportError);
    return;
  }
  if (queued_bytes() > 0) {
    waiting_ = true;  // the socket's next EPOLLOUT edge flushes again
  }
}

}  // namespace molt::kernel::net
