// SPDX-License-Identifier: Apache-2.0
// The datagram link (net.udp) end to end on loopback: the Welcome offers a port and a key, a real
// ENet client opens the link with them, its sealed predicted intents reach the handler and their
// acks come back sealed by the same link, the server's unreliable events go by it; a datagram
// under a wrong key, or replayed, changes nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datagram_net_fixture.h"

namespace molt::kernel::net {
namespace {

using molt::wire::DatagramSeal;

TEST_F(DatagramNetTest, ASessionsDatagramLinkCarriesItsPredictedIntentsAndTheirAcks) {
  std::vector<std::string> moves;
  const ChannelId move =
      DeclareSayOf(ChannelKind::kPredicted, "move", [&](Session&, std::span<Value> args) {
        moves.push_back(flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
      });
  Listen();
  ASSERT_NE(net_->udp_port(), 0);
  // The reliable link's Welcome offers the datagram link.
  const Joined ada = Join("ada");
  const std::uint64_t session = ada.session;
  auto seal = DatagramSeal::Create(ada.key, session, DatagramSeal::End::kClient);
  ASSERT_TRUE(seal.ok());
  EnetClient& client = Connect();

  // A sealed predicted intent, by the reliable ENet channel.
  const std::vector<std::uint8_t> frame = IntentFrame(move, "north", 1);
  const std::vector<std::uint8_t> sealed = seal->Seal(frame);
  client.Send(sealed, 1);
  ASSERT_TRUE(Pump([&] { return !moves.empty() && !client.received.empty(); }));
  EXPECT_EQ(moves, std::vector<std::string>{"north"});
  // Its ack came back by the datagram link, sealed.
  std::vector<std::uint8_t> scratch;
  auto ack = seal->Open(client.received.back(), &scratch);
  ASSERT_TRUE(ack.ok()) << ack.status().ToString();
  const w::Envelope* env = w::GetSizePrefixedEnvelope(ack->data());
  ASSERT_EQ(env->body_type(), w::Body::Acks);
  ASSERT_EQ(env->body_as_Acks()->accepted()->size(), 1u);
  EXPECT_EQ(env->body_as_Acks()->accepted()->Get(0), 1u);

  // A replay and a datagram under another key change nothing.
  client.Send(sealed, 0);
  auto stranger =
      DatagramSeal::Create(std::vector<std::uint8_t>(32, 9), session, DatagramSeal::End::kClient);
  (void)stranger->Seal(frame);  // past the counter ada took: refused for its key, not as a replay
  client.Send(stranger->Seal(frame), 0);
  ASSERT_TRUE(Pump([&] { return net_->datagrams().counts().refused_total() == 2; }));
  EXPECT_EQ(moves.size(), 1u);
  EXPECT_EQ(net_->datagrams().counts().opened, 1u);
  EXPECT_EQ(net_->datagrams().counts().refused_for(DatagramRefusal::kReplayed), 1u);
  EXPECT_EQ(net_->datagrams().counts().refused_for(DatagramRefusal::kUnauthenticated), 1u);
}

// net.udp_max_links: the Welcomes past it offer no datagram link (the session keeps everything on
// its reliable link), counted and said once; a session that ends frees its link for the next.
TEST_F(DatagramNetTest, PastUdpMaxLinksAWelcomeOffersNoLinkUntilOneIsFree) {
  Teardown();
  NetOptions o = NoResume();
  o.udp = "127.0.0.1:0";
  o.udp_max_links = 1;
  Boot(std::move(o));
  Listen();
  const Joined ada = Join("ada");
  EXPECT_EQ(ada.key.size(), DatagramSeal::kKeyBytes);
  auto welcome_of = [&](const std::string& user) {
    tcp_.push_back(std::make_unique<TestClient>(port_));
    TestClient& tcp = *tcp_.back();
    std::pair<std::uint16_t, bool> offered{0, false};  // the port, and whether a key came
    Run([&] {
      Frame welcome = tcp.Hello(user);
      ASSERT_EQ(welcome.type(), w::Body::Welcome);
      const w::Welcome* m = welcome.envelope()->body_as_Welcome();
      offered = {m->datagram_port(), m->datagram_key() != nullptr};
    });
    return offered;
  };
  EXPECT_EQ(welcome_of("bob"), (std::pair<std::uint16_t, bool>{0, false}));
  EXPECT_EQ(welcome_of("cy"), (std::pair<std::uint16_t, bool>{0, false}));
  EXPECT_EQ(net_->datagrams().counts().full, 2u);
  EXPECT_EQ(net_->Snapshot().datagrams.full, 2u);
  // Ada leaves: the next Welcome offers her link.
  tcp_.front().reset();
  ASSERT_TRUE(Pump([&] { return net_->Snapshot().sessions.active == 2; }));
  EXPECT_EQ(welcome_of("dee"), (std::pair<std::uint16_t, bool>{net_->udp_port(), true}));
  EXPECT_EQ(net_->datagrams().counts().full, 2u);
}

// The acks of the predicted intents read together go in one Acks frame (the spec: they ride,
// not a message each): five sealed intents waiting at the port when the server reads get one
// datagram back naming all five.
TEST_F(DatagramNetTest, PredictedIntentsReadTogetherAreAckedInOneDatagram) {
  int taken = 0;
  const ChannelId move =
      DeclareSayOf(ChannelKind::kPredicted, "move", [&](Session&, std::span<Value>) { ++taken; });
  Listen();
  const Joined ada = Join("ada");
  auto seal = DatagramSeal::Create(ada.key, ada.session, DatagramSeal::End::kClient);
  ASSERT_TRUE(seal.ok());
  EnetClient& client = Connect();
  client.Send(seal->Seal(IntentFrame(move, "bind", 1)), 1);
  ASSERT_TRUE(Pump([&] { return taken == 1 && !client.received.empty(); }));
  client.received.clear();
  // The server's loop does not run while they are sent: all five wait for one read.
  for (std::uint32_t seq = 2; seq <= 6; ++seq) {
    client.Send(seal->Seal(IntentFrame(move, "step", seq)), 1);
  }
  ASSERT_TRUE(Pump([&] { return taken == 6 && !client.received.empty(); }));
  (void)Pump([] { return false; }, std::chrono::milliseconds(50));  // a second one would be in
  ASSERT_EQ(client.received.size(), 1u);
  std::vector<std::uint8_t> scratch;
  auto acks = seal->Open(client.received[0], &scratch);
  ASSERT_TRUE(acks.ok()) << acks.status().ToString();
  const w::Envelope* env = w::GetSizePrefixedEnvelope(acks->data());
  ASSERT_EQ(env->body_type(), w::Body::Acks);
  const auto* accepted = env->body_as_Acks()->accepted();
  EXPECT_EQ(std::vector<std::uint32_t>(accepted->begin(), accepted->end()),
            (std::vector<std::uint32_t>{2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace molt::kernel::net
