// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/udp_socket.h
//
// UdpSocket: one non-blocking datagram socket (IPv4 or IPv6) that owns its descriptor: bound,
// sending to an address and receiving with the sender's address. molt-relay's listen socket and
// each client's upstream socket are one each. Included by relay.h.
//
// Thread safety: none; one thread uses a socket.
#ifndef MOLT_HOSTS_MOLT_RELAY_UDP_SOCKET_H_
#define MOLT_HOSTS_MOLT_RELAY_UDP_SOCKET_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "hosts/molt-relay/socket_address.h"

namespace molt::relay {

class UdpSocket {
 public:
  // The largest datagram a socket receives whole (the largest a UDP header can describe).
  static constexpr std::size_t kMaxDatagram = 65535;

  UdpSocket() = default;
  UdpSocket(UdpSocket&& other) noexcept;
  UdpSocket& operator=(UdpSocket&& other) noexcept;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;
  ~UdpSocket();

  // A socket bound to `address` (port 0: an ephemeral one), non-blocking and close-on-exec, its
  // buffers asked for 1 MiB each (the kernel caps them). Returns the socket, or the reason
  // ("cannot bind 127.0.0.1:7777: Address already in use").
  static std::variant<UdpSocket, std::string> Bind(const SocketAddress& address);
  // A socket of `family` bound to that family's any-address on an ephemeral port: an upstream
  // socket, as a NAT's new mapping.
  static std::variant<UdpSocket, std::string> BindAny(int family);

  // Sends `size` bytes of `data` to `to` in one datagram. Returns whether the kernel took it
  // (false when its buffer is full, EAGAIN, or the address is unreachable).
  bool SendTo(const void* data, std::size_t size, const SocketAddress& to) const;
  // Receives one datagram into `buffer` (`capacity` bytes), its sender in `from`. Returns its
  // size, or -1 when none waits (EAGAIN) or on an error (errno says which).
  ssize_t ReceiveFrom(void* buffer, std::size_t capacity, SocketAddress& from) const;

  // The address the socket is bound to (the port the kernel chose for port 0).
  SocketAddress LocalAddress() const;
  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }

 private:
  explicit UdpSocket(int fd) : fd_(fd) {}

  int fd_ = -1;
};

}  // namespace molt::relay

#endif  // MOLT_HOSTS_MOLT_RELAY_UDP_SOCKET_H_
