// SPDX-License-Identifier: Apache-2.0
// File: tests/support/udp_peer.h
//
// UdpPeer: a test's own datagram socket on loopback (127.0.0.1 or ::1, an ephemeral port): sends
// to a loopback port and receives with the sender's port, waiting at most a given time. The waits
// are upper bounds that only stop a broken run from hanging. Used by the molt-relay tests
// (tests/hosts/molt-relay) and UdpEchoServer.
#ifndef MOLT_TESTS_SUPPORT_UDP_PEER_H_
#define MOLT_TESTS_SUPPORT_UDP_PEER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace molt::test {

// One datagram received: its bytes and the port it came from.
struct UdpDatagram {
  std::string payload;
  std::uint16_t from_port = 0;
};

class UdpPeer {
 public:
  // Bound to 127.0.0.1 (`family` AF_INET) or ::1 (AF_INET6) on an ephemeral port; is_open()
  // says whether that worked (a host without IPv6 has no ::1).
  explicit UdpPeer(int family = AF_INET) : family_(family) {
    fd_ = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const int bytes = 1 << 20;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    sockaddr_storage at = Loopback(0);
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&at), Length()) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~UdpPeer() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  UdpPeer(const UdpPeer&) = delete;
  UdpPeer& operator=(const UdpPeer&) = delete;

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // The port the socket is bound to.
  std::uint16_t port() const {
    sockaddr_storage at{};
    socklen_t length = sizeof at;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&at), &length);
    return PortOf(at);
  }

  // Sends `payload` to the loopback address's `port`. Returns whether the kernel took it.
  bool SendTo(const std::string& payload, std::uint16_t port) const {
    sockaddr_storage to = Loopback(port);
    return ::sendto(fd_, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&to),
                    Length()) == static_cast<ssize_t>(payload.size());
  }

  // The next datagram, waiting at most `limit` for it; nothing when none came.
  std::optional<UdpDatagram> Receive(
      std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) const {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0) {
      return std::nullopt;
    }
    std::string buffer(65536, '\0');
    sockaddr_storage from{};
    socklen_t length = sizeof from;
    const ssize_t n = ::recvfrom(fd_, buffer.data(), buffer.size(), 0,
                                 reinterpret_cast<sockaddr*>(&from), &length);
    if (n < 0) {
      return std::nullopt;
    }
    buffer.resize(static_cast<std::size_t>(n));
    return UdpDatagram{std::move(buffer), PortOf(from)};
  }

  // The loopback address of the socket's family, as "127.0.0.1" or "[::1]", for a HOST:PORT.
  std::string Host() const { return family_ == AF_INET6 ? "[::1]" : "127.0.0.1"; }

 private:
  sockaddr_storage Loopback(std::uint16_t port) const {
    sockaddr_storage at{};
    if (family_ == AF_INET6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&at);
      in6->sin6_family = AF_INET6;
      in6->sin6_addr = in6addr_loopback;
      in6->sin6_port = htons(port);
    } else {
      auto* in = reinterpret_cast<sockaddr_in*>(&at);
      in->sin_family = AF_INET;
      in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      in->sin_port = htons(port);
    }
    return at;
  }
  socklen_t Length() const {
    return family_ == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  }
  static std::uint16_t PortOf(const sockaddr_storage& at) {
    return ntohs(at.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&at)->sin6_port
                                          : reinterpret_cast<const sockaddr_in*>(&at)->sin_port);
  }

  int family_;
  int fd_ = -1;
};

}  // namespace molt::test

#endif  // MOLT_TESTS_SUPPORT_UDP_PEER_H_
