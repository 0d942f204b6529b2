// SPDX-License-Identifier: Apache-2.0
// KitPeer (kernel/src/testkit/kit_peer.h): the test kit's in-process client, fed the frames a
// server writes, built here: what each becomes (the session, a refusal, a message, an owed pong,
// a replica's fields), with no network around it.
#include "kernel/src/testkit/kit_peer.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::testkit {
namespace {

namespace w = ::molt::wire;
using Frame = std::vector<std::uint8_t>;

Frame Bytes(std::span<const std::uint8_t> frame) { return {frame.begin(), frame.end()}; }

Frame Welcome(std::uint64_t session) {
  flatbuffers::FlatBufferBuilder b;
  w::WelcomeBuilder welcome(b);
  welcome.add_session_id(session);
  return Bytes(w::FinishFrame(b, w::Body::Welcome, welcome.Finish().Union()));
}

Frame Refuse(w::RefuseReason reason, const char* text) {
  flatbuffers::FlatBufferBuilder b;
  return Bytes(
      w::FinishFrame(b, w::Body::Refuse, w::CreateRefuseDirect(b, reason, text, 0).Union()));
}

Frame Event(std::uint16_t channel, const std::vector<std::uint8_t>& payload) {
  flatbuffers::FlatBufferBuilder b;
  return Bytes(w::FinishFrame(b, w::Body::Event,
                              w::CreateEvent(b, channel, w::PayloadVector(b, payload)).Union()));
}

KitPeer Peer() {
  return KitPeer("10.0.0.1", "ada", [](std::uint16_t id) {
    return id == 7 ? std::string("chat.Said") : std::string();
  });
}

TEST(KitPeerTest, AWelcomeGivesItsSession) {
  KitPeer peer = Peer();
  EXPECT_EQ(peer.state(), KitPeer::State::kHandshake);
  peer.Write(Welcome(42));
  EXPECT_EQ(peer.state(), KitPeer::State::kWelcomed);
  EXPECT_EQ(peer.id(), 42u);
  EXPECT_FALSE(peer.Next().has_value()) << "a Welcome is not a message a test reads";
}

TEST(KitPeerTest, ARefusalIsAStatusWhoseCodeSaysHowToReadIt) {
  struct Case {
    w::RefuseReason reason;
    Status::Code code;
  };
  for (const Case& c : {Case{w::RefuseReason::RateLimited, Status::Code::kRateLimited},
                        Case{w::RefuseReason::Starting, Status::Code::kFailedPrecondition},
                        Case{w::RefuseReason::ShuttingDown, Status::Code::kFailedPrecondition},
                        Case{w::RefuseReason::AuthFailed, Status::Code::kRejected}}) {
    KitPeer peer = Peer();
    peer.Write(Refuse(c.reason, "no"));
    EXPECT_EQ(peer.state(), KitPeer::State::kRefused);
    EXPECT_EQ(peer.refusal().code(), c.code);
    EXPECT_EQ(peer.refusal().message(), std::string("the server refused ada's Hello: ") +
                                            w::EnumNameRefuseReason(c.reason) + ": no");
    peer.Close(false);
    EXPECT_EQ(peer.state(), KitPeer::State::kRefused) << "the close after a Refuse keeps it";
  }
}

TEST(KitPeerTest, APingLeavesItsPongOwedUntilTaken) {
  KitPeer peer = Peer();
  flatbuffers::FlatBufferBuilder b;
  peer.Write(w::FinishFrame(b, w::Body::Ping, w::CreatePing(b, 9, 12345).Union()));
  std::vector<Frame> owed = peer.TakeOwed();
  ASSERT_EQ(owed.size(), 1u);
  std::vector<std::uint64_t> scratch;
  const w::Envelope* e = w::GetSizePrefixedEnvelope(w::Aligned(owed[0], scratch).data());
  ASSERT_EQ(e->body_type(), w::Body::Pong);
  EXPECT_EQ(e->body_as_Pong()->seq(), 9u);
  EXPECT_EQ(e->body_as_Pong()->time_ns(), 12345u);
  EXPECT_TRUE(peer.TakeOwed().empty());
}

TEST(KitPeerTest, EventsResponsesErrorsAndTheByeAreReadInOrder) {
  KitPeer peer = Peer();
  peer.Write(Welcome(1));
  peer.Write(Event(7, {1, 2, 3}));
  {
    flatbuffers::FlatBufferBuilder b;
    const std::vector<std::uint8_t> answer = {'o', 'k'};
    peer.Write(
        w::FinishFrame(b, w::Body::Response,
                       w::CreateResponseDirect(b, 3, MOLT_ERR_REJECTED, &answer, 1500).Union()));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    peer.Write(w::FinishFrame(
        b, w::Body::Error,
        w::CreateErrorDirect(b, w::RejectReason::RateLimited, 7, 250, "slow down").Union()));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    peer.Write(
        w::FinishFrame(b, w::Body::Bye, w::CreateByeDirect(b, "Kicked", "cheating").Union()));
  }
  EXPECT_EQ(peer.state(), KitPeer::State::kEnded);

  std::optional<KitMessage> m = peer.Next();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->kind, MOLT_TESTKIT_EVENT);
  EXPECT_EQ(m->channel, "chat.Said");
  EXPECT_EQ(m->payload, (std::vector<std::uint8_t>{1, 2, 3}));
  m = peer.Next();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->kind, MOLT_TESTKIT_RESPONSE);
  EXPECT_EQ(m->request_id, 3u);
  EXPECT_EQ(m->status, MOLT_ERR_REJECTED);
  EXPECT_EQ(m->payload, (std::vector<std::uint8_t>{'o', 'k'}));
  EXPECT_DOUBLE_EQ(m->retry_after, 1.5);
  m = peer.Next();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->kind, MOLT_TESTKIT_ERROR);
  EXPECT_EQ(m->channel, "chat.Said");
  EXPECT_EQ(m->reason, "rate_limited");
  EXPECT_EQ(m->text, "slow down");
  EXPECT_DOUBLE_EQ(m->retry_after, 0.25);
  m = peer.Next();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->kind, MOLT_TESTKIT_BYE);
  EXPECT_EQ(m->reason, "Kicked");
  EXPECT_EQ(m->text, "cheating");
  EXPECT_FALSE(peer.Next().has_value());
}

