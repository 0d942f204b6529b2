// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/net/datagram_net_fixture.h
//
// DatagramNetTest: a Network with its datagram port on udp 127.0.0.1:0 (net.udp), real ENet
// clients on loopback, and plain UDP sockets that speak no ENet at all. Pump() runs the server's
// loop and services every ENet client until a condition holds (5 s at most).
//
//   EnetClient& c = Connect();                       // an ENet connection to the datagram port
//   c.Send(seal.Seal(frame), 1);                     // channel 1 reliable, 0 unsequenced
//   ASSERT_TRUE(Pump([&] { return !c.received.empty(); }));
//   RawUdp raw; raw.Send(bytes, net_->udp_port());  // whatever bytes, no ENet framing
#ifndef MOLT_TESTS_NET_DATAGRAM_NET_FIXTURE_H_
#define MOLT_TESTS_NET_DATAGRAM_NET_FIXTURE_H_

#include <arpa/inet.h>
#include <enet/enet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kernel/src/wire/datagram_seal.h"
#include "net_fixture.h"

namespace molt::kernel::net {

// One ENet client host with one peer: the server's datagram port.
struct EnetClient {
  ENetHost* host = nullptr;
  ENetPeer* peer = nullptr;
  bool connected = false;
  std::vector<std::vector<std::uint8_t>> received;  // every packet, in arrival order

  ~EnetClient() {
    if (host != nullptr) {
      enet_host_destroy(host);
    }
  }
  // The local UDP port (what the server sees as this client's address).
  std::uint16_t port() const {
    ENetAddress a{};
    return enet_socket_get_address(host->socket, &a) == 0 ? a.port : 0;
  }
  // `bytes` as one ENet packet: channel 1 reliable, channel 0 unsequenced (as the server sends).
  void Send(std::span<const std::uint8_t> bytes, int channel) {
    enet_peer_send(peer, static_cast<enet_uint8>(channel),
                   enet_packet_create(
                       bytes.data(), bytes.size(),
                       channel == 1 ? ENET_PACKET_FLAG_RELIABLE : ENET_PACKET_FLAG_UNSEQUENCED));
    enet_host_flush(host);
  }
};

// A plain UDP socket on an ephemeral loopback port: bytes with no ENet framing, from an address
// no ENet peer has (on loopback, a "spoofed" source is another port).
class RawUdp {
 public:
  RawUdp() : fd_(::socket(AF_INET, SOCK_DGRAM, 0)) {
    // Room for the largest IPv4 datagram.
    int size = 1 << 17;
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  }
  RawUdp(const RawUdp&) = delete;
  RawUdp& operator=(const RawUdp&) = delete;
  ~RawUdp() { ::close(fd_); }
  // True when the kernel took the whole datagram.
  bool Send(std::span<const std::uint8_t> bytes, std::uint16_t port) const {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return ::sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&to),
                    sizeof to) == static_cast<ssize_t>(bytes.size());
  }

 private:
  int fd_;
};

class DatagramNetTest : public NetTest {
 protected:
  void SetUp() override {
    NetOptions o = NoResume();
    o.udp = "127.0.0.1:0";
    Boot(std::move(o));
    ASSERT_EQ(enet_initialize(), 0);
  }
  void TearDown() override {
    clients_.clear();
    NetTest::TearDown();
  }

  // A new ENet client connected to the datagram port (Listen first). Fails the test if the
  // handshake does not finish.
  EnetClient& Connect() {
    auto c = std::make_unique<EnetClient>();
    c->host = enet_host_create(nullptr, 1, 2, 0, 0);
    EXPECT_NE(c->host, nullptr);
    ENetAddress server{};
    enet_address_set_host(&server, "127.0.0.1");
    server.port = net_->udp_port();
    c->peer = enet_host_connect(c->host, &server, 2, 0);
    EnetClient& ref = *c;
    clients_.push_back(std::move(c));
    EXPECT_TRUE(Pump([&] { return ref.connected; })) << "no ENet handshake";
    return ref;
  }

  // The server's loop and every ENet client, until `done` (5 s at most).
  bool Pump(const std::function<bool()>& done,
            std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!done() && std::chrono::steady_clock::now() < until) {
      kernel_->loop().io().restart();
      kernel_->loop().RunFor(std::chrono::milliseconds(2));
      for (auto& c : clients_) {
        ENetEvent e;
        while (enet_host_service(c->host, &e, 1) > 0) {
          if (e.type == ENET_EVENT_TYPE_CONNECT) {
            c->connected = true;
          } else if (e.type == ENET_EVENT_TYPE_RECEIVE) {
            c->received.emplace_back(e.packet->data, e.packet->data + e.packet->dataLength);
            enet_packet_destroy(e.packet);
          }
        }
      }
    }
    return done();
  }

  // A session that joined over TCP as `user`: the key and the id its Welcome offered. The TCP
  // client stays open (the session with it) until the test ends.
  struct Joined {
    std::uint64_t session = 0;
    std::vector<std::uint8_t> key;
  };
  Joined Join(const std::string& user) {
    tcp_.push_back(std::make_unique<TestClient>(port_));
    TestClient& tcp = *tcp_.back();
    Joined j;
    Run([&] {
      Frame welcome = tcp.Hello(user);
      ASSERT_EQ(welcome.type(), w::Body::Welcome);
      const w::Welcome* m = welcome.envelope()->body_as_Welcome();
      EXPECT_EQ(m->datagram_port(), net_->udp_port());
      ASSERT_NE(m->datagram_key(), nullptr);
      j.key.assign(m->datagram_key()->begin(), m->datagram_key()->end());
      j.session = m->session_id();
    });
    EXPECT_EQ(j.key.size(), molt::wire::DatagramSeal::kKeyBytes);
    return j;
  }

  // An intent frame (predicted or unreliable: `seq` set) on `channel` carrying a Say of `text`.
  static std::vector<std::uint8_t> IntentFrame(ChannelId channel, const std::string& text,
                                               std::uint32_t seq) {
    flatbuffers::FlatBufferBuilder b;
    return TestClient::Finish(
        b, w::Body::Intent,
        w::CreateIntent(b, channel, TestClient::Payload(b, SayPayload(text)), seq).Union());
  }

  std::vector<std::unique_ptr<TestClient>> tcp_;
  std::vector<std::unique_ptr<EnetClient>> clients_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_TESTS_NET_DATAGRAM_NET_FIXTURE_H_
