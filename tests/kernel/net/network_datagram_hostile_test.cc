// SPDX-License-Identifier: Apache-2.0
// Hostile datagrams at the real UDP port (net.udp on loopback), with a session joined over TCP
// and its datagram link bound by a real ENet client: garbage before any ENet handshake, sealed
// datagrams replayed from the same and from other addresses, truncated and padded ones, ones
// under a wrong key or naming another session or none, and the server's own reflected back.
// After each, the session is still there and still bound to its ENet client (its unreliable
// events and predicted intents' acks still come by UDP), no handler saw a frame, and the refusal
// is counted by its reason. A fresh datagram from a new address moves the link (a NAT rebinding).
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "datagram_net_fixture.h"

namespace molt::kernel::net {
namespace {

using molt::wire::DatagramSeal;

class HostileDatagramTest : public DatagramNetTest {
 protected:
  // "move" (predicted) and "pos" (unreliable, both ways), each handler recording what it took;
  // then ada joins over TCP and binds her datagram link with a first move.
  void SetUp() override {
    DatagramNetTest::SetUp();
    move_ = Declare("move", ChannelKind::kPredicted);
    pos_ = Declare("pos", ChannelKind::kUnreliable);
    Listen();
    const Joined ada = Join("ada");
    session_ = ada.session;
    key_ = ada.key;
    auto seal = DatagramSeal::Create(key_, session_, DatagramSeal::End::kClient);
    ASSERT_TRUE(seal.ok());
    seal_.emplace(std::move(seal).value());
    ada_ = &Connect();
    first_ = seal_->Seal(IntentFrame(move_, "bind", ++seq_));
    ada_->Send(first_, 1);
    ASSERT_TRUE(Pump([&] { return taken_.size() == 1 && !ada_->received.empty(); }));
    address_ = net_->datagrams().address(session_);
    ASSERT_EQ(address_, "127.0.0.1:" + std::to_string(ada_->port()));
    base_ = net_->datagrams().counts();
    udp_base_ = net_->Snapshot().udp;
  }

