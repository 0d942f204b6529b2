// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/socket_address.cc
//
// SocketAddress: HOST:PORT split, getaddrinfo, the printed form and the order.
#include "hosts/molt-relay/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>

namespace molt::relay {

std::optional<HostPort> ParseHostPort(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::nullopt;  // an IPv6 literal without its brackets: where would the port start?
  }
  unsigned value = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (host.empty() || port.empty() || error != std::errc() || end != port.data() + port.size() ||
      value > 65535) {
    return std::nullopt;
  }
  return HostPort{std::string(host), static_cast<std::uint16_t>(value)};
}

SocketAddress::SocketAddress(const sockaddr* address, socklen_t length)
    : length_(std::min<socklen_t>(length, sizeof(storage_))) {
  std::memcpy(&storage_, address, length_);
}

std::variant<SocketAddress, std::string> SocketAddress::Resolve(const HostPort& where,
                                                                bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  const std::string port = std::to_string(where.port);
  const int status = ::getaddrinfo(where.host.c_str(), port.c_str(), &hints, &found);
  if (status != 0 || found == nullptr) {
    return "cannot resolve \"" + where.host +
           "\": " + (status != 0 ? ::gai_strerror(status) : "no address");
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
  return SocketAddress(found->ai_addr, found->ai_addrlen);
}

std::uint16_t SocketAddress::port() const {
  switch (family()) {
    case AF_INET:
      return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
    case AF_INET6:
      return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
    default:
      return 0;
  }
}

std::string SocketAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = "";
  if (family() == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, text,
                sizeof text);
    return std::string(text) + ":" + std::to_string(port());
  }
  if (family() == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, text,
                sizeof text);
    return "[" + std::string(text) + "]:" + std::to_string(port());
  }
  return "(no address)";
}

int SocketAddress::Compare(const SocketAddress& a, const SocketAddress& b) {
  if (a.family() != b.family()) {
    return a.family() < b.family() ? -1 : 1;
  }
  if (a.port() != b.port()) {
    return a.port() < b.port() ? -1 : 1;
  }
  if (a.family() == AF_INET) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in*>(&a.storage_)->sin_addr,
                       &reinterpret_cast<const sockaddr_in*>(&b.storage_)->sin_addr,
                       sizeof(in_addr));
  }
  if (a.family() == AF_INET6) {
    const auto* x = reinterpret_cast<const sockaddr_in6*>(&a.storage_);
    const auto* y = reinterpret_cast<const sockaddr_in6*>(&b.storage_);
    if (const int c = std::memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(in6_addr)); c != 0) {
      return c;
    }
    return x->sin6_scope_id == y->sin6_scope_id ? 0 : x->sin6_scope_id < y->sin6_scope_id ? -1 : 1;
  }
  return 0;
}

}  // namespace molt::relay
