// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/datagram_transport.h
//
// DatagramTransport: the network's UDP port (moltd --udp), on ENet (Debian's libenet 1.3.17: the
// peers' handshake, fragmentation, reliable and unreliable channels, round-trip times; what
// Godot's multiplayer runs on) driven from the kernel's io_context: its socket is watched for
// reads and serviced until empty, and a timer services ENet's own clock (retransmits, pings,
// timeouts) only while it has peers, so an idle server sleeps. ENet channel 0 carries what is
// unreliable (unsequenced: latest-wins is the network's own, per Molt channel), channel 1 what is
// reliable (predicted intents and their acks).
//
// It knows nothing of sessions: each ENet peer is a DatagramPeerId, and whatever arrives from one
// goes to the DatagramSink; the sink (DatagramLinks) opens the seal, binds a peer to its session
// and drops what does not authenticate. An ENet peer no datagram bound within `bind_seconds` is
// dropped, so a handshake flood holds no more than `max_peers` slots for long.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_DATAGRAM_TRANSPORT_H_
#define MOLT_KERNEL_NET_DATAGRAM_TRANSPORT_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace molt::kernel::net {

using DatagramPeerId = std::uint64_t;  // unique for the transport's lifetime; 0 is none

class DatagramSink {
 public:
  virtual ~DatagramSink() = default;
  // A datagram from `peer` (at `address`, "host:port").
  virtual void OnDatagram(DatagramPeerId peer, const std::string& address,
                          std::span<const std::uint8_t> bytes) = 0;
  // `peer` is gone (it disconnected, timed out, or was dropped): not used afterwards.
  virtual void OnDatagramPeerGone(DatagramPeerId peer) = 0;
  // The datagrams read together are all delivered; what their handling queued is sent next.
  virtual void OnDatagramsRead() {}
};

class DatagramTransport {
 public:
  enum class Channel : std::uint8_t { kUnreliable = 0, kReliable = 1 };

  DatagramTransport(DatagramSink& sink, boost::asio::io_context& io);
  DatagramTransport(const DatagramTransport&) = delete;
  DatagramTransport& operator=(const DatagramTransport&) = delete;
  // Drops every peer and closes the socket.
  ~DatagramTransport();

  // Binds `address:port` (IPv4; port 0: any free port) for at most `max_peers` ENet peers.
  Status Listen(const std::string& address, std::uint16_t port, std::size_t max_peers);
  std::uint16_t port() const;
  // The peers it serves at once (Listen's max_peers, at most 4095); 0 before Listen.
  std::size_t max_peers() const;
  // Queues `bytes` to `peer` on `channel`; false when the peer is gone. Sent at the end of the
  // current loop turn.
  bool Send(DatagramPeerId peer, std::span<const std::uint8_t> bytes, Channel channel);
  // Marks `peer` as bound (DatagramLinks took a datagram of it): it is not dropped as unbound.
  void Bound(DatagramPeerId peer);
  // Drops `peer` at once (no ENet goodbye).
  void Drop(DatagramPeerId peer);
  // ENet peers connected now (bound or not).
  std::size_t peers() const;

  struct Counts {
    std::uint64_t received = 0;  // UDP datagrams read from the socket (not empty, not truncated)
    // Of them, those no ENet peer of ours can take, which ENet ignores: too short for its header,
    // or naming a peer that is not connected from that address (garbage, a spoofed source, a
    // datagram of a peer dropped since). A handshake names no peer and is not counted here.
    std::uint64_t stray = 0;
    std::uint64_t unbound_dropped = 0;  // ENet peers no datagram bound in time
  };
  Counts counts() const;

  struct Impl;  // datagram_transport.cc; ENet and Asio stay there

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_DATAGRAM_TRANSPORT_H_