  ChannelId Declare(const std::string& name, ChannelKind kind) {
    ChannelSpec spec;
    spec.name = name;
    spec.kind = kind;
    spec.schema = "molt.test.Say";
    spec.verify = VerifySay;
    spec.open = true;
    spec.rate = std::numeric_limits<double>::infinity();  // the tests send bursts
    spec.on_intent = [this, name](Session&, std::span<Value> args) {
      taken_.push_back(name + ":" +
                       flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
    };
    auto id = net_->channels().Declare(std::move(spec));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? id.value() : 0;
  }

  std::uint64_t Refused(DatagramRefusal r) const {
    return net_->datagrams().counts().refused_for(r) - base_.refused_for(r);
  }
  std::uint64_t RefusedTotal() const {
    return net_->datagrams().counts().refused_total() - base_.refused_total();
  }
  // Refusals and ENet's own datagrams are processed when the server's loop runs: pump until
  // `n` more datagrams were refused by the links.
  bool PumpRefusals(std::uint64_t n) {
    return Pump([&] { return RefusedTotal() >= n; }) && RefusedTotal() == n;
  }

  // The frame inside `datagram` as ada's client opens it, or nullptr.
  const w::Envelope* OpenAtAda(const std::vector<std::uint8_t>& datagram) {
    auto frame = seal_->Open(datagram, &scratch_);
    return frame.ok() ? w::GetSizePrefixedEnvelope(frame->data()) : nullptr;
  }

  // The session is there, its link bound to ada's ENet client as at first, and it works both
  // ways by UDP: a fresh move reaches the handler and its ack comes back; an unreliable event
  // reaches ada. `taken` handler calls so far are expected (hostile ones added none).
  void ExpectStillBoundAndWorking(std::size_t taken) {
    ASSERT_NE(net_->sessions().Get(session_), nullptr) << "the session ended";
    EXPECT_EQ(net_->datagrams().address(session_), address_) << "the datagram peer moved";
    EXPECT_EQ(net_->datagrams().counts().moves, base_.moves);
    ASSERT_EQ(taken_.size(), taken) << "a hostile datagram reached a handler";
    const std::size_t had = ada_->received.size();
    const std::uint32_t seq = ++seq_;
    ada_->Send(seal_->Seal(IntentFrame(move_, "check", seq)), 1);
    ASSERT_TRUE(net_->Send(pos_, session_, SayPayload("tick")).ok());
    bool acked = false;
    bool evented = false;
    ASSERT_TRUE(Pump([&] {
      for (std::size_t i = had; i < ada_->received.size(); ++i) {
        if (const w::Envelope* e = OpenAtAda(ada_->received[i])) {
          if (e->body_type() == w::Body::Acks && e->body_as_Acks()->accepted() != nullptr) {
            for (std::uint32_t s : *e->body_as_Acks()->accepted()) {
              acked = acked || s == seq;
            }
          }
          if (e->body_type() == w::Body::Event && e->body_as_Event()->channel() == pos_) {
            evented = true;
          }
        }
      }
      return acked && evented && taken_.size() == taken + 1;
    })) << "acked "
        << acked << ", event " << evented;
    EXPECT_EQ(taken_.back(), "move:check");
    EXPECT_EQ(taken_.size(), taken + 1);
  }

  ChannelId move_ = 0;
  ChannelId pos_ = 0;
  std::uint64_t session_ = 0;
  std::vector<std::uint8_t> key_;
  std::optional<DatagramSeal> seal_;  // ada's client end
  EnetClient* ada_ = nullptr;
  std::string address_;              // ada's datagram peer as the server bound it
  std::vector<std::uint8_t> first_;  // ada's first sealed datagram (taken)
  std::uint32_t seq_ = 0;
  std::vector<std::string> taken_;  // "channel:text", every handler call
  std::vector<std::uint8_t> scratch_;
  DatagramLinks::Counts base_;
  DatagramTransport::Counts udp_base_;
};

// Raw UDP with no ENet handshake: ENet takes none of it (no peer, nothing reaches the links), and
// what it reads is counted stray. An empty datagram cannot be told from none and a 64 KB one
// does not fit ENet's buffer: neither is read as a datagram, and neither changes anything.
TEST_F(HostileDatagramTest, GarbageBeforeAnyHandshakeMakesNoPeerAndIsCountedStray) {
  RawUdp raw;
  const std::uint16_t port = net_->udp_port();
  std::mt19937 rng(20261203);
  std::vector<std::vector<std::uint8_t>> garbage;
  garbage.push_back({0x00});
  for (int i = 0; i < 40; ++i) {
    std::vector<std::uint8_t> d(1 + rng() % 1400);
    for (auto& byte : d) {
      byte = static_cast<std::uint8_t>(rng());
    }
    if (d.size() >= 2 &&
        ((d[0] << 8 | d[1]) & ENET_PROTOCOL_MAXIMUM_PEER_ID) == ENET_PROTOCOL_MAXIMUM_PEER_ID) {
      d[1] ^= 1;  // not a handshake's "no peer yet": ENet would parse its commands
    }
    garbage.push_back(std::move(d));
  }
  // ENet-framed, naming ada's peer slot (0) and ada's session bits: from another address.
  garbage.push_back({0x00, 0x00, 0x00, 0x00, 0x86, 0x00, 0x00, 0x01});
  garbage.push_back(first_);  // ada's sealed datagram without ENet's framing
  for (const auto& d : garbage) {
    ASSERT_TRUE(raw.Send(d, port));
  }
  ASSERT_TRUE(raw.Send({}, port));
  ASSERT_TRUE(raw.Send(std::vector<std::uint8_t>(65507, 0xA5), port));
  const std::uint64_t n = garbage.size();
  ASSERT_TRUE(Pump([&] { return net_->Snapshot().udp.stray - udp_base_.stray >= n; }));
  EXPECT_EQ(net_->Snapshot().udp.stray - udp_base_.stray, n);
  EXPECT_EQ(net_->Snapshot().datagram_peers, 1u) << "garbage made an ENet peer";
  EXPECT_EQ(RefusedTotal(), 0u) << "garbage reached the links";
  EXPECT_EQ(net_->datagrams().counts().opened, base_.opened);
  ExpectStillBoundAndWorking(1);
  EXPECT_EQ(net_->Snapshot().udp.stray - udp_base_.stray, n) << "ada's own ENet traffic is stray";
  // The stats say so by reason.
  EXPECT_NE(NetStatsJson(*net_).find("\"stray\":" + std::to_string(n)), std::string::npos)
      << NetStatsJson(*net_);
}

// The same from a connected ENet client that seals nothing: each packet is refused not_sealed,
// whatever its size (an empty one, 1 byte, random, 64 KB fragmented and reassembled by ENet).
TEST_F(HostileDatagramTest, UnsealedPacketsFromAnotherEnetClientAreRefusedNotSealed) {
  EnetClient& other = Connect();
  std::mt19937 rng(7);
  std::vector<std::vector<std::uint8_t>> packets = {{}, {DatagramSeal::kMagic}, {0x01}};
  for (int i = 0; i < 20; ++i) {
    std::vector<std::uint8_t> d(rng() % 1200);
    for (auto& byte : d) {
      byte = static_cast<std::uint8_t>(rng());
    }
    if (!d.empty()) {
      d[0] = d[0] == DatagramSeal::kMagic ? 0 : d[0];  // never ours by chance
    }
    packets.push_back(std::move(d));
  }
  packets.push_back(std::vector<std::uint8_t>(64 * 1024, 0));
  for (const auto& p : packets) {
    other.Send(p, 1);
  }
  ASSERT_TRUE(PumpRefusals(packets.size()));
  EXPECT_EQ(Refused(DatagramRefusal::kNotSealed), packets.size());
  EXPECT_TRUE(other.received.empty());
  ExpectStillBoundAndWorking(1);
}

// A sealed datagram ada sent, captured and replayed: from ada's own ENet client, and from
// another ENet client (another port: what a spoofer or an on-path attacker reaches). It
// authenticates but is a replay: refused, and the session's link does not move to the sender.
TEST_F(HostileDatagramTest, AReplayedDatagramIsRefusedAndNeverMovesTheSession) {
  ada_->Send(first_, 1);
  ada_->Send(first_, 0);
  EnetClient& other = Connect();
  other.Send(first_, 1);
  other.Send(first_, 0);
  ASSERT_TRUE(PumpRefusals(4));
  EXPECT_EQ(Refused(DatagramRefusal::kReplayed), 4u);
  EXPECT_TRUE(other.received.empty()) << "the replayer was answered";
  // A later one too, after more went by (inside the window, and past it).
  std::vector<std::vector<std::uint8_t>> sent;
  for (int i = 0; i < 70; ++i) {
    sent.push_back(seal_->Seal(IntentFrame(pos_, "p" + std::to_string(i), 100 + i)));
    ada_->Send(sent.back(), 1);
  }
  ASSERT_TRUE(Pump([&] { return taken_.size() == 71; }));
  other.Send(sent[69], 1);  // the newest
  other.Send(sent[40], 1);  // inside the window
  other.Send(sent[0], 1);   // older than the window
  ASSERT_TRUE(PumpRefusals(7));
  EXPECT_EQ(Refused(DatagramRefusal::kReplayed), 7u);
  EXPECT_EQ(net_->datagrams().address(session_), address_);
  ExpectStillBoundAndWorking(71);
}

// Every prefix of a fresh sealed datagram, and the same padded: none opens (short ones are not
// sealed at all, the others do not authenticate), none moves the window: the whole datagram
// sent afterwards still opens, once.
TEST_F(HostileDatagramTest, TruncatedAndPaddedDatagramsAreRefusedAndMoveNoWindow) {
  const std::vector<std::uint8_t> fresh = seal_->Seal(IntentFrame(move_, "whole", ++seq_));
  ASSERT_GT(fresh.size(), DatagramSeal::kOverhead);
  for (std::size_t n = 0; n < fresh.size(); ++n) {
    ada_->Send(std::span(fresh).first(n), 1);
  }
  std::vector<std::uint8_t> padded = fresh;
  padded.push_back(0);
  ada_->Send(padded, 1);
  padded.resize(fresh.size() + 64 * 1024, 0x5A);
  ada_->Send(padded, 1);
  const std::uint64_t n = fresh.size() + 2;
  ASSERT_TRUE(PumpRefusals(n));
  EXPECT_EQ(Refused(DatagramRefusal::kNotSealed), DatagramSeal::kOverhead);
  EXPECT_EQ(Refused(DatagramRefusal::kUnauthenticated), fresh.size() - DatagramSeal::kOverhead + 2);
  EXPECT_EQ(taken_.size(), 1u);
  ada_->Send(fresh, 1);
  ASSERT_TRUE(Pump([&] { return taken_.size() == 2; }));
  EXPECT_EQ(taken_.back(), "move:whole");
  ada_->Send(fresh, 1);
  ASSERT_TRUE(PumpRefusals(n + 1));
  EXPECT_EQ(Refused(DatagramRefusal::kReplayed), 1u);
  ExpectStillBoundAndWorking(2);
}

// Under a wrong key; under ada's key but naming bob's session (whose key opens it: it does not);
// ada's header rewritten to bob's id; naming a session that does not exist. From ada's client
// and from bob's own: nothing binds, nothing moves.
TEST_F(HostileDatagramTest, WrongKeysAndOtherSessionsIdsAreRefused) {
  const Joined bob = Join("bob");
  const std::vector<std::uint8_t> frame = IntentFrame(move_, "forged", 900);
  auto stranger =
      DatagramSeal::Create(std::vector<std::uint8_t>(32, 9), session_, DatagramSeal::End::kClient);
  ASSERT_TRUE(stranger.ok());
  for (int i = 0; i < 4; ++i) {
    (void)stranger->Seal(frame);  // past the counter ada took: refused for its key, not as a replay
  }
  auto as_bob = DatagramSeal::Create(key_, bob.session, DatagramSeal::End::kClient);
  auto nobody = DatagramSeal::Create(key_, 0xDEADBEEFull, DatagramSeal::End::kClient);
  ASSERT_TRUE(stranger.ok() && as_bob.ok() && nobody.ok());
  std::vector<std::uint8_t> renamed = seal_->Seal(frame);
  const std::vector<std::uint8_t> bob_id =
      DatagramSeal::Create(bob.key, bob.session, DatagramSeal::End::kClient)->Seal(frame);
  std::copy(bob_id.begin() + 1, bob_id.begin() + 9, renamed.begin() + 1);  // bob's id, ada's seal
  EnetClient& bobs = Connect();
  for (EnetClient* from : {ada_, &bobs}) {
    from->Send(stranger->Seal(frame), 1);
    from->Send(as_bob->Seal(frame), 1);
    from->Send(renamed, 1);
    from->Send(nobody->Seal(frame), 1);
  }
  ASSERT_TRUE(PumpRefusals(8));
  EXPECT_EQ(Refused(DatagramRefusal::kUnauthenticated), 6u);
  EXPECT_EQ(Refused(DatagramRefusal::kUnknownSession), 2u);
  EXPECT_EQ(net_->datagrams().address(bob.session), "") << "bob's link bound by a forgery";
  EXPECT_NE(net_->sessions().Get(bob.session), nullptr);
  EXPECT_TRUE(bobs.received.empty());
  ExpectStillBoundAndWorking(1);
}

// The server's own sealed ack sent back to it (by ada's client and by another): the directions'
// keys differ, so it does not open.
TEST_F(HostileDatagramTest, AReflectedDatagramDoesNotOpen) {
  // The server's ack had its counter 1, which ada's own first datagram took: reflected, it would
  // be refused as a replay before its key is tried. Events bring the server's counter past it.
  const std::size_t had = ada_->received.size();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(net_->Send(pos_, session_, SayPayload("e" + std::to_string(i))).ok());
  }
  ASSERT_TRUE(Pump([&] { return ada_->received.size() >= had + 3; }));
  const std::vector<std::uint8_t> reflected = ada_->received.back();
  ASSERT_NE(OpenAtAda(reflected), nullptr) << "the server's event, as ada's client opens it";
  ada_->Send(reflected, 1);
  EnetClient& other = Connect();
  other.Send(reflected, 0);
  ASSERT_TRUE(PumpRefusals(2));
  EXPECT_EQ(Refused(DatagramRefusal::kUnauthenticated), 2u);
  EXPECT_TRUE(other.received.empty());
  ExpectStillBoundAndWorking(1);
}

// A NAT rebinding: ada's client, from a new socket (a new port), sends a fresh datagram under its
// key: the session's link moves there, its old ENet peer is dropped, and what the server sends
// goes to the new address.
TEST_F(HostileDatagramTest, AFreshDatagramFromANewAddressMovesTheLink) {
  EnetClient& moved = Connect();
  ASSERT_NE(moved.port(), ada_->port());
  moved.Send(seal_->Seal(IntentFrame(move_, "rebound", ++seq_)), 1);
  ASSERT_TRUE(Pump([&] { return taken_.size() == 2 && !moved.received.empty(); }));
  EXPECT_EQ(net_->datagrams().counts().moves, base_.moves + 1);
  EXPECT_EQ(net_->datagrams().address(session_), "127.0.0.1:" + std::to_string(moved.port()));
  EXPECT_EQ(RefusedTotal(), 0u);
  const w::Envelope* ack = OpenAtAda(moved.received.back());
  ASSERT_NE(ack, nullptr);
  EXPECT_EQ(ack->body_type(), w::Body::Acks);
  ASSERT_TRUE(Pump([&] { return net_->Snapshot().datagram_peers == 1; }))
      << "the old ENet peer was not dropped";
  const std::size_t at_old = ada_->received.size();
  ASSERT_TRUE(net_->Send(pos_, session_, SayPayload("there")).ok());
  const std::size_t at_new = moved.received.size();
  ASSERT_TRUE(Pump([&] { return moved.received.size() > at_new; }));
  const w::Envelope* event = OpenAtAda(moved.received.back());
  ASSERT_NE(event, nullptr);
  EXPECT_EQ(event->body_type(), w::Body::Event);
  EXPECT_EQ(ada_->received.size(), at_old);
}

// An empty UDP datagram reads as "nothing more" to ENet, which stops reading there, and one over
// its 4 KB buffer fails the read: what came behind them must still be read, though nothing else
// arrives to wake the port (no ENet peer, so no service timer either).
TEST_F(DatagramNetTest, WhatFollowsAnEmptyOrOversizedDatagramIsStillRead) {
  Listen();
  RawUdp raw;
  const std::uint16_t port = net_->udp_port();
  ASSERT_TRUE(raw.Send({}, port));
  ASSERT_TRUE(raw.Send(std::vector<std::uint8_t>(65507, 0xA5), port));  // ENet's read fails
  ASSERT_TRUE(raw.Send(std::vector<std::uint8_t>{1, 2, 3}, port));
  ASSERT_TRUE(raw.Send({}, port));
  ASSERT_TRUE(raw.Send(std::vector<std::uint8_t>{4, 5, 6}, port));
  EXPECT_TRUE(Pump([&] { return net_->Snapshot().udp.received == 2; }, std::chrono::seconds(1)))
      << "read " << net_->Snapshot().udp.received << " of 2";
  // And an ENet client behind another empty one still gets its handshake answered.
  ASSERT_TRUE(raw.Send({}, port));
  EnetClient& c = Connect();
  EXPECT_TRUE(c.connected);
  EXPECT_EQ(net_->Snapshot().udp.stray, 2u);
}

}  // namespace
}  // namespace molt::kernel::net
