// SPDX-License-Identifier: Apache-2.0
// Unreliable channels and predicted intents over a session's reliable link (wire 2.5): what the
// Welcome announces, latest-wins both ways, the payload cap, shedding behind a backlog, and the
// acks of predicted intents, one frame per read.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "net_fixture.h"

namespace molt::kernel::net {

using molt::test::Frame;
using molt::test::TestClient;
namespace w = ::molt::wire;
using namespace std::chrono_literals;

namespace {

class UnreliableTest : public NetTest {
 protected:
  // An unreliable channel carrying molt.test.Say; with `inbound`, clients send on it too and
  // `seen` collects the texts its handler took.
  ChannelId DeclareUnreliable(const std::string& name, bool latest_wins, bool inbound,
                              UnreliablePriority priority = UnreliablePriority::kLow) {
    ChannelSpec spec;
    spec.name = name;
    spec.kind = ChannelKind::kUnreliable;
    spec.schema = "molt.test.Say";
    spec.latest_wins = latest_wins;
    spec.priority = priority;
    if (inbound) {
      spec.verify = VerifySay;
      spec.open = true;
      spec.on_intent = [this](Session&, std::span<Value> args) {
        seen.push_back(flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
      };
    }
    auto id = net_->channels().Declare(std::move(spec));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? id.value() : 0;
  }
  // A predicted intent on molt.test.Say (texts of at most 8 bytes); its handler fails on "bad".
  ChannelId DeclareMove(const std::string& name) {
    ChannelSpec spec;
    spec.name = name;
    spec.kind = ChannelKind::kPredicted;
    spec.schema = "molt.test.Say";
    spec.verify = VerifySay;
    spec.rules = {FieldRule::MaxLength(0, "text", 8)};
    spec.on_intent = [this](Session&, std::span<Value> args) {
      const std::string text = flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str();
      if (text == "bad") {
        throw std::runtime_error("the handler broke");
      }
      if (text == "wall") {
        throw HandlerRefused{"a wall is in the way"};
      }
      seen.push_back(text);
    };
    auto id = net_->channels().Declare(std::move(spec));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? id.value() : 0;
  }
  static std::vector<std::uint8_t> SeqIntent(ChannelId channel, const std::string& text,
                                             std::uint32_t seq) {
    flatbuffers::FlatBufferBuilder b;
    return TestClient::Finish(
        b, w::Body::Intent,
        w::CreateIntent(b, channel, TestClient::Payload(b, SayPayload(text)), seq).Union());
  }
  static std::vector<std::uint32_t> Seqs(const flatbuffers::Vector<std::uint32_t>* v) {
    return v == nullptr ? std::vector<std::uint32_t>() : std::vector(v->begin(), v->end());
  }

  std::vector<std::string> seen;
};

TEST_F(UnreliableTest, TheWelcomeAnnouncesKindPriorityLatestWinsAndTheCap) {
  DeclareUnreliable("pos", true, false, UnreliablePriority::kHigh);
  DeclareMove("move");
  Listen();
  Run([&] {
    TestClient c(port_);
    Frame f = c.Hello("ada");
    ASSERT_EQ(f.type(), w::Body::Welcome);
    const auto* channels = f.envelope()->body_as_Welcome()->channels();
    ASSERT_EQ(channels->size(), 2u);
    const w::ChannelInfo* pos = channels->Get(0);
    EXPECT_EQ(pos->kind(), w::ChannelKind::Unreliable);
    EXPECT_EQ(pos->priority(), w::ChannelPriority::High);
    EXPECT_TRUE(pos->latest_wins());
    EXPECT_EQ(pos->max_payload_bytes(), 900u);
    const w::ChannelInfo* move = channels->Get(1);
    EXPECT_EQ(move->kind(), w::ChannelKind::PredictedIntent);
    EXPECT_EQ(move->max_payload_bytes(), 0u);
  });
}

TEST_F(UnreliableTest, LatestWinsTakesOnlyWhatIsNewerThanTheNewestTaken) {
  const ChannelId pos = DeclareUnreliable("pos", true, true);
  const ChannelId any = DeclareUnreliable("chat", false, true);
  Listen();
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    for (auto [text, seq] : std::vector<std::pair<std::string, std::uint32_t>>{
             {"p5", 5}, {"p3", 3}, {"p6", 6}, {"p6again", 6}, {"p7", 7}}) {
      c.SendRaw(SeqIntent(pos, text, seq));
    }
    // Without latest-wins every message is taken, in the order it came.
    c.SendRaw(SeqIntent(any, "c2", 2));
    c.SendRaw(SeqIntent(any, "c1", 1));
    // Serial-number order: newer is less than 2^31 ahead, so the seq may wrap past 0xFFFFFFFF.
    c.SendRaw(SeqIntent(pos, "p-half", 0x70000000u));
    c.SendRaw(SeqIntent(pos, "p-top", 0xE0000000u));
    c.SendRaw(SeqIntent(pos, "p-wrapped", 2));
    c.Bye();
    c.WaitClosed();
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"p5", "p6", "p7", "c2", "c1", "p-half", "p-top",
                                            "p-wrapped"}));
  EXPECT_EQ(net_->channels().Find(pos)->counters().stale, 2u);
  EXPECT_EQ(net_->channels().Find(pos)->counters().rejected_total(), 0u);  // no offence
}

