// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/peer.h
//
// Peer: one connection as a transport presents it to the network — its address, and the three
// things the network asks of it: queue a frame, say how much is queued, close. A transport
// (transport.h's TCP and WebSocket, the test kit's in-process clients, the benchmarks' and the
// fuzzer's) derives from it and reports what happens on the connection through a PeerSink
// (peer_sink.h).
//
// The network keeps its own state of each connection (budgets, the frame being read, offences,
// the session it carries) in the peer's Link (link.h), which transports never look into: a
// transport includes this header and peer_sink.h, nothing of the network.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_PEER_H_
#define MOLT_KERNEL_NET_PEER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace molt::kernel::net {

struct Link;

class Peer {
 public:
  explicit Peer(std::string address);
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;
  virtual ~Peer();

  const std::string& address() const { return address_; }
  // The session this connection carries (0 until its Hello is welcomed), and whether the
  // network is done with it: both read from its Link.
  std::uint64_t session() const;
  bool closed() const;

  // Queues one encoded frame (length prefix included) without blocking.
  virtual void Write(std::span<const std::uint8_t> frame) = 0;
  // Bytes queued and not yet written (the slow-reader check).
  virtual std::size_t queued_bytes() const = 0;
  // The connection is a WebSocket (the counters say how many sessions use each transport).
  virtual bool websocket() const { return false; }
  // `size` bytes exported from the connection's TLS session under `label` (wire/tls.h), the
  // same the client derives; empty over plain TCP.
  virtual std::vector<std::uint8_t> ExportKey(const std::string& /*label*/,
                                              std::size_t /*size*/) const {
    return {};
  }
  // Closes the transport once the queued frames are written (or at once when `flush` is
  // false). Called once, by the network; the transport reports nothing more of it afterwards.
  virtual void Close(bool flush) = 0;

  // The network's state of this connection (link.h). Never read by a transport.
  Link& link() { return *link_; }
  const Link& link() const { return *link_; }

 private:
  std::string address_;
  std::unique_ptr<Link> link_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_PEER_H_
