// SPDX-License-Identifier: Apache-2.0
// Sender (kernel/src/client/sender.h) over a link with no socket: the app's intents and requests
// checked before they are queued, each refusal naming its reason (the channel, the frame size,
// the queue's room, the channel's rate), and a request opened with the channel's timeout.
#include "kernel/src/client/sender.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "molt_wire_generated.h"

namespace molt::kernel::client {
namespace {

namespace w = ::molt::wire;

// A link's owner that hears nothing: the sender's link never connects.
class QuietSink final : public LinkSink {
 public:
  void OnLinked() override {}
  void OnReceived() override {}
  void OnFrame(std::span<const std::uint8_t>) override {}
  void OnLinkLost(const std::string&) override {}
  void OnLinkRefused(const std::string&) override {}
  bool Welcomed() const override { return false; }
};

class SenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<w::ChannelInfo>> infos = {
        w::CreateChannelInfoDirect(b, 1, "chat.Say", w::ChannelKind::Intent, nullptr, 100, 100),
        w::CreateChannelInfoDirect(b, 2, "shop.Buy", w::ChannelKind::Request, nullptr, 1, 1, 2000),
        w::CreateChannelInfoDirect(b, 3, "pos", w::ChannelKind::Unreliable, nullptr, 100, 100, 0,
                                   w::ChannelPriority::Low, true, 900),
        w::CreateChannelInfoDirect(b, 4, "move", w::ChannelKind::PredictedIntent, nullptr, 100,
                                   100)};
    b.Finish(w::CreateChannelsDirect(b, 0, &infos));
    const auto* v = flatbuffers::GetRoot<w::Channels>(b.GetBufferPointer())->channels();
    channels_.Set({v->begin(), v->end()}, false, RealNow(), queue_);
  }
  std::vector<std::uint8_t> Payload(std::size_t n) { return std::vector<std::uint8_t>(n, 7); }

  SendQueue queue_;
  SendQueue::ServerLimits limits_;  // 8192-byte frames
  ChannelTable channels_;
  RequestTable requests_;
  Predictions predictions_;
  QuietSink sink_;
  Link link_{LinkOptions{}, queue_, sink_};
  DatagramLink datagram_{nullptr};  // never opened: everything goes by the send queue
  Sender sender_{queue_, link_, channels_, requests_, predictions_, datagram_, limits_, 1000};
};

TEST_F(SenderTest, AnIntentIsCheckedThenQueued) {
  ASSERT_TRUE(sender_.Intent(1, Payload(10)).ok());
  EXPECT_EQ(queue_.frames(), 1u);
  EXPECT_EQ(sender_.queued_bytes(), queue_.bytes());
  EXPECT_EQ(sender_.Intent(2, Payload(10)).message(),
            "the server has no intent or unreliable channel with id 2 (channel \"shop.Buy\" is of "
            "kind Request)");
  EXPECT_EQ(sender_.Request(1, Payload(10), 0, nullptr).message(),
            "the server has no request channel with id 1 (channel \"chat.Say\" is of kind "
            "Intent)");
  EXPECT_EQ(sender_.Intent(9, Payload(10)).code(), Status::Code::kNotFound);
  EXPECT_EQ(queue_.frames(), 1u);
}

TEST_F(SenderTest, UnreliableSendsCarryTheChannelsSeqAndKeepItsCap) {
  ASSERT_TRUE(sender_.Intent(3, Payload(10)).ok());
  ASSERT_TRUE(sender_.Intent(3, Payload(10)).ok());
  EXPECT_EQ(channels_.Find(3)->sent_seq, 2u);
  EXPECT_EQ(sender_.Intent(3, Payload(901)).message(),
            "a payload of 901 bytes exceeds the 900-byte cap of channel \"pos\" (unreliable "
            "payloads fit one datagram)");
  EXPECT_EQ(queue_.frames(), 2u);
  queue_.Clear();
  EXPECT_TRUE(sender_.Intent(3, Payload(900)).ok()) << "the cap itself fits";
  EXPECT_EQ(channels_.Find(3)->sent_seq, 3u);
}

TEST_F(SenderTest, APredictedIntentIsPendingFromTheMomentItIsQueued) {
  Result<std::uint32_t> first = sender_.Predict(4, Payload(10), Seconds(2));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 1u);
  EXPECT_EQ(sender_.Predict(4, Payload(10), Seconds(2)).value(), 2u);
  EXPECT_EQ(predictions_.size(), 2u);
  EXPECT_EQ(sender_.Predict(1, Payload(10), Seconds(2)).status().message(),
            "the server has no predicted intent channel with id 1 (channel \"chat.Say\" is of kind "
            "Intent)");
  EXPECT_EQ(predictions_.size(), 2u);  // a refused one is not pending
  EXPECT_EQ(queue_.frames(), 2u);
}

TEST_F(SenderTest, AFrameTooLargeAFullQueueAndASpentRateAreRefusedByName) {
  limits_.max_frame_bytes = 100;
  EXPECT_EQ(sender_.Intent(1, Payload(50)).message(),
            "a payload of 50 bytes does not fit the server's 100-byte frames");
  limits_.max_frame_bytes = 8192;
  Status full;
  while (full.ok()) {
    full = sender_.Intent(1, Payload(200));
  }
  EXPECT_EQ(full.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(full.message(), "the send queue is full (" + std::to_string(sender_.queued_bytes()) +
                                " bytes wait; max_send_queue_bytes is 1000): step or wait to let "
                                "it drain at the server's pace");
  queue_.Clear();
  ASSERT_TRUE(sender_.Request(2, Payload(1), 0, nullptr).ok());
  const Status limited = sender_.Request(2, Payload(1), 0, nullptr);
  EXPECT_EQ(limited.code(), Status::Code::kRateLimited);
  EXPECT_EQ(limited.message(),
            "channel \"shop.Buy\" allows 1 per second: the server would refuse this one");
}

TEST_F(SenderTest, ARequestIsOpenedUntilTheChannelsTimeoutAndASecond) {
  const TimePoint before = RealNow();
  ASSERT_TRUE(sender_.Request(2, Payload(4), 0, nullptr).ok());
  const TimePoint after = RealNow();
  EXPECT_EQ(requests_.size(), 1u);
  const TimePoint deadline = requests_.NextDeadline().value();
  EXPECT_GE(deadline, before + std::chrono::seconds(3));
  EXPECT_LE(deadline, after + std::chrono::seconds(3));
  EXPECT_EQ(queue_.frames(), 1u);
}

}  // namespace
}  // namespace molt::kernel::client
