// SPDX-License-Identifier: Apache-2.0
// libmolt_client's predicted intents and unreliable channels (client API 8) against an in-process
// server on loopback: each predicted intent resolved exactly once (accepted, rejected, timed out,
// or ended with the session), the pending ones listed for replay, and unreliable messages both
// ways over the reliable link.
#include <gtest/gtest.h>
#include <molt/client.h>
#include <poll.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "client_fixture.h"
#include "relay.h"

namespace molt::kernel::net {
namespace {

struct Resolutions {
  std::vector<std::string> log;
};

void OnResolved(void* ud, std::uint16_t, std::uint32_t seq, std::int32_t accepted,
                molt_status_t status) {
  static_cast<Resolutions*>(ud)->log.push_back(std::to_string(seq) +
                                               (accepted != 0 ? " accepted" : " rolled back") +
                                               (status == MOLT_ERR_REJECTED  ? " (rejected)"
                                                : status == MOLT_ERR_TIMEOUT ? " (timeout)"
                                                                             : ""));
}

void OnPending(void* ud, std::uint16_t, std::uint32_t seq, const void* data, std::size_t) {
  static_cast<std::vector<std::string>*>(ud)->push_back(
      std::to_string(seq) + " " + flatbuffers::GetRoot<molt::test::Say>(data)->text()->str());
}

class ClientPredictTest : public ClientTest {
 protected:
  // A predicted intent on molt.test.Say whose handler refuses "bad".
  void DeclareMove() {
    ChannelSpec spec;
    spec.name = "move";
    spec.kind = ChannelKind::kPredicted;
    spec.schema = "molt.test.Say";
    spec.verify = VerifySay;
    spec.open = true;
    spec.on_intent = [this](Session&, std::span<Value> args) {
      const std::string text = flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str();
      if (text == "bad") {
        throw std::runtime_error("blocked by a wall");
      }
      moves.push_back(text);
    };
    ASSERT_TRUE(net_->channels().Declare(std::move(spec)).ok());
  }
  std::uint32_t Predict(std::uint16_t channel, const std::string& text) {
    const std::vector<std::uint8_t> p = SayPayload(text);
    std::uint32_t seq = 0;
    EXPECT_EQ(molt_client_predict(client_, channel, p.data(), p.size(), &seq), MOLT_OK) << Error();
    return seq;
  }
  std::vector<std::string> Pending() {
    std::vector<std::string> list;
    EXPECT_EQ(molt_client_pending(client_, MOLT_CLIENT_ALL_CHANNELS, OnPending, &list), MOLT_OK);
    return list;
  }

