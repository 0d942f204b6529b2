// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/tcp_peer.h
//
// TcpPeer: one accepted TCP connection (plain, TLS, or a WebSocket over either): the Peer
// (peer.h) a TcpTransport hands its sink. It reads from the socket when the transport's epoll set
// says it changed, until a read comes back short (the socket is then empty, and the next bytes
// bring a new edge), passes the bytes through its TLS and WebSocket filters to the sink, and
// writes what is queued without ever blocking: frames queued during a handler go out in one write
// after it; a socket that cannot take more waits for its EPOLLOUT edge. Closing with a flush
// lingers: the queued frames (the Bye last), the handshakes' last answers, FIN, then reading
// until the client closes too (or 2 s), so unread input does not reset the connection.
//
// Included by transport.cc and tcp_peer.cc only (Asio stays out of the network's headers).
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_TCP_PEER_H_
#define MOLT_KERNEL_NET_TCP_PEER_H_

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernel/src/net/exit_reason.h"
#include "kernel/src/net/peer.h"
#include "kernel/src/wire/tls.h"
#include "kernel/src/wire/websocket.h"

namespace molt::kernel::net {

class PeerSink;
class TcpPeer;

// What a connection needs of the transport that accepted it.
class TcpPeerOwner {
 public:
  virtual boost::asio::io_context& io() = 0;
  // Where the connection reports (the network).
  virtual PeerSink& sink() = 0;
  // The transport's epoll set, which watches every connection's socket.
  virtual int readiness() = 0;
  // Drops the transport's reference to `peer` later: the caller may still be inside it.
  virtual void Forget(TcpPeer* peer) = 0;

 protected:
  ~TcpPeerOwner() = default;
};

class TcpPeer final : public Peer, public std::enable_shared_from_this<TcpPeer> {
 public:
  // Takes the socket's descriptor `fd`, taken from Asio; `tls` (may be null: plain TCP) speaks
  // TLS as the server; `websocket`: every connection is a WebSocket.
  TcpPeer(TcpPeerOwner& owner, int fd, std::string address, wire::TlsContext* tls,
          const std::optional<wire::WebSocketOptions>& websocket);

  // Joins the owner's epoll set, before the sink sees the connection (a refusal at accept
  // lingers, reading from it); bytes already waiting are reported at once. False (errno set) if
  // it cannot.
  bool Watch();
  // The epoll set says the socket changed: writable again (a flush waits), or bytes (or the end)
  // to read.
  void OnEvents(std::uint32_t events);
  // The transport goes away: close now, and no pending handler may reach it afterwards.
  void Discard();
  // Closes the socket without a word to the sink (closing it leaves the epoll set too).
  void Abort();

  // --- Peer ---
  bool websocket() const override { return ws_ != nullptr; }
  std::vector<std::uint8_t> ExportKey(const std::string& label, std::size_t size) const override {
    return tls_ != nullptr ? tls_->ExportKey(label, size) : std::vector<std::uint8_t>();
  }
  void Write(std::span<const std::uint8_t> frame) override;
  std::size_t queued_bytes() const override { return out_.size() - out_pos_; }
  void Close(bool flush) override;

 private:
  // Bytes to the client: through TLS when it is on.
  void Emit(std::span<const std::uint8_t> bytes);
  void TakeWebSocketOutput();
  void PostFlush();
  // TLS: once the handshake is done, what waited for it goes out, then close_notify.
  void CloseTls();
  // Everything (the Bye last) is queued: FIN once the handshakes are answered, then read and
  // discard until the client closes too (or 2 s pass). A TLS connection closed mid-handshake (a
  // refusal at accept) goes on with the handshake here, so its Refuse is sent encrypted.
  void Linger();
  // Nothing waits for a handshake to be answered: close_notify is queued (TLS), the upgrade was
  // answered (WebSocket).
  bool HandshakesAnswered() const;
  // What a lingering connection read: the handshakes' last steps, or nothing to keep.
  void OnDrain(std::size_t n);
  void Finish();
  // Reads until a read comes back short, the socket would block, or the link ends; after a few
  // full reads the others have their turn and this goes on later.
  void Readable();
  void OnRead(std::size_t n);
  // The connection failed or the client closed it: tell the sink, then let go.
  void Lost(ExitReason reason);
  // Writes until the socket would block. False on a socket error.
  bool WriteWhatFits();
  void Flush();

  TcpPeerOwner& owner_;
  int fd_;                                     // -1 once closed
  std::unique_ptr<wire::TlsFilter> tls_;       // null: plain TCP
  std::vector<std::uint8_t> plain_;            // what the last read decrypted to
  std::unique_ptr<wire::WebSocketFilter> ws_;  // null: frames go on the stream as they are
  std::vector<std::uint8_t> frames_;           // what the last read's messages carried
  bool tls_closed_ = false;                    // close_notify is queued
  boost::asio::steady_timer linger_;
  std::vector<std::uint8_t> in_;
  bool finished_ = false;
  bool lingering_ = false;  // closed to the sink; reading only to close cleanly
  std::vector<std::uint8_t> out_;
  std::size_t out_pos_ = 0;
  bool flush_posted_ = false;
  bool waiting_ = false;  // for the socket's EPOLLOUT edge
  bool done_ = false;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_TCP_PEER_H_
