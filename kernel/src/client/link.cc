// SPDX-License-Identifier: Apache-2.0
// Link: the client's connection to a server on an io_context the owner steps: connecting, TLS and
// WebSocket, reading frames, writing without blocking (link.h).
#include "kernel/src/client/link.h"

#include <molt/client.h>
#include <poll.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "kernel/src/wire/tls.h"
#include "kernel/src/wire/websocket.h"

namespace molt::kernel::client {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct Link::Io {
  asio::io_context io;
  tcp::resolver resolver{io};
  tcp::socket socket{io};
};

Link::Link(LinkOptions options, SendQueue& queue, LinkSink& sink)
    : options_(std::move(options)), queue_(queue), sink_(sink), io_(std::make_unique<Io>()) {}

Link::~Link() = default;

Status Link::Prepare() {
  if (options_.tls && tls_context_ == nullptr) {
    MOLT_ASSIGN_OR_RETURN(std::shared_ptr<wire::TlsContext> context,
                          wire::TlsContext::Client(options_.tls_ca_file));
    tls_context_ = std::move(context);
  }
  return Status::Ok();
}

std::uint64_t Link::Begin() { return ++generation_; }

void Link::Connect(const std::string& host, std::uint16_t port) {
  const std::uint64_t link = generation_;
  host_ = host;
  target_ = host + ":" + std::to_string(port);
  auto connected = [this, link](boost::system::error_code ec) {
    if (link != generation_) {
      return;
    }
    if (ec) {
      return sink_.OnLinkLost("cannot connect to " + target_ + ": " + ec.message());
    }
    OnConnected();
  };
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (!ec) {  // a numeric address: nothing to resolve
    io_->socket.async_connect(tcp::endpoint(address, port), connected);
    return;
  }
  resolving_ = true;
  io_->resolver.async_resolve(
      host, std::to_string(port),
      [this, link, connected](boost::system::error_code e, tcp::resolver::results_type r) {
        if (link != generation_) {
          return;
        }
        resolving_ = false;
        if (e) {
          return sink_.OnLinkLost("cannot resolve " + target_ + ": " + e.message());
        }
        asio::async_connect(
            io_->socket, r,
            [connected](boost::system::error_code e2, const tcp::endpoint&) { connected(e2); });
      });
}

void Link::OnConnected() {
  boost::system::error_code ignored;
  io_->socket.set_option(tcp::no_delay(true), ignored);
  io_->socket.non_blocking(true, ignored);  // Flush writes without blocking
  linked_ = true;
  writing_.clear();
  written_ = 0;
  // The TLS handshake first, then the WebSocket upgrade: the Hello waits inside the filters.
  if (tls_context_ != nullptr) {
    tls_ = std::make_unique<wire::TlsFilter>(
        *tls_context_, wire::TlsFilter::kClient,
        options_.tls_server_name.empty() ? host_ : options_.tls_server_name);
    if (Status s = tls_->Begin(); !s.ok()) {
      return sink_.OnLinkRefused(s.message());
    }
  }
  if (options_.websocket) {
    wire::WebSocketOptions o;
    o.role = wire::WebSocketOptions::kClient;
    o.host = target_;
    ws_ = std::make_unique<wire::WebSocketFilter>(std::move(o));
  }
  sink_.OnLinked();  // the Hello goes first; what the app queued waits for the Welcome
  Flush();
  Read();
}

void Link::Read() {
  const std::uint64_t link = generation_;
  io_->socket.async_read_some(
      asio::buffer(in_), [this, link](boost::system::error_code ec, std::size_t n) {
        if (link != generation_) {
          return;
        }
        if (ec) {
          if (ec == asio::error::eof && ws_ != nullptr && !ws_->answered()) {
            return sink_.OnLinkLost(
                "the server closed the connection without answering the WebSocket "
                "upgrade: is " +
                target_ + " a WebSocket port (moltd --ws)?" +
                (tls_ == nullptr ? " One under TLS (wss://) needs MOLT_CLIENT_TLS." : ""));
          }
          return sink_.OnLinkLost(ec == asio::error::eof ? "the server closed the connection"
                                                         : "connection lost: " + ec.message());
        }
        OnRead(link, n);
      });
}

void Link::OnRead(std::uint64_t link, std::size_t n) {
  sink_.OnReceived();
  // A refused certificate, a refused upgrade: neither gets better by retrying.
  std::span<const std::uint8_t> bytes(in_.data(), n);
  if (tls_ != nullptr) {  // the plaintext goes to the WebSocket filter, or is the frames
    plain_.clear();
    if (const Status s = tls_->Receive(bytes, ws_ != nullptr ? &plain_ : &rx_); !s.ok()) {
      return sink_.OnLinkRefused(s.message());
    }
    bytes = plain_;
  }
  if (ws_ != nullptr) {
    if (const Status s = ws_->Receive(bytes, &rx_); !s.ok()) {
      TakeFilterOutput();  // a close frame saying why, best effort
      Flush();
      return sink_.OnLinkRefused(s.message());
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
  if (link == generation_ && ws_ != nullptr && ws_->peer_closed()) {
    return sink_.OnLinkLost("the server closed the WebSocket (" + ws_->peer_close() + ")");
  }
  if (link == generation_) {
    Read();
  }
}

void Link::Parse(std::uint64_t link) {
  std::size_t at = 0;
  while (link == generation_ && rx_.size() - at >= 4) {
    std::uint32_t size = 0;
    std::memcpy(&size, rx_.data() + at, 4);
    if (size == 0 || size > kMaxInboundFrame) {
      return sink_.OnLinkRefused("the server sent a frame of " + std::to_string(size) + " bytes");
    }
    if (rx_.size() - at < 4 + std::size_t{size}) {
      break;
    }
    sink_.OnFrame(std::span<const std::uint8_t>(rx_.data() + at, 4 + std::size_t{size}));
    at += 4 + std::size_t{size};
  }
  if (link == generation_) {
    rx_.erase(rx_.begin(), rx_.begin() + static_cast<std::ptrdiff_t>(at));
  }
}

void Link::Drop() {
  ++generation_;  // completions of the old link are ignored from here on
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

void Link::SayBye(std::span<const std::uint8_t> bye) {
  if (!linked_ || written_ != writing_.size()) {
    return;
  }
  Send(bye);  // then a close frame and close_notify: the last bytes of the link
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

void Link::FinishWrites(Duration budget) {
  // Plain non-blocking writes and polls: no Asio handler runs, so no callback of the app does.
  const TimePoint deadline = RealNow() + budget;
  while (linked_ && sink_.Welcomed() && write_error_.empty() && RealNow() < deadline) {
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

void Link::Restart() { io_->io.restart(); }

std::size_t Link::PollOne() { return io_->io.poll_one(); }

std::string Link::TakeWriteError() { return std::exchange(write_error_, {}); }

int Link::socket() const {
  return io_->socket.is_open() ? static_cast<int>(io_->socket.native_handle()) : -1;
}

std::int32_t Link::socket_events() const {
  if (socket() < 0) {
    return 0;
  }
  if (!linked_) {
    return MOLT_CLIENT_WAIT_WRITE;  // connecting: writable once connected
  }
  return MOLT_CLIENT_WAIT_READ | (write_waiting_ ? MOLT_CLIENT_WAIT_WRITE : 0);
}

Link::WriteState Link::WriteReady() {
  for (;;) {
    if (written_ == writing_.size()) {
      writing_.clear();
      written_ = 0;
      if (!sink_.Welcomed()) {
        return WriteState::kDone;
      }
      if (tls_ != nullptr || ws_ != nullptr) {
        plain_.clear();
        if (queue_.Release(RealNow(), &plain_) == 0) {
          return WriteState::kDone;
        }
        Send(plain_);
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
      // Reported from the owner's next step: a send never runs the app's callbacks.
      write_error_ = "connection lost: " + ec.message();
      return WriteState::kFailed;
    }
    written_ += n;
  }
}

void Link::Send(std::span<const std::uint8_t> frames) {
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

void Link::TakeFilterOutput() {
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

void Link::Flush() {
  if (!linked_ || write_waiting_ || !write_error_.empty() || WriteReady() != WriteState::kBlocked) {
    return;
  }
  write_waiting_ = true;
  const std::uint64_t link = generation_;
  io_->socket.async_wait(tcp::socket::wait_write, [this, link](boost::system::error_code e) {
    if (link != generation_) {
      return;
    }
    write_waiting_ = false;
    if (e) {
      return sink_.OnLinkLost("connection lost: " + e.message());
    }
    Flush();
  });
}

std::vector<std::uint8_t> Link::ExportKey(const std::string& label, std::size_t size) const {
  return tls_ != nullptr ? tls_->ExportKey(label, size) : std::vector<std::uint8_t>();
}

}  // namespace molt::kernel::client
