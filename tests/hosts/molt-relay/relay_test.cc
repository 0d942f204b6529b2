// SPDX-License-Identifier: Apache-2.0
// Relay (hosts/molt-relay/relay.h) on real sockets on loopback, run on a thread of the test, in
// front of an echo server: without loss everything comes back in order; drop 1 passes nothing;
// duplicate 1 doubles each way; two clients get two upstream ports; --rebind-after moves a client
// to a new port; the server gets exactly the datagrams the seeded model lets through; the counts
// balance; the largest IPv4 datagram passes whole. No timing is asserted but a lower bound: a
// delayed datagram never arrives early.
#include "hosts/molt-relay/relay.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "tests/support/udp_echo_server.h"
#include "tests/support/udp_peer.h"

namespace molt::relay {
namespace {

using std::chrono::milliseconds;

std::string Numbered(int i) { return "datagram " + std::to_string(i); }

// Checks in - dropped + duplicated == out + send_errors + pending, and that nothing failed.
void ExpectBalanced(const DirectionStats& s, const char* direction) {
  SCOPED_TRACE(direction);
  EXPECT_EQ(s.in - s.dropped + s.duplicated, s.out + s.send_errors + s.pending);
  EXPECT_EQ(s.send_errors, 0u);
}

class RelayTest : public ::testing::Test {
 protected:
  // Starts an echo server of `family` and a relay in front of it with `options` (--listen and
  // --to filled in), running on a thread.
  void Start(RelayOptions options, int family = AF_INET) {
    echo_ = std::make_unique<test::UdpEchoServer>(family);
    ASSERT_TRUE(echo_->is_open());
    const std::string host = family == AF_INET6 ? "::1" : "127.0.0.1";
    options.listen = HostPort{host, 0};
    options.to = HostPort{host, echo_->port()};
    std::variant<std::unique_ptr<Relay>, std::string> opened = Relay::Open(options);
    ASSERT_TRUE(std::holds_alternative<std::unique_ptr<Relay>>(opened))
        << std::get<std::string>(opened);
    relay_ = std::move(std::get<std::unique_ptr<Relay>>(opened));
    port_ = relay_->listen_address().port();
    thread_ = std::thread([this] { final_ = relay_->Run(); });
  }
  void TearDown() override { Stop(); }

  // Stops the relay and returns its counts.
  RelayStats Stop() {
    if (thread_.joinable()) {
      relay_->Stop();
      thread_.join();
    }
    return final_;
  }
  // Waits until the relay's counts satisfy `done` (true), or 10 s pass (false).
  bool WaitForStats(const std::function<bool(const RelayStats&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done(relay_->Snapshot())) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::sleep_for(milliseconds(1));
    }
    return true;
  }
  // Receives `n` datagrams at `peer` (each within 10 s), all from the relay's listen port.
  std::vector<std::string> ReceiveFromRelay(const test::UdpPeer& peer, std::size_t n) {
    std::vector<std::string> got;
    while (got.size() < n) {
      const std::optional<test::UdpDatagram> d = peer.Receive();
      if (!d) {
        ADD_FAILURE() << "got " << got.size() << " of " << n;
        break;
      }
      EXPECT_EQ(d->from_port, port_);
      got.push_back(d->payload);
    }
    return got;
  }

  std::unique_ptr<test::UdpEchoServer> echo_;
  std::unique_ptr<Relay> relay_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  RelayStats final_;
};

TEST_F(RelayTest, WithoutLossEchoesEverythingInOrder) {
  ASSERT_NO_FATAL_FAILURE(Start(RelayOptions{}));
  test::UdpPeer client;
  std::vector<std::string> sent;
  std::vector<std::string> back;
  for (int burst = 0; burst < 10; ++burst) {
    for (int i = 0; i < 20; ++i) {
      sent.push_back(Numbered(burst * 20 + i));
      ASSERT_TRUE(client.SendTo(sent.back(), port_));
    }
    for (const std::string& s : ReceiveFromRelay(client, 20)) {
      back.push_back(s);
    }
  }
  EXPECT_EQ(back, sent);
  std::vector<std::string> served;
  for (const test::UdpDatagram& d : echo_->received()) {
    served.push_back(d.payload);
  }
  EXPECT_EQ(served, sent);
  const RelayStats stats = Stop();
  EXPECT_EQ(stats.to_server.in, 200u);
  EXPECT_EQ(stats.to_server.out, 200u);
  EXPECT_EQ(stats.to_client.in, 200u);
  EXPECT_EQ(stats.to_client.out, 200u);
  EXPECT_EQ(stats.to_server.dropped + stats.to_client.dropped, 0u);
  EXPECT_EQ(stats.clients, 1u);
}

TEST_F(RelayTest, DropOnePassesNothing) {
  RelayOptions options;
  options.impairment.drop = 1;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  test::UdpPeer client;
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(client.SendTo(Numbered(i), port_));
  }
  ASSERT_TRUE(WaitForStats([](const RelayStats& s) { return s.to_server.in == 50; }));
  const RelayStats stats = Stop();
  EXPECT_EQ(stats.to_server.dropped, 50u);
  EXPECT_EQ(stats.to_server.out, 0u);
  EXPECT_EQ(stats.to_server.pending, 0u);
  EXPECT_EQ(echo_->count(), 0u) << "the relay sent nothing on";
  EXPECT_FALSE(client.Receive(milliseconds(0)).has_value());
}