  std::vector<std::string> moves;
  Resolutions resolved;
};

TEST_F(ClientPredictTest, EachIsAcceptedOrRejectedOnceAndThePendingOnesReplayOldestFirst) {
  DeclareMove();
  Listen();
  ASSERT_TRUE(Connect());
  ASSERT_EQ(molt_client_on_resolved(client_, OnResolved, &resolved), MOLT_OK);
  const std::uint16_t move = Channel("move");
  EXPECT_EQ(Predict(move, "north"), 1u);
  EXPECT_EQ(Predict(move, "bad"), 2u);
  EXPECT_EQ(Predict(move, "east"), 3u);
  EXPECT_EQ(Pending(), (std::vector<std::string>{"1 north", "2 bad", "3 east"}));
  ASSERT_TRUE(Pump([&] { return resolved.log.size() == 3; }));
  std::sort(resolved.log.begin(), resolved.log.end());
  EXPECT_EQ(resolved.log,
            (std::vector<std::string>{"1 accepted", "2 rolled back (rejected)", "3 accepted"}));
  EXPECT_EQ(moves, (std::vector<std::string>{"north", "east"}));
  EXPECT_TRUE(Pending().empty());

  // Not a predicted intent channel, or no session: refused, nothing pending.
  const std::vector<std::uint8_t> p = SayPayload("x");
  DeclareSay("chat.Say");
  EXPECT_EQ(molt_client_predict(client_, 999, p.data(), p.size(), nullptr), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(Error(), "the server has no predicted intent channel with id 999");
  ASSERT_EQ(molt_client_disconnect(client_), MOLT_OK);
  EXPECT_EQ(molt_client_predict(client_, move, p.data(), p.size(), nullptr), MOLT_ERR_STATE);
  EXPECT_EQ(molt_client_pending(client_, move, nullptr, nullptr), MOLT_ERR_INVALID_ARGUMENT);
}

TEST_F(ClientPredictTest, NoAnswerInTimeRollsBackAndTheLateAckChangesNothing) {
  molt_client_destroy(client_);
  molt_client_options o{};
  o.struct_size = sizeof(o);
  o.predict_timeout_seconds = 0.05;
  ASSERT_EQ(molt_client_create(&o, &client_), MOLT_OK);
  DeclareMove();
  Listen();
  ASSERT_TRUE(Connect());
  molt_client_on_resolved(client_, OnResolved, &resolved);
  const std::uint32_t seq = Predict(Channel("move"), "north");
  // The server does not run: no ack comes, and the client's timeout rolls the move back.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (resolved.log.empty() && std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(molt_client_wait(client_, 0.5), MOLT_OK);
    ASSERT_EQ(molt_client_step(client_, 0), MOLT_OK);
  }
  EXPECT_EQ(resolved.log,
            (std::vector<std::string>{std::to_string(seq) + " rolled back (timeout)"}));
  // Now the server takes it and acks: the client has resolved it already.
  ASSERT_TRUE(Pump([&] { return moves.size() == 1; }));
  Pump([] { return false; }, std::chrono::milliseconds(100));
  EXPECT_EQ(resolved.log.size(), 1u);
}

TEST_F(ClientPredictTest, WhatTheContractSaysMayBeNullIs) {
  DeclareMove();
  Listen();
  ASSERT_TRUE(Connect());
  const std::uint16_t move = Channel("move");
  const std::vector<std::uint8_t> p = SayPayload("north");
  // out_seq may be NULL: sent, pending, resolved all the same.
  ASSERT_EQ(molt_client_on_resolved(client_, OnResolved, &resolved), MOLT_OK);
  ASSERT_EQ(molt_client_predict(client_, move, p.data(), p.size(), nullptr), MOLT_OK) << Error();
  EXPECT_EQ(Pending(), std::vector<std::string>{"1 north"});
  ASSERT_TRUE(Pump([&] { return resolved.log.size() == 1; }));
  EXPECT_EQ(resolved.log, std::vector<std::string>{"1 accepted"});
  // A NULL listener removes it: the next resolution reaches nobody, and nothing breaks.
  ASSERT_EQ(molt_client_on_resolved(client_, nullptr, nullptr), MOLT_OK);
  ASSERT_EQ(molt_client_predict(client_, move, p.data(), p.size(), nullptr), MOLT_OK);
  ASSERT_TRUE(Pump([&] { return moves.size() == 2 && Pending().empty(); }));
  EXPECT_EQ(resolved.log.size(), 1u);
}

TEST_F(ClientPredictTest, ThePendingOnesEndWithTheSession) {
  DeclareMove();
  Listen();
  ASSERT_TRUE(Connect());
  molt_client_on_resolved(client_, OnResolved, &resolved);
  Predict(Channel("move"), "north");
  ASSERT_EQ(molt_client_disconnect(client_), MOLT_OK);
  EXPECT_EQ(resolved.log, (std::vector<std::string>{"1 rolled back (timeout)"}));
}

TEST_F(ClientPredictTest, UnreliableMessagesGoBothWaysOverTheReliableLink) {
  std::vector<std::string> heard;
  ChannelId pos = 0;  // the handler answers on it
  pos = DeclareSayOf(
      ChannelKind::kUnreliable, "pos",
      [&](Session& s, std::span<Value> args) {
        heard.push_back(flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
        (void)net_->Send(pos, s.id(), SayPayload("seen " + heard.back()));
      },
      /*latest_wins=*/true);
  Listen();
  ASSERT_TRUE(Connect());
  const std::uint16_t id = Channel("pos");
  for (const char* text : {"a", "b", "c"}) {
    const std::vector<std::uint8_t> p = SayPayload(text);
    ASSERT_EQ(molt_client_intent(client_, id, p.data(), p.size()), MOLT_OK) << Error();
  }
  ASSERT_TRUE(Pump([&] { return journal_.events.size() == 3; }));
  EXPECT_EQ(heard, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(journal_.events, (std::vector<std::string>{"seen a", "seen b", "seen c"}));
  const std::vector<std::uint8_t> big(901, 0);
  EXPECT_EQ(molt_client_intent(client_, id, big.data(), big.size()), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(),
            "a payload of 901 bytes exceeds the 900-byte cap of channel \"pos\" (unreliable "
            "payloads fit one datagram)");
}

}  // namespace
}  // namespace molt::kernel::net

namespace molt::kernel::net {
namespace {

// The same over a datagram link: a server with net.udp offers one in its Welcome, the client
// opens it, and its predicted intents and the server's unreliable events travel by it.
TEST_F(ClientPredictTest, OverADatagramLinkPredictionsAndUnreliableEventsGoByUdp) {
  Teardown();
  NetOptions o = NoResume();
  o.udp = "127.0.0.1:0";
  Boot(std::move(o));
  DeclareMove();
  const ChannelId pos = DeclareSayOf(ChannelKind::kUnreliable, "pos", nullptr, true);
  Listen();
  ASSERT_TRUE(Connect());
  ASSERT_EQ(molt_client_on_resolved(client_, OnResolved, &resolved), MOLT_OK);
  // The link comes up within a few steps (ENet's handshake, then the sealed Ping binds it).
  ASSERT_TRUE(Pump([&] { return net_->datagrams().counts().opened >= 1; }));
  const std::uint16_t move = Channel("move");
  Predict(move, "north");
  Predict(move, "east");
  ASSERT_TRUE(Pump([&] { return resolved.log.size() == 2; }));
  EXPECT_EQ(resolved.log, (std::vector<std::string>{"1 accepted", "2 accepted"}));
  EXPECT_EQ(moves, (std::vector<std::string>{"north", "east"}));
  EXPECT_GE(net_->datagrams().counts().opened, 3u);  // the Ping and both moves
  // One descriptor to poll for both links: it wakes for the event's datagram.
  EXPECT_EQ(molt_client_socket_events(client_), MOLT_CLIENT_WAIT_READ);
  ASSERT_TRUE(net_->Broadcast(pos, SayPayload("here")).ok());
  kernel_->loop().io().restart();
  kernel_->loop().RunFor(std::chrono::milliseconds(5));
  pollfd p{molt_client_socket(client_), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 5000), 1);
  EXPECT_EQ(molt_client_wait(client_, 5), MOLT_OK);
  ASSERT_TRUE(Pump([&] { return !journal_.events.empty(); }));
  EXPECT_EQ(journal_.events, std::vector<std::string>{"here"});
  EXPECT_GE(net_->datagrams().counts().sent, 2u);  // the acks (one frame or two) and the event
}

// What goes by the datagram link counts against the budgets the server applies to both links:
// an app that sends faster than they allow is paced (the rest waits in the reliable link's
// queue), never ended as a flood.
TEST_F(ClientPredictTest, DatagramsKeepToTheServersBudgetsLikeTheReliableLink) {
  Teardown();
  NetOptions o = NoResume();
  o.udp = "127.0.0.1:0";
  o.messages_per_tick = 4;  // 240 a second at 60 Hz
  Boot(std::move(o));
  std::vector<std::string> heard;
  // The channel's rate out of the way: the transport's budget is the test.
  DeclareSayOf(
      ChannelKind::kUnreliable, "pos",
      [&](Session&, std::span<Value> args) {
        heard.push_back(flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
      },
      /*latest_wins=*/false, /*rate=*/10000);
  Listen();
  ASSERT_TRUE(Connect());
  ASSERT_TRUE(Pump([&] { return net_->datagrams().counts().opened >= 1; }));
  const std::uint16_t pos = Channel("pos");
  for (int i = 0; i < 100; ++i) {  // in one frame of the app
    const std::vector<std::uint8_t> p = SayPayload(std::to_string(i));
    ASSERT_EQ(molt_client_intent(client_, pos, p.data(), p.size()), MOLT_OK) << Error();
  }
  ASSERT_TRUE(Pump([&] { return heard.size() == 100; }));
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED);
  EXPECT_EQ(net_->Snapshot().counters.transport_floods, 0u);
  EXPECT_GE(net_->datagrams().counts().opened, 2u);  // some went by UDP, the rest waited
}

// A resumed session gets a new key with its Welcome: the client opens a new datagram link under
// it, whose first datagram moves the session's link there, and predictions go by UDP again.
TEST_F(ClientPredictTest, AResumedSessionOpensANewDatagramLinkUnderItsNewKey) {
  Teardown();
  NetOptions o;  // a lost link's session waits 30 s for its client
  o.udp = "127.0.0.1:0";
  Boot(std::move(o));
  DeclareMove();
  Listen();
  molt::test::Relay relay(port_);  // the reliable link through a TCP relay the test can cut
  ASSERT_TRUE(Connect("ada", relay.port()));
  ASSERT_EQ(molt_client_on_resolved(client_, OnResolved, &resolved), MOLT_OK);
  ASSERT_TRUE(Pump([&] { return net_->datagrams().bound() == 1; }));
  const std::uint16_t move = Channel("move");
  Predict(move, "north");
  ASSERT_TRUE(Pump([&] { return resolved.log.size() == 1; }));
  const std::uint64_t session = molt_client_session(client_);
  const std::string first_link = net_->datagrams().address(session);

  relay.Cut();
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_RECONNECTING; }));
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; }));
  EXPECT_EQ(molt_client_session(client_), session);
  ASSERT_TRUE(Pump([&] { return net_->datagrams().counts().moves == 1; }));
  EXPECT_NE(net_->datagrams().address(session), first_link);
  const std::uint64_t opened = net_->datagrams().counts().opened;
  Predict(move, "east");
  ASSERT_TRUE(Pump([&] { return resolved.log.size() == 2; }));
  EXPECT_EQ(resolved.log, (std::vector<std::string>{"1 accepted", "2 accepted"}));
  EXPECT_EQ(moves, (std::vector<std::string>{"north", "east"}));
  EXPECT_GT(net_->datagrams().counts().opened, opened);  // by UDP
  EXPECT_EQ(net_->datagrams().counts().refused_total(), 0u);
}

}  // namespace
}  // namespace molt::kernel::net