TEST(KitPeerTest, AFrameThatDoesNotVerifyIsLoggedAndDropped) {
  std::vector<std::string> lines;
  Logger::Registration capture = Logger::Get().Capture(
      [&lines](std::string_view line, LogLevel) { lines.emplace_back(line); });
  KitPeer peer = Peer();
  const Frame junk = {8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  peer.Write(junk);
  capture.Remove();
  EXPECT_FALSE(peer.Next().has_value());
  EXPECT_EQ(peer.state(), KitPeer::State::kHandshake);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(
      lines[0].find("[testkit] the server wrote a frame that does not verify (12 bytes) to ada"),
      std::string::npos)
      << lines[0];
}

TEST(KitPeerTest, ReplicasAreAppliedAndARemovedOneIsGone) {
  KitPeer peer = Peer();
  auto replica = [&peer](w::ReplicaUpdateKind kind, std::int64_t score) {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<w::ReplicaFieldInfo>> fields = {
        w::CreateReplicaFieldInfoDirect(b, "score", w::ReplicaFieldType::Int)};
    std::vector<flatbuffers::Offset<w::ReplicaValue>> values = {
        w::CreateReplicaValue(b, 0, score, 0)};
    const bool snapshot = kind == w::ReplicaUpdateKind::Snapshot;
    peer.Write(w::FinishFrame(
        b, w::Body::Replica,
        w::CreateReplicaDirect(b, 5, kind, snapshot ? "board" : nullptr,
                               snapshot ? &fields : nullptr,
                               kind == w::ReplicaUpdateKind::Remove ? nullptr : &values)
            .Union()));
  };
  replica(w::ReplicaUpdateKind::Snapshot, 10);
  molt_value v{};
  ASSERT_TRUE(peer.ReplicaValue("board", "score", &v).ok());
  EXPECT_EQ(v.as.i, 10);
  replica(w::ReplicaUpdateKind::Delta, 11);
  ASSERT_TRUE(peer.ReplicaValue("board", "score", &v).ok());
  EXPECT_EQ(v.as.i, 11);
  replica(w::ReplicaUpdateKind::Remove, 0);
  EXPECT_FALSE(peer.ReplicaValue("board", "score", &v).ok());
}

}  // namespace
}  // namespace molt::kernel::testkit
