// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/socket_address.h
//
// SocketAddress: an IPv4 or IPv6 socket address as a value (a copy of the sockaddr, ordered so it
// keys molt-relay's table of clients), resolved from a HOST:PORT flag with getaddrinfo and
// printed back as 127.0.0.1:7777 or [::1]:7777. Included by relay_options.h, udp_socket.h and
// relay.h.
//
// Thread safety: a value; Resolve calls getaddrinfo, which is safe from any thread.
#ifndef MOLT_HOSTS_MOLT_RELAY_SOCKET_ADDRESS_H_
#define MOLT_HOSTS_MOLT_RELAY_SOCKET_ADDRESS_H_

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace molt::relay {

// A HOST:PORT flag split, not yet resolved: "127.0.0.1:7777", "localhost:0", "[::1]:7777".
struct HostPort {
  std::string host;  // without the brackets of an IPv6 literal
  std::uint16_t port = 0;
};

// Splits "HOST:PORT" at its last colon; an IPv6 literal is written in brackets ("[::1]:9000").
// Returns nothing when the port is missing, not a number of 0..65535, or the host is empty.
std::optional<HostPort> ParseHostPort(std::string_view text);

class SocketAddress {
 public:
  SocketAddress() = default;
  // Copies `length` bytes of `address` (at most sizeof(sockaddr_storage)).
  SocketAddress(const sockaddr* address, socklen_t length);

  // The first address getaddrinfo gives for `where` (numeric or a name, IPv4 or IPv6), for a
  // datagram socket; `passive` for an address to bind. Returns the address, or the reason
  // ("cannot resolve \"nowhere.invalid\": Name or service not known").
  static std::variant<SocketAddress, std::string> Resolve(const HostPort& where, bool passive);

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t length() const { return length_; }
  // AF_INET or AF_INET6 (AF_UNSPEC for a default-constructed address).
  int family() const { return storage_.ss_family; }
  std::uint16_t port() const;

  // "127.0.0.1:7777", or "[::1]:7777" for IPv6.
  std::string ToString() const;

  // Equal when family, address and port are (IPv6: and scope); the flow label is ignored. The
  // order is arbitrary but strict, for std::map.
  friend bool operator==(const SocketAddress& a, const SocketAddress& b) {
    return Compare(a, b) == 0;
  }
  friend bool operator!=(const SocketAddress& a, const SocketAddress& b) { return !(a == b); }
  friend bool operator<(const SocketAddress& a, const SocketAddress& b) {
    return Compare(a, b) < 0;
  }

 private:
  static int Compare(const SocketAddress& a, const SocketAddress& b);

  sockaddr_storage storage_{};
  socklen_t length_ = 0;
};

}  // namespace molt::relay

#endif  // MOLT_HOSTS_MOLT_RELAY_SOCKET_ADDRESS_H_