TEST_F(RelayTest, DuplicateOneDoublesEachWay) {
  RelayOptions options;
  options.impairment.duplicate = 1;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  test::UdpPeer client;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(client.SendTo(Numbered(i), port_));
  }
  std::map<std::string, int> copies;
  for (const std::string& s : ReceiveFromRelay(client, 40)) {
    ++copies[s];
  }
  ASSERT_EQ(copies.size(), 10u);
  for (const auto& [payload, n] : copies) {
    EXPECT_EQ(n, 4) << payload << ": twice to the server, each echo twice back";
  }
  EXPECT_EQ(echo_->count(), 20u);
  const RelayStats stats = Stop();
  EXPECT_EQ(stats.to_server.in, 10u);
  EXPECT_EQ(stats.to_server.duplicated, 10u);
  EXPECT_EQ(stats.to_server.out, 20u);
  EXPECT_EQ(stats.to_client.in, 20u);
  EXPECT_EQ(stats.to_client.duplicated, 20u);
  EXPECT_EQ(stats.to_client.out, 40u);
}

TEST_F(RelayTest, TwoClientsGetTheirOwnUpstreamPorts) {
  ASSERT_NO_FATAL_FAILURE(Start(RelayOptions{}));
  test::UdpPeer a;
  test::UdpPeer b;
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(a.SendTo("from a", port_));
    EXPECT_EQ(ReceiveFromRelay(a, 1), std::vector<std::string>{"from a"});
    ASSERT_TRUE(b.SendTo("from b", port_));
    EXPECT_EQ(ReceiveFromRelay(b, 1), std::vector<std::string>{"from b"});
  }
  const std::vector<test::UdpDatagram> served = echo_->received();
  ASSERT_EQ(served.size(), 4u);
  EXPECT_EQ(served[0].payload, "from a");
  EXPECT_EQ(served[1].payload, "from b");
  EXPECT_NE(served[0].from_port, served[1].from_port) << "one upstream socket per client";
  EXPECT_EQ(served[2].from_port, served[0].from_port) << "a client keeps its upstream socket";
  EXPECT_EQ(served[3].from_port, served[1].from_port);
  for (const test::UdpDatagram& d : served) {
    EXPECT_NE(d.from_port, port_);
    EXPECT_NE(d.from_port, a.port());
    EXPECT_NE(d.from_port, b.port());
  }
  EXPECT_EQ(Stop().clients, 2u);
}

TEST_F(RelayTest, RebindAfterMovesTheClientToANewUpstreamPort) {
  RelayOptions options;
  options.rebind_after = 3;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  test::UdpPeer client;
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(client.SendTo(Numbered(i), port_));
    EXPECT_EQ(ReceiveFromRelay(client, 1), std::vector<std::string>{Numbered(i)})
        << "the echo comes back through the new socket too";
  }
  const std::vector<test::UdpDatagram> served = echo_->received();
  ASSERT_EQ(served.size(), 7u);
  const std::uint16_t first = served[0].from_port;
  const std::uint16_t second = served[3].from_port;
  const std::uint16_t third = served[6].from_port;
  EXPECT_EQ(served[1].from_port, first);
  EXPECT_EQ(served[2].from_port, first);
  EXPECT_EQ(served[4].from_port, second);
  EXPECT_EQ(served[5].from_port, second);
  EXPECT_NE(first, second);
  EXPECT_NE(second, third);
  const RelayStats stats = Stop();
  EXPECT_EQ(stats.rebinds, 2u);
  EXPECT_EQ(stats.clients, 1u) << "the same client, a new port";
}

