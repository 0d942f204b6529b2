// SPDX-License-Identifier: Apache-2.0
// UdpSocket (hosts/molt-relay/udp_socket.h): bound to an ephemeral port that it reports, sending
// and receiving with the sender's address, never blocking; a port in use is refused with the
// reason; two sockets open together have two ports (a rebinding gets a new one).
#include "hosts/molt-relay/udp_socket.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <string>
#include <variant>

#include "tests/support/udp_peer.h"

namespace molt::relay {
namespace {

SocketAddress Loopback(std::uint16_t port) {
  return std::get<SocketAddress>(SocketAddress::Resolve(HostPort{"127.0.0.1", port}, false));
}

UdpSocket Bound(const SocketAddress& at) {
  std::variant<UdpSocket, std::string> s = UdpSocket::Bind(at);
  EXPECT_TRUE(std::holds_alternative<UdpSocket>(s)) << std::get<std::string>(s);
  return std::move(std::get<UdpSocket>(s));
}

TEST(UdpSocketTest, BindsAnEphemeralPortAndSaysWhich) {
  const UdpSocket s = Bound(Loopback(0));
  ASSERT_TRUE(s.is_open());
  EXPECT_NE(s.LocalAddress().port(), 0);
  EXPECT_EQ(s.LocalAddress().ToString(), "127.0.0.1:" + std::to_string(s.LocalAddress().port()));
}

TEST(UdpSocketTest, SendsAndReceivesWithTheSendersAddress) {
  const UdpSocket s = Bound(Loopback(0));
  test::UdpPeer peer;
  ASSERT_TRUE(peer.SendTo("hello", s.LocalAddress().port()));
  char buffer[UdpSocket::kMaxDatagram + 1];
  SocketAddress from;
  pollfd ready{s.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&ready, 1, 10000), 1);
  ASSERT_EQ(s.ReceiveFrom(buffer, sizeof buffer, from), 5);
  EXPECT_EQ(std::string(buffer, 5), "hello");
  EXPECT_EQ(from.port(), peer.port());
  ASSERT_TRUE(s.SendTo("back", 4, from));
  const std::optional<test::UdpDatagram> back = peer.Receive();
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->payload, "back");
  EXPECT_EQ(back->from_port, s.LocalAddress().port());
}

TEST(UdpSocketTest, ReceivingWithNothingWaitingReturnsAtOnce) {
  const UdpSocket s = Bound(Loopback(0));
  char buffer[16];
  SocketAddress from;
  EXPECT_EQ(s.ReceiveFrom(buffer, sizeof buffer, from), -1);
}

TEST(UdpSocketTest, APortInUseIsRefusedWithTheReason) {
  const UdpSocket first = Bound(Loopback(0));
  std::variant<UdpSocket, std::string> second = UdpSocket::Bind(first.LocalAddress());
  ASSERT_TRUE(std::holds_alternative<std::string>(second));
  EXPECT_EQ(std::get<std::string>(second),
            "cannot bind " + first.LocalAddress().ToString() + ": Address already in use");
}

TEST(UdpSocketTest, SocketsOpenTogetherHaveTheirOwnPorts) {
  std::variant<UdpSocket, std::string> a = UdpSocket::BindAny(AF_INET);
  std::variant<UdpSocket, std::string> b = UdpSocket::BindAny(AF_INET);
  ASSERT_TRUE(std::holds_alternative<UdpSocket>(a));
  ASSERT_TRUE(std::holds_alternative<UdpSocket>(b));
  EXPECT_NE(std::get<UdpSocket>(a).LocalAddress().port(),
            std::get<UdpSocket>(b).LocalAddress().port());
}

TEST(UdpSocketTest, MovingHandsOverTheDescriptor) {
  UdpSocket a = Bound(Loopback(0));
  const int fd = a.fd();
  UdpSocket b = std::move(a);
  EXPECT_FALSE(a.is_open());
  EXPECT_EQ(b.fd(), fd);
}

}  // namespace
}  // namespace molt::relay
