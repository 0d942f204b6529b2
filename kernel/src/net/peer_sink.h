// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/peer_sink.h
//
// PeerSink: what a transport tells the network about its connections, and all it may call. The
// Network implements it (network.h); a transport holds a PeerSink& and includes nothing of the
// network, the way Envoy's connections know only the ReadFilter interface. One sink serves every
// transport: TCP and WebSocket today, each with a Peer per connection.
//
// A second kind of transport attaches the same way: a datagram transport's Peer for a session's
// datagram link is attached, and its first datagram (a Hello naming the session, with the token
// its Welcome gave) is received like any other bytes; the front door then binds it to that
// session beside its reliable link. Nothing here assumes a stream.
//
//   if (!sink.Attach(peer)) peer.Close(false);     // shut down: close without a word
//   sink.Receive(peer, bytes);                      // as they arrive, any cut
//   sink.Detach(peer, ExitReason::kClientClosed);   // EOF; peer is not used afterwards
//
// Thread safety: REQUIRES the kernel thread, for every call.
#ifndef MOLT_KERNEL_NET_PEER_SINK_H_
#define MOLT_KERNEL_NET_PEER_SINK_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/net/exit_reason.h"
#include "kernel/src/net/peer.h"

namespace molt::kernel::net {

class PeerSink {
 public:
  virtual ~PeerSink() = default;

  // A new connection. False: the network is shut down; close it without a word. (Refusals go
  // through the connection itself: a Refuse frame, then its Close.)
  virtual bool Attach(Peer& peer) = 0;
  // Bytes arrived on `peer`, cut anywhere: frames are parsed and passed through the pipeline.
  virtual void Receive(Peer& peer, std::span<const std::uint8_t> bytes) = 0;
  // The transport closed on its own (EOF, error): `peer` is not used afterwards. Its session
  // waits for its client to resume it.
  virtual void Detach(Peer& peer, ExitReason reason) = 0;
  // The transport failed under `peer` (a TLS error, a broken WebSocket): the connection ends
  // (TransportError) with `text`, logged; `flush`: after what the transport queued itself.
  virtual void Fail(Peer& peer, std::string_view text, bool flush) = 0;
  // The transport accepted a connection it cannot keep (no descriptor to spare): counted, logged
  // (rate-limited) with `why`; returns the Refuse frame (ServerFull, a retry-after) to send it.
  virtual std::vector<std::uint8_t> RefuseOverCapacity(const std::string& address,
                                                       std::string_view why) = 0;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_PEER_SINK_H_
