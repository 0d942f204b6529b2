// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/udp_socket.cc
//
// UdpSocket: socket(), bind(), sendto() and recvfrom() on a descriptor it closes.
#include "hosts/molt-relay/udp_socket.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace molt::relay {
namespace {

constexpr int kBufferBytes = 1 << 20;

}  // namespace

UdpSocket::UdpSocket(UdpSocket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

UdpSocket& UdpSocket::operator=(UdpSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

UdpSocket::~UdpSocket() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

std::variant<UdpSocket, std::string> UdpSocket::Bind(const SocketAddress& address) {
  UdpSocket socket(::socket(address.family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!socket.is_open()) {
    return "cannot open a socket for " + address.ToString() + ": " + std::strerror(errno);
  }
  ::setsockopt(socket.fd_, SOL_SOCKET, SO_RCVBUF, &kBufferBytes, sizeof kBufferBytes);
  ::setsockopt(socket.fd_, SOL_SOCKET, SO_SNDBUF, &kBufferBytes, sizeof kBufferBytes);
  if (::bind(socket.fd_, address.get(), address.length()) != 0) {
    return "cannot bind " + address.ToString() + ": " + std::strerror(errno);
  }
  return socket;
}

std::variant<UdpSocket, std::string> UdpSocket::BindAny(int family) {
  if (family == AF_INET6) {
    sockaddr_in6 any{};
    any.sin6_family = AF_INET6;
    any.sin6_addr = in6addr_any;
    return Bind(SocketAddress(reinterpret_cast<const sockaddr*>(&any), sizeof any));
  }
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  return Bind(SocketAddress(reinterpret_cast<const sockaddr*>(&any), sizeof any));
}

bool UdpSocket::SendTo(const void* data, std::size_t size, const SocketAddress& to) const {
  return ::sendto(fd_, data, size, MSG_DONTWAIT, to.get(), to.length()) ==
         static_cast<ssize_t>(size);
}

ssize_t UdpSocket::ReceiveFrom(void* buffer, std::size_t capacity, SocketAddress& from) const {
  sockaddr_storage sender{};
  socklen_t length = sizeof sender;
  const ssize_t n = ::recvfrom(fd_, buffer, capacity, MSG_DONTWAIT,
                               reinterpret_cast<sockaddr*>(&sender), &length);
  if (n >= 0) {
    from = SocketAddress(reinterpret_cast<const sockaddr*>(&sender), length);
  }
  return n;
}

SocketAddress UdpSocket::LocalAddress() const {
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    return SocketAddress();
  }
  return SocketAddress(reinterpret_cast<const sockaddr*>(&bound), length);
}

}  // namespace molt::relay
