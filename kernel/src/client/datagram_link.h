// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/datagram_link.h
//
// DatagramLink: the client's end of its session's datagram link (Connection, connection.h): an
// ENet client host the connection services at every step (no thread, no Asio: ENet's own
// non-blocking socket), connected to the port the Welcome offered and sealed under the key it
// gave (wire/datagram_seal.h). Its first datagram is a sealed Ping, so the server binds it at
// once; what arrives is opened and handed over as a frame, what does not open is dropped. While
// ENet has commands in flight it wants a step every 10 ms at the latest (its retransmits and
// acks), else every 500 ms (its keep-alive ping); what arrives wakes the app by the socket.
//
//   link.Open("127.0.0.1", welcome.datagram_port(), key, session);
//   link.Service();                              // each step
//   if (!link.Send(frame, /*reliable=*/false)) { /* the reliable link instead */ }
//
// Thread safety: not thread-safe; REQUIRES one thread at a time (the connection's).
#ifndef MOLT_KERNEL_CLIENT_DATAGRAM_LINK_H_
#define MOLT_KERNEL_CLIENT_DATAGRAM_LINK_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/wire/datagram_seal.h"

struct _ENetHost;
struct _ENetPeer;

namespace molt::kernel::client {

class DatagramLink {
 public:
  using Deliver = Callback<void(std::span<const std::uint8_t> frame)>;
  static constexpr Duration kServiceEvery = std::chrono::milliseconds(10);
  static constexpr Duration kIdleServiceEvery = std::chrono::milliseconds(500);  // ENet's ping
  // ENet gives up on a reliable command unacknowledged after kGiveUpRetransmits round trips'
  // timeouts and kGiveUpAfter, or after kGiveUpBy in any case: about 2 s at 100 ms round trips.
  static constexpr std::uint32_t kGiveUpRetransmits = 8;
  static constexpr Duration kGiveUpAfter = std::chrono::seconds(1);
  static constexpr Duration kGiveUpBy = std::chrono::seconds(3);

  explicit DatagramLink(Deliver deliver);
  DatagramLink(const DatagramLink&) = delete;
  DatagramLink& operator=(const DatagramLink&) = delete;
  ~DatagramLink();

  // Opens the link to `host:port` (IPv4) for `session` under `key`; an open one closes first.
  Status Open(const std::string& host, std::uint16_t port, std::span<const std::uint8_t> key,
              std::uint64_t session);
  // Closes it (no goodbye: the server forgets the peer when the session ends or it times out).
  // A link ENet loses is not closed: it connects again by itself.
  void Close();
  bool open() const { return host_ != nullptr; }
  // ENet connected: frames may go by it.
  bool up() const { return up_; }
  // `frame` sealed over the link (ENet channel 1 when `reliable`, else 0); false when not up.
  bool Send(std::span<const std::uint8_t> frame, bool reliable);
  // ENet's work: connects, what arrived (each frame that opens, to the deliverer), retransmits.
  void Service();
  // When the next Service() is due while open.
  std::optional<TimePoint> next_service() const;
  // Its socket while open, else -1 (Wait polls it beside the reliable link's).
  int socket() const;
  // Datagrams that did not open (a wrong key, a replay, not ours).
  std::uint64_t refused() const { return refused_; }
  // Times ENet lost the link (it then connects again by itself).
  std::uint64_t drops() const { return drops_; }

 private:
  // A new ENet connection to where Open pointed it; false when ENet has no peer for it.
  bool Connect();

  Deliver deliver_;
  _ENetHost* host_ = nullptr;
  _ENetPeer* peer_ = nullptr;
  std::optional<molt::wire::DatagramSeal> seal_;
  bool up_ = false;
  TimePoint last_service_{};
  std::vector<std::uint8_t> scratch_;
  std::uint64_t refused_ = 0;
  std::uint64_t drops_ = 0;
  std::uint32_t to_host_ = 0;  // where it connects (ENet's address: network byte order)
  std::uint16_t to_port_ = 0;
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_DATAGRAM_LINK_H_
