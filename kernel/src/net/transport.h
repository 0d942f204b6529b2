// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/transport.h
//
// TcpTransport: the network's TCP side on the kernel's io_context (and its WebSocket side: the
// same transport with a WebSocketFilter on every connection, under TLS when it is on). It accepts
// connections, each a Peer (peer.h), reports them and their bytes to a PeerSink (peer_sink.h; the
// Network is one), and writes queued frames without ever blocking the kernel thread: frames queued
// during a handler go out in one write after it; a socket that cannot take more waits for
// writability while the queue grows, and the sink cuts it off past net.max_outbound_bytes. It
// knows nothing of the network above the sink. Asio stays in transport.cc.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_TRANSPORT_H_
#define MOLT_KERNEL_NET_TRANSPORT_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "kernel/src/wire/websocket.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace molt::kernel::wire {
class TlsContext;
}  // namespace molt::kernel::wire

namespace molt::kernel::net {

class PeerSink;

class TcpTransport {
 public:
  // `tls`: every connection speaks TLS (server side) with it; null: plain TCP. `websocket`: every
  // connection is a WebSocket (the upgrade, then one wire frame per binary message).
  TcpTransport(PeerSink& sink, boost::asio::io_context& io, std::shared_ptr<wire::TlsContext> tls,
               std::optional<wire::WebSocketOptions> websocket = std::nullopt);
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;
  // Closes the listener and every connection.
  ~TcpTransport();

  // Binds `address:port` (port 0: any free port) and starts accepting. Connections past the
  // descriptor limit, less what is open now and `reserve`, are refused (Refuse ServerFull);
  // `reserve` 0: none are, until accept fails for lack of descriptors.
  Status Listen(const std::string& address, std::uint16_t port, std::size_t reserve);
  std::uint16_t port() const;
  void StopAccepting();

  struct Impl;  // transport.cc; shared with the pending Asio handlers, which hold it weakly

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_TRANSPORT_H_
