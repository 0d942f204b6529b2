// SPDX-License-Identifier: Apache-2.0
// DatagramTransport: a real ENet client on loopback connects to the transport's UDP port; what
// it sends reaches the sink with its peer and address, what the transport sends back reaches it
// on the channel asked for, and a peer that leaves is reported gone.
#include "kernel/src/net/datagram_transport.h"

#include <enet/enet.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace molt::kernel::net {
namespace {

class Recorder final : public DatagramSink {
 public:
  void OnDatagram(DatagramPeerId peer, const std::string& address,
                  std::span<const std::uint8_t> bytes) override {
    last_peer = peer;
    last_address = address;
    got.emplace_back(bytes.begin(), bytes.end());
  }
  void OnDatagramPeerGone(DatagramPeerId peer) override { gone.push_back(peer); }

  DatagramPeerId last_peer = 0;
  std::string last_address;
  std::vector<std::string> got;
  std::vector<DatagramPeerId> gone;
};

class DatagramTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(enet_initialize(), 0);
    ASSERT_TRUE(transport_.Listen("127.0.0.1", 0, 8).ok());
    ASSERT_NE(transport_.port(), 0);
    client_ = enet_host_create(nullptr, 1, 2, 0, 0);
    ASSERT_NE(client_, nullptr);
  }
  void TearDown() override {
    if (client_ != nullptr) {
      enet_host_destroy(client_);
    }
  }
  // Runs the server's loop and the client's ENet until `done`, for at most 5 s.
  bool Pump(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < until) {
      io_.restart();
      io_.run_for(std::chrono::milliseconds(2));
      ENetEvent e;
      while (enet_host_service(client_, &e, 1) > 0) {
        if (e.type == ENET_EVENT_TYPE_CONNECT) {
          connected_ = true;
        } else if (e.type == ENET_EVENT_TYPE_RECEIVE) {
          heard_.emplace_back(reinterpret_cast<const char*>(e.packet->data), e.packet->dataLength);
          heard_channels_.push_back(e.channelID);
          enet_packet_destroy(e.packet);
        }
      }
    }
    return done();
  }

  boost::asio::io_context io_;
  Recorder sink_;
  DatagramTransport transport_{sink_, io_};
  ENetHost* client_ = nullptr;
  bool connected_ = false;
  std::vector<std::string> heard_;
  std::vector<int> heard_channels_;
};

TEST_F(DatagramTransportTest, DatagramsGoBothWaysOnTheChannelAsked) {
  ENetAddress server{};
  enet_address_set_host(&server, "127.0.0.1");
  server.port = transport_.port();
  ENetPeer* peer = enet_host_connect(client_, &server, 2, 0);
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(Pump([&] { return connected_ && transport_.peers() == 1; }));
  const std::string hello = "hello";
  enet_peer_send(peer, 0,
                 enet_packet_create(hello.data(), hello.size(), ENET_PACKET_FLAG_UNSEQUENCED));
  ASSERT_TRUE(Pump([&] { return !sink_.got.empty(); }));
  EXPECT_EQ(sink_.got[0], "hello");
  EXPECT_EQ(sink_.last_address.rfind("127.0.0.1:", 0), 0u) << sink_.last_address;
  const std::string back = "back";
  ASSERT_TRUE(transport_.Send(
      sink_.last_peer, std::span(reinterpret_cast<const std::uint8_t*>(back.data()), back.size()),
      DatagramTransport::Channel::kReliable));
  ASSERT_TRUE(Pump([&] { return !heard_.empty(); }));
  EXPECT_EQ(heard_[0], "back");
  EXPECT_EQ(heard_channels_[0], 1);
  EXPECT_FALSE(transport_.Send(sink_.last_peer + 100, {}, DatagramTransport::Channel::kUnreliable));
  // Dropped: reported gone, and no longer sent to.
  const DatagramPeerId id = sink_.last_peer;
  transport_.Drop(id);
  EXPECT_EQ(sink_.gone, std::vector<DatagramPeerId>{id});
  EXPECT_FALSE(transport_.Send(id, {}, DatagramTransport::Channel::kUnreliable));
  EXPECT_EQ(transport_.peers(), 0u);
}

TEST_F(DatagramTransportTest, APortInUseIsRefusedWithTheFix) {
  boost::asio::io_context io;
  Recorder sink;
  DatagramTransport second(sink, io);
  const Status s = second.Listen("127.0.0.1", transport_.port(), 8);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pick another --udp port"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace molt::kernel::net