TEST_F(RelayTest, ADelayedDatagramNeverArrivesEarly) {
  RelayOptions options;
  options.impairment.delay = milliseconds(30);
  options.impairment.jitter = milliseconds(10);
  ASSERT_NO_FATAL_FAILURE(Start(options));
  test::UdpPeer client;
  for (int i = 0; i < 5; ++i) {
    const auto sent = std::chrono::steady_clock::now();
    ASSERT_TRUE(client.SendTo(Numbered(i), port_));
    EXPECT_EQ(ReceiveFromRelay(client, 1), std::vector<std::string>{Numbered(i)});
    EXPECT_GE(std::chrono::steady_clock::now() - sent, milliseconds(2 * (30 - 10)))
        << "each way waits at least the delay less the jitter";
  }
}

TEST_F(RelayTest, TheServerGetsExactlyWhatTheSeededModelLetsThrough) {
  RelayOptions options;
  options.impairment.drop = 0.5;
  options.seed = 7;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  Impairment model(options.impairment, options.seed);
  std::vector<std::string> expected;
  test::UdpPeer client;
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(client.SendTo(Numbered(i), port_));
    if (!model.Next().dropped()) {
      expected.push_back(Numbered(i));
    }
  }
  ASSERT_TRUE(WaitForStats(
      [](const RelayStats& s) { return s.to_server.in == 64 && s.to_server.pending == 0; }));
  ASSERT_TRUE(echo_->WaitForCount(expected.size()));
  std::vector<std::string> served;
  for (const test::UdpDatagram& d : echo_->received()) {
    served.push_back(d.payload);
  }
  EXPECT_EQ(served, expected);
  EXPECT_EQ(Stop().to_server.dropped, 64 - expected.size());
}

TEST_F(RelayTest, CountsBalanceOnceStopped) {
  RelayOptions options;
  options.impairment.drop = 0.2;
  options.impairment.duplicate = 0.2;
  options.impairment.reorder = 0.2;
  options.impairment.delay = milliseconds(5);
  options.impairment.jitter = milliseconds(5);
  ASSERT_NO_FATAL_FAILURE(Start(options));
  test::UdpPeer client;
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(client.SendTo(Numbered(i), port_));
  }
  // Settled: everything read, everything the server echoed read, nothing held.
  ASSERT_TRUE(WaitForStats([](const RelayStats& s) {
    return s.to_server.in == 200 && s.to_server.pending == 0 && s.to_client.in == s.to_server.out &&
           s.to_client.pending == 0;
  }));
  const RelayStats stats = Stop();
  ExpectBalanced(stats.to_server, "to the server");
  ExpectBalanced(stats.to_client, "to the client");
  EXPECT_GT(stats.to_server.dropped, 0u);
  EXPECT_GT(stats.to_server.duplicated, 0u);
  EXPECT_GT(stats.to_server.reordered, 0u);
  EXPECT_EQ(echo_->count(), stats.to_server.out);
  EXPECT_EQ(ReceiveFromRelay(client, stats.to_client.out).size(), stats.to_client.out);
  EXPECT_EQ(stats.to_server.bytes_in, 10u * 10 + 90u * 11 + 100u * 12);  // "datagram N"
}

TEST_F(RelayTest, CarriesTheLargestDatagramWhole) {
  ASSERT_NO_FATAL_FAILURE(Start(RelayOptions{}));
  test::UdpPeer client;
  std::string large(65507, 'x');  // the most an IPv4 UDP datagram holds
  for (std::size_t i = 0; i < large.size(); i += 997) {
    large[i] = static_cast<char>('a' + i % 26);
  }
  ASSERT_TRUE(client.SendTo(large, port_));
  const std::vector<std::string> back = ReceiveFromRelay(client, 1);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_TRUE(back[0] == large) << "got " << back[0].size() << " bytes";
  EXPECT_EQ(Stop().to_client.bytes_out, large.size());
}

TEST_F(RelayTest, RelaysOverIpv6) {
  if (!test::UdpPeer(AF_INET6).is_open()) {
    GTEST_SKIP() << "no ::1 on this host";
  }
  ASSERT_NO_FATAL_FAILURE(Start(RelayOptions{}, AF_INET6));
  EXPECT_EQ(relay_->listen_address().ToString(), "[::1]:" + std::to_string(port_));
  test::UdpPeer client(AF_INET6);
  ASSERT_TRUE(client.SendTo("over six", port_));
  EXPECT_EQ(ReceiveFromRelay(client, 1), std::vector<std::string>{"over six"});
  ASSERT_EQ(echo_->count(), 1u);
  EXPECT_NE(echo_->received()[0].from_port, client.port());
}

}  // namespace
}  // namespace molt::relay
