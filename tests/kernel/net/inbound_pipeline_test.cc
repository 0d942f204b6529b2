// SPDX-License-Identifier: Apache-2.0
// The inbound pipeline (kernel/src/net/inbound_pipeline.h) alone, on a manual clock, with
// connections that keep what is written to them: frames cut anywhere, the transport budgets and
// the frame cap, what is accepted before the Welcome, rejections answered or dropped, offences,
// pings and pongs.
#include "kernel/src/net/inbound_pipeline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "net_parts_fixture.h"
#include "test_client.h"

namespace molt::kernel::net {
namespace {

namespace w = ::molt::wire;
using molt::test::TestClient;
using std::chrono::milliseconds;

class InboundPipelineTest : public NetPartsTest {
 protected:
  // An intent channel that accepts any payload (Open) and counts what it handles.
  ChannelId DeclareIntent(const std::string& name, bool open = true) {
    ChannelSpec spec;
    spec.name = name;
    spec.kind = ChannelKind::kIntent;
    spec.schema = "test.Any";
    spec.verify = [](std::span<const std::uint8_t> p) { return !p.empty() && p[0] != 0xff; };
    spec.open = open;
    spec.on_intent = [this](Session&, std::span<Value> args) {
      handled_.emplace_back(static_cast<const char*>(args[0].as.ptr), args[0].size);
    };
    Result<ChannelId> id = channels_->Declare(std::move(spec));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }
  // A connection welcomed as `user` through the pipeline.
  MemoryPeer& Welcomed(const std::string& user) {
    MemoryPeer& p = Arrive();
    pipeline_->Receive(p, TestClient::HelloFrame(user));
    EXPECT_NE(p.session(), 0u);
    return p;
  }
  static std::vector<std::uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }
  static std::string ByeText(const MemoryPeer& p) {
    const w::Bye* bye = p.last()->body_as_Bye();
    return bye == nullptr ? "(not a bye)" : bye->reason()->str() + ": " + bye->text()->str();
  }

