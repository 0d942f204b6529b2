// SPDX-License-Identifier: Apache-2.0
// SocketAddress (hosts/molt-relay/socket_address.h): HOST:PORT split (IPv6 in brackets), resolved
// and printed back, and ordered so that it keys the table of clients.
#include "hosts/molt-relay/socket_address.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <map>
#include <string>
#include <variant>

namespace molt::relay {
namespace {

SocketAddress Resolved(const std::string& text) {
  const std::optional<HostPort> where = ParseHostPort(text);
  EXPECT_TRUE(where.has_value()) << text;
  std::variant<SocketAddress, std::string> r = SocketAddress::Resolve(where.value(), false);
  EXPECT_TRUE(std::holds_alternative<SocketAddress>(r)) << std::get<std::string>(r);
  return std::get<SocketAddress>(r);
}

TEST(SocketAddressTest, SplitsHostAndPort) {
  const std::optional<HostPort> v4 = ParseHostPort("127.0.0.1:7777");
  ASSERT_TRUE(v4.has_value());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 7777);
  const std::optional<HostPort> name = ParseHostPort("localhost:0");
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(name->host, "localhost");
  EXPECT_EQ(name->port, 0);
  const std::optional<HostPort> v6 = ParseHostPort("[::1]:65535");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 65535);
}

TEST(SocketAddressTest, RefusesWhatIsNotHostColonPort) {
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", ":7777", "127.0.0.1:65536", "127.0.0.1:-1",
                          "127.0.0.1:7x", "::1:7777", "[]:7777", "[::1]"}) {
    EXPECT_FALSE(ParseHostPort(bad).has_value()) << bad;
  }
}

TEST(SocketAddressTest, ResolvesAndPrintsIpv4AndIpv6) {
  const SocketAddress v4 = Resolved("127.0.0.1:7777");
  EXPECT_EQ(v4.family(), AF_INET);
  EXPECT_EQ(v4.port(), 7777);
  EXPECT_EQ(v4.ToString(), "127.0.0.1:7777");
  const SocketAddress v6 = Resolved("[::1]:7778");
  EXPECT_EQ(v6.family(), AF_INET6);
  EXPECT_EQ(v6.ToString(), "[::1]:7778");
  EXPECT_EQ(SocketAddress().ToString(), "(no address)");
}

TEST(SocketAddressTest, EqualAddressesAreOneKey) {
  std::map<SocketAddress, int> table;
  table[Resolved("127.0.0.1:1000")] = 1;
  table[Resolved("127.0.0.1:1001")] = 2;
  table[Resolved("127.0.0.2:1000")] = 3;
  table[Resolved("[::1]:1000")] = 4;
  table[Resolved("127.0.0.1:1000")] = 5;
  EXPECT_EQ(table.size(), 4u);
  EXPECT_EQ(table[Resolved("127.0.0.1:1000")], 5);
  EXPECT_TRUE(Resolved("127.0.0.1:1000") == Resolved("127.0.0.1:1000"));
  EXPECT_TRUE(Resolved("127.0.0.1:1000") != Resolved("[::1]:1000"));
}

}  // namespace
}  // namespace molt::relay
