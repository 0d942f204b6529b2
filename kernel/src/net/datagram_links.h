// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/datagram_links.h
//
// DatagramLinks: which session each datagram link serves (the network's part; the transport,
// datagram_transport.h, knows only ENet peers). Each Welcome offers its session a fresh key
// (Offer); a datagram is looked up by the session its header names and opened with that
// session's seal (wire/datagram_seal.h): one that does not open changes nothing, counted by why.
// One that opens binds the ENet peer it came from to the session, or moves the session to it (a
// NAT rebinding, a new ENet connection): only an authenticated datagram moves a session. Its frame
// then goes through the inbound pipeline as if it came over the session's reliable link (the same
// budgets), which must be attached: a session whose link is lost takes no datagram.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_DATAGRAM_LINKS_H_
#define MOLT_KERNEL_NET_DATAGRAM_LINKS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/net/datagram_transport.h"
#include "kernel/src/wire/datagram_seal.h"

namespace molt::kernel::net {

class Peer;
class Sessions;

// Why a datagram was refused (none of them changes anything: no binding moves, no window moves).
enum class DatagramRefusal : std::uint8_t {
  kNotSealed,        // too short for a header and a tag, or another first byte
  kUnknownSession,   // names a session with no datagram key (none, ended, or not offered one)
  kReplayed,         // a counter the session took already, older than its window, or 0
  kUnauthenticated,  // does not open: a wrong key, a changed byte, a truncation, reflected back
};
inline constexpr std::size_t kDatagramRefusalCount = 4;
// "not_sealed", "unknown_session", "replayed", "unauthenticated": the stats' and /metrics' names.
const char* DatagramRefusalName(DatagramRefusal r);

class DatagramLinks final : public DatagramSink {
 public:
  struct Counts {
    std::uint64_t opened = 0;   // datagrams that authenticated
    std::uint64_t no_link = 0;  // authenticated, but the session's reliable link is lost
    std::uint64_t moves = 0;    // a session's datagram peer moved (a NAT rebinding)
    std::uint64_t sent = 0;     // datagrams sealed and queued
    std::uint64_t full = 0;     // Welcomes that offered no link: every one of them was taken
    std::array<std::uint64_t, kDatagramRefusalCount> refused{};  // by DatagramRefusal

    std::uint64_t refused_total() const {
      std::uint64_t n = 0;
      for (std::uint64_t r : refused) {
        n += r;
      }
      return n;
    }
    std::uint64_t refused_for(DatagramRefusal r) const {
      return refused[static_cast<std::size_t>(r)];
    }
  };

  explicit DatagramLinks(Sessions& sessions);
  DatagramLinks(const DatagramLinks&) = delete;
  DatagramLinks& operator=(const DatagramLinks&) = delete;

  // An opened frame of the session whose reliable link is `peer` (the pipeline's ReceiveFrame).
  using Deliver = Callback<void(Peer& peer, std::span<const std::uint8_t> frame)>;
  // The frames read together are all delivered (the pipeline sends their acks).
  using Read = Callback<void()>;
  // The transport once it listens, and where opened frames go (a null transport: none; Offer
  // then offers nothing).
  void Attach(DatagramTransport* transport, Deliver deliver, Read read) {
    transport_ = transport;
    deliver_ = std::move(deliver);
    read_ = std::move(read);
  }
  bool on() const { return transport_ != nullptr; }
  std::uint16_t port() const { return transport_ != nullptr ? transport_->port() : 0; }

  // The 32-byte key of `session`'s datagram link for its Welcome (a resume gets a new one):
  // `exported`, the one its TLS link exported (Peer::ExportKey) and the client derives too, or
  // when empty a random one, which the Welcome carries. Empty when there is no datagram port, or
  // when as many sessions as the transport serves have a key already (the first refusal after a
  // success is logged with the fix). The peer bound before, if any, stays bound until a datagram
  // under the new key moves it.
  std::vector<std::uint8_t> Offer(std::uint64_t session, std::vector<std::uint8_t> exported = {});
  // The session ended: its key and binding go.
  void Forget(std::uint64_t session);
  // `frame` to `session` over its datagram link; false when it has none bound (send it over the
  // reliable link instead).
  bool Send(std::uint64_t session, std::span<const std::uint8_t> frame,
            DatagramTransport::Channel channel);
  // The address of `session`'s datagram peer, or "" when none is bound.
  std::string address(std::uint64_t session) const;
  const Counts& counts() const { return counts_; }
  // Sessions whose datagram link is bound now (a datagram under their key arrived).
  std::size_t bound() const;

  // --- DatagramSink ---
  void OnDatagram(DatagramPeerId peer, const std::string& address,
                  std::span<const std::uint8_t> bytes) override;
  void OnDatagramPeerGone(DatagramPeerId peer) override;
  void OnDatagramsRead() override {
    if (read_) {
      read_();
    }
  }

 private:
  void Refuse(DatagramRefusal r) { ++counts_.refused[static_cast<std::size_t>(r)]; }

  struct Binding {
    molt::wire::DatagramSeal seal;
    DatagramPeerId peer = 0;
    std::string address;
  };

  Sessions& sessions_;
  Deliver deliver_;
  Read read_;
  DatagramTransport* transport_ = nullptr;
  std::unordered_map<std::uint64_t, Binding> bindings_;            // by session
  std::unordered_map<DatagramPeerId, std::uint64_t> sessions_of_;  // by peer
  std::vector<std::uint8_t> scratch_;
  Counts counts_;
  bool full_said_ = false;  // "every datagram link is taken" logged since the last offer
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_DATAGRAM_LINKS_H_