  std::vector<std::string> handled_;
};

TEST_F(InboundPipelineTest, FramesCutAtEveryByteAreEachHandledOnceInOrder) {
  BuildAll();
  const ChannelId say = DeclareIntent("chat.Say");
  MemoryPeer& ada = Welcomed("ada");
  std::vector<std::uint8_t> stream;
  for (const char* text : {"one", "two", "three"}) {
    const std::vector<std::uint8_t> f = TestClient::IntentFrame(say, Bytes(text));
    stream.insert(stream.end(), f.begin(), f.end());
  }
  for (std::uint8_t byte : stream) {
    pipeline_->Receive(ada, std::span(&byte, 1));
  }
  EXPECT_EQ(handled_, (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(stats_.intents_accepted, 3u);
  EXPECT_EQ(stats_.frames_in, 4u);  // the Hello too
}

TEST_F(InboundPipelineTest, AFrameOverTheCapEndsTheLinkAndATlsHelloIsNamed) {
  options_.max_frame_bytes = 200;
  BuildAll();
  MemoryPeer& ada = Welcomed("ada");
  const std::uint8_t big[4] = {201, 0, 0, 0};
  pipeline_->Receive(ada, big);
  EXPECT_EQ(ByeText(ada),
            "ProtocolError: a frame of 201 bytes exceeds the 200-byte cap "
            "(net.max_frame_bytes)");
  MemoryPeer& tls = Arrive();
  const std::uint8_t client_hello[5] = {0x16, 0x03, 0x01, 0x02, 0x00};
  pipeline_->Receive(tls, client_hello);
  EXPECT_EQ(ByeText(tls),
            "ProtocolError: the client started a TLS handshake, but this server speaks plain "
            "TCP: give moltd --tls-cert and --tls-key, or connect without TLS");
  EXPECT_EQ(stats_.transport_rejected[static_cast<std::size_t>(Reject::kFrameTooLarge)], 2u);
}

TEST_F(InboundPipelineTest, MoreMessagesThanTheBudgetAtOnceIsAFlood) {
  options_.messages_per_tick = 2;
  options_.budget_burst_ticks = 2;  // 4 at once
  BuildAll();
  const ChannelId say = DeclareIntent("chat.Say");
  MemoryPeer& ada = Welcomed("ada");  // the Hello took one
  std::vector<std::uint8_t> burst;
  for (int i = 0; i < 4; ++i) {
    const std::vector<std::uint8_t> f = TestClient::IntentFrame(say, Bytes("x"));
    burst.insert(burst.end(), f.begin(), f.end());
  }
  pipeline_->Receive(ada, burst);
  EXPECT_EQ(handled_.size(), 3u);
  EXPECT_EQ(ByeText(ada),
            "Flood: the transport budget (8192 bytes and 2 messages per tick) was exceeded");
  EXPECT_EQ(stats_.transport_floods, 1u);
}

TEST_F(InboundPipelineTest, BeforeTheWelcomeOnlyAHelloIsAccepted) {
  BuildAll();
  const ChannelId say = DeclareIntent("chat.Say");
  MemoryPeer& p = Arrive();
  pipeline_->Receive(p, TestClient::IntentFrame(say, Bytes("hi")));
  EXPECT_EQ(ByeText(p), "ProtocolError: expected a hello first");
  EXPECT_TRUE(handled_.empty());
  MemoryPeer& garbage = Arrive();
  const std::uint8_t junk[8] = {4, 0, 0, 0, 1, 2, 3, 4};
  pipeline_->Receive(garbage, junk);
  EXPECT_EQ(ByeText(garbage), "ProtocolError: the first frame is not a valid hello");
}

TEST_F(InboundPipelineTest, RejectedIntentsAreDroppedThenAnsweredWithErrorsThenTheOffenderEnds) {
  options_.offender_drop_first = 2;
  options_.offender_kick_after = 5;
  options_.error_frame_gap_seconds = 0;
  BuildAll();
  const ChannelId say = DeclareIntent("chat.Say");
  MemoryPeer& ada = Welcomed("ada");
  const std::vector<std::uint8_t> invalid = {0xff};
  const std::vector<std::uint8_t> bad = TestClient::IntentFrame(say, invalid);
  for (int i = 0; i < 4; ++i) {
    pipeline_->Receive(ada, bad);
  }
  EXPECT_EQ(ada.Kinds(), (std::vector<std::string>{"Welcome", "Error", "Error"}));
  const w::Error* e = ada.last()->body_as_Error();
  EXPECT_EQ(e->reason(), w::RejectReason::BadPayload);
  EXPECT_EQ(e->text()->str(), "the payload is not a valid test.Any");
  pipeline_->Receive(ada, bad);
  EXPECT_EQ(ByeText(ada), "Offender: 5 refused messages within 10 s");
  EXPECT_EQ(
      channels_->Find(say)->counters().rejected[static_cast<std::size_t>(Reject::kBadPayload)], 5u);
}

TEST_F(InboundPipelineTest, AChannelWithNoValidatorThatIsNotOpenRejectsEverything) {
  BuildAll();
  const ChannelId closed = DeclareIntent("chat.Closed", /*open=*/false);
  MemoryPeer& ada = Welcomed("ada");
  pipeline_->Receive(ada, TestClient::IntentFrame(closed, Bytes("hi")));
  EXPECT_TRUE(handled_.empty());
  EXPECT_EQ(
      channels_->Find(closed)->counters().rejected[static_cast<std::size_t>(Reject::kUnguarded)],
      1u);
  // A validator on its hook point guards it.
  Connection guard = kernel_->hooks().On("Intent.chat.Closed", [](HookContext&) { return true; });
  pipeline_->Receive(ada, TestClient::IntentFrame(closed, Bytes("hi")));
  EXPECT_EQ(handled_, std::vector<std::string>{"hi"});
}

TEST_F(InboundPipelineTest, ARequestOnAnUnknownChannelIsAnsweredNotFound) {
  BuildAll();
  MemoryPeer& ada = Welcomed("ada");
  pipeline_->Receive(ada, TestClient::RequestFrame(99, 5, Bytes("x")));
  const w::Response* r = ada.last()->body_as_Response();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->id(), 5u);
  EXPECT_EQ(r->status(), static_cast<int>(Status::Code::kNotFound));
  EXPECT_EQ(stats_.requests_rejected, 1u);
}

TEST_F(InboundPipelineTest, APingIsAnsweredAndAPongGivesTheSessionItsRoundTrip) {
  options_.ping_interval_seconds = 1;
  BuildAll();
  MemoryPeer& ada = Welcomed("ada");
  flatbuffers::FlatBufferBuilder b;
  pipeline_->Receive(ada, TestClient::Finish(b, w::Body::Ping, w::CreatePing(b, 3, 42).Union()));
  const w::Pong* pong = ada.last()->body_as_Pong();
  ASSERT_NE(pong, nullptr);
  EXPECT_EQ(pong->seq(), 3u);
  EXPECT_EQ(pong->time_ns(), 42u);
  Pass(milliseconds(1000));  // the housekeeping pings: seq 1, sent now
  const w::Ping* ping = ada.last()->body_as_Ping();
  ASSERT_NE(ping, nullptr);
  clock_.Advance(milliseconds(30));
  flatbuffers::FlatBufferBuilder c;
  pipeline_->Receive(
      ada,
      TestClient::Finish(c, w::Body::Pong, w::CreatePong(c, ping->seq(), ping->time_ns()).Union()));
  EXPECT_EQ(SessionOf(ada)->last_rtt(), milliseconds(30));
  EXPECT_EQ(SessionOf(ada)->rtt(), milliseconds(30));
}

}  // namespace
}  // namespace molt::kernel::net