TEST_F(UnreliableTest, APayloadOverTheCapOrOnAChannelThatTakesNothingIsRejected) {
  const ChannelId pos = DeclareUnreliable("pos", false, true);
  const ChannelId out = DeclareUnreliable("out", false, false);
  Listen();
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.SendRaw(SeqIntent(pos, std::string(901, 'x'), 1));
    c.SendRaw(SeqIntent(out, "hi", 1));
    c.SendRaw(SeqIntent(pos, "fits", 2));
    c.Bye();
    c.WaitClosed();
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"fits"}));
  EXPECT_EQ(net_->channels().Find(pos)->counters().rejected[static_cast<int>(Reject::kBadPayload)],
            1u);
  EXPECT_EQ(net_->stats().transport_rejected[static_cast<int>(Reject::kUnknownChannel)], 1u)
      << "channel " << out << " takes nothing from clients";
}

TEST_F(UnreliableTest, EventsCarryAChannelSeqThatNeverRestartsAndTheCapHolds) {
  ChannelId pos = DeclareUnreliable("pos", true, false);
  // The client's intent makes the server send twice, then take the channel down and declare it
  // again (as a plugin that stops and starts), and send once more.
  const ChannelId go = DeclareSay("go", true, 0, [&](Session& s, std::span<Value>) {
    EXPECT_TRUE(net_->Send(pos, s.id(), SayPayload("a")).ok());
    EXPECT_TRUE(net_->Broadcast(pos, SayPayload("b")).ok());
    EXPECT_EQ(net_->Send(pos, s.id(), std::vector<std::uint8_t>(901, 0)).message(),
              "unreliable \"pos\": a payload of 901 bytes exceeds the 900-byte cap (send it on an "
              "event channel)");
    EXPECT_TRUE(net_->channels().Remove(pos).ok());
    pos = DeclareUnreliable("pos", true, false);
    EXPECT_TRUE(net_->Send(pos, s.id(), SayPayload("c")).ok());
  });
  Listen();
  std::vector<std::uint32_t> seqs;
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Intent(go, SayPayload("go"));
    for (int i = 0; i < 3; ++i) {
      Frame f = c.NextOf(w::Body::Event);
      ASSERT_EQ(f.type(), w::Body::Event);
      seqs.push_back(f.envelope()->body_as_Event()->seq());
    }
  });
  EXPECT_EQ(seqs, (std::vector<std::uint32_t>{1, 2, 3}));
}

TEST_F(UnreliableTest, ALinkBackedUpIsShedLowFirstAndNeverKickedForIt) {
  const ChannelId low = DeclareUnreliable("low", false, false, UnreliablePriority::kLow);
  const ChannelId high = DeclareUnreliable("high", false, false, UnreliablePriority::kHigh);
  Listen();
  TestClient c(port_, 4096);  // a small window, and it reads nothing: a backlog builds
  SessionId id = 0;
  Run([&] {
    Frame welcome = c.Hello("ada");
    ASSERT_EQ(welcome.type(), w::Body::Welcome);
    id = welcome.envelope()->body_as_Welcome()->session_id();
  });
  // The loop does not run here: every frame queued waits in the link's queue.
  const std::vector<std::uint8_t> big(800, 1);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(net_->Send(low, id, big).ok());
    ASSERT_TRUE(net_->Send(high, id, big).ok());
  }
  const ChannelCounters& l = net_->channels().Find(low)->counters();
  const ChannelCounters& h = net_->channels().Find(high)->counters();
  EXPECT_GT(l.shed, 0u);
  EXPECT_EQ(h.shed, 0u);  // High goes on up to half the slow-reader limit
  EXPECT_LT(l.events_sent, h.events_sent);
  EXPECT_NE(net_->sessions().Get(id), nullptr);
}

TEST_F(UnreliableTest, PredictedIntentsAreAckedAcceptedOrRejectedInOneFramePerRead) {
  const ChannelId move = DeclareMove("move");
  Listen();
  std::vector<std::uint32_t> accepted, rejected;
  int acks_frames = 0;
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    // One write, so the server reads the three together: ok, a handler's error, a broken rule.
    std::vector<std::uint8_t> burst;
    for (auto [text, seq] : std::vector<std::pair<std::string, std::uint32_t>>{
             {"ok", 1}, {"bad", 2}, {"much-too-long", 3}, {"wall", 4}}) {
      const std::vector<std::uint8_t> f = SeqIntent(move, text, seq);
      burst.insert(burst.end(), f.begin(), f.end());
    }
    c.SendRaw(burst);
    while (accepted.size() + rejected.size() < 4) {
      Frame f = c.NextOf(w::Body::Acks);
      ASSERT_EQ(f.type(), w::Body::Acks) << "no acks came";
      ++acks_frames;
      const w::Acks* a = f.envelope()->body_as_Acks();
      for (std::uint32_t s : Seqs(a->accepted())) {
        accepted.push_back(s);
      }
      for (std::uint32_t s : Seqs(a->rejected())) {
        rejected.push_back(s);
      }
    }
    c.Bye();
    c.WaitClosed();
  });
  EXPECT_EQ(accepted, (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(rejected, (std::vector<std::uint32_t>{2, 3, 4}));
  EXPECT_EQ(acks_frames, 1);
  EXPECT_EQ(seen, (std::vector<std::string>{"ok"}));
  // The handler's error is an error; its refusal (a game rule) is a rejection like a rule's.
  const ChannelCounters& c = net_->channels().Find(move)->counters();
  EXPECT_EQ(c.handler_errors, 1u);
  EXPECT_EQ(c.rejected[static_cast<int>(Reject::kRefused)], 1u);
  EXPECT_EQ(c.rejected[static_cast<int>(Reject::kRuleViolated)], 1u);
  EXPECT_EQ(c.accepted, 2u);  // ok, and the one whose handler broke (as for any intent)
}

}  // namespace
}  // namespace molt::kernel::net
