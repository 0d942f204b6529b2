// SPDX-License-Identifier: Apache-2.0
// libmolt_client's predicted intents and unreliable channels (client API 8) against an in-process
// server on loopback: each predicted intent resolved exactly once (accepted, rejected, timed out,
// or ended with the session), the pending ones listed for replay, and unreliable messages both
// ways over the reliable link.
#include <gtest/gtest.h>
#include <molt/client.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "client_fixture.h"

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
  ChannelSpec spec;
  spec.name = "pos";
  spec.kind = ChannelKind::kUnreliable;
  spec.schema = "molt.test.Say";
  spec.verify = VerifySay;
  spec.open = true;
  spec.latest_wins = true;
  ChannelId pos = 0;
  spec.on_intent = [&](Session& s, std::span<Value> args) {
    heard.push_back(flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
    (void)net_->Send(pos, s.id(), SayPayload("seen " + heard.back()));
  };
  Result<ChannelId> declared = net_->channels().Declare(std::move(spec));
  ASSERT_TRUE(declared.ok()) << declared.status().ToString();
  pos = *declared;
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
