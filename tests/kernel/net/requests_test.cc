// SPDX-License-Identifier: Apache-2.0
// PendingRequests (kernel/src/net/requests.h) alone, on a manual clock: a request opened and
// handed to its handler, and its one answer — by the handler, by the timeout, or with its
// channel's others when the handlers go away.
#include "kernel/src/net/requests.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "net_parts_fixture.h"

namespace molt::kernel::net {
namespace {

namespace w = ::molt::wire;
using std::chrono::milliseconds;

class PendingRequestsTest : public NetPartsTest {
 protected:
  // A request channel whose handler keeps each token (`handler` replaces that).
  ChannelId Declare(double timeout = 2, RequestHandler handler = nullptr) {
    ChannelSpec spec;
    spec.name = "shop.Buy";
    spec.kind = ChannelKind::kRequest;
    spec.schema = "shop.Buy";
    spec.verify = [](std::span<const std::uint8_t>) { return true; };
    spec.open = true;
    spec.timeout_seconds = timeout;
    spec.on_request = handler ? std::move(handler)
                              : RequestHandler([this](Session&, std::span<Value>, RequestToken t) {
                                  tokens_.push_back(t);
                                });
    Result<ChannelId> id = channels_->Declare(std::move(spec));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }
  void Open(MemoryPeer& p, ChannelId channel, std::uint32_t wire_id) {
    Value args[] = {Value::Int(0)};
    requests_->Open(*SessionOf(p), *channels_->Find(channel), wire_id, args);
  }
  // "id status retry_ms payload" of the peer's last frame, a Response.
  static std::string Answer(const MemoryPeer& p, std::size_t i) {
    const w::Response* r = p.frame(i)->body_as_Response();
    if (r == nullptr) {
      return "(not a response)";
    }
    std::string payload =
        r->payload() ? std::string(r->payload()->begin(), r->payload()->end()) : std::string();
    return std::to_string(r->id()) + " " + std::to_string(r->status()) + " " +
           std::to_string(r->retry_after_ms()) + " " + payload;
  }
  static std::string Code(Status::Code c) { return std::to_string(static_cast<int>(c)); }

  std::vector<RequestToken> tokens_;
};

TEST_F(PendingRequestsTest, ARequestIsHandedToItsHandlerAndAnsweredOnce) {
  BuildAll();
  const ChannelId buy = Declare();
  MemoryPeer& ada = Join("ada");
  Open(ada, buy, 7);
  ASSERT_EQ(tokens_.size(), 1u);
  EXPECT_TRUE(requests_->InFlight(ada.session(), 7));
  EXPECT_FALSE(requests_->InFlight(ada.session(), 8));
  const std::vector<std::uint8_t> ok = {'o', 'k'};
  ASSERT_TRUE(requests_->Reply(tokens_[0], Status::Code::kOk, ok).ok());
  EXPECT_EQ(Answer(ada, 0), "7 0 0 ok");
  EXPECT_FALSE(requests_->InFlight(ada.session(), 7));
  EXPECT_EQ(requests_->size(), 0u);
  const Status again = requests_->Reply(tokens_[0], Status::Code::kOk, ok);
  EXPECT_TRUE(again.code() == Status::Code::kStale);
  EXPECT_EQ(again.message(), "the request was already answered or timed out");
  EXPECT_EQ(ada.frame_count(), 1u);
}

TEST_F(PendingRequestsTest, ARequestNotAnsweredWithinTheChannelsTimeoutIsAnsweredTimedOut) {
  options_.ping_interval_seconds = 0;  // nothing but the answer is written
  BuildAll();
  const ChannelId buy = Declare(/*timeout=*/2);
  MemoryPeer& ada = Join("ada");
  Open(ada, buy, 1);
  Pass(milliseconds(1900));
  EXPECT_EQ(ada.frame_count(), 0u);
  Pass(milliseconds(200));
  ASSERT_EQ(ada.frame_count(), 1u);
  EXPECT_EQ(Answer(ada, 0), "1 " + Code(Status::Code::kTimedOut) + " 0 ");
  EXPECT_EQ(channels_->Find(buy)->counters().timeouts, 1u);
  EXPECT_TRUE(requests_->Reply(tokens_[0], Status::Code::kOk, {}).code() == Status::Code::kStale);
}

TEST_F(PendingRequestsTest, AnAnswerTooBigForAFrameIsRefusedAndTheRequestStaysOpen) {
  options_.max_frame_bytes = 128;
  BuildAll();
  const ChannelId buy = Declare();
  MemoryPeer& ada = Join("ada");
  Open(ada, buy, 1);
  const std::vector<std::uint8_t> big(100, 'x');
  const Status s = requests_->Reply(tokens_[0], Status::Code::kOk, big);
  EXPECT_TRUE(s.code() == Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "an answer of 100 bytes does not fit a frame (net.max_frame_bytes = 128); the "
            "request is still open");
  EXPECT_TRUE(requests_->InFlight(ada.session(), 1));
  EXPECT_TRUE(requests_->Reply(tokens_[0], Status::Code::kOk, {}).ok());
}

TEST_F(PendingRequestsTest, AHandlerThatThrowsAnswersInternalAndNoHandlerAnswersUnsupported) {
  BuildAll();
  const ChannelId buy =
      Declare(2, [](Session&, std::span<Value>, RequestToken) { throw std::runtime_error("no"); });
  MemoryPeer& ada = Join("ada");
  Open(ada, buy, 3);
  EXPECT_EQ(Answer(ada, 0), "3 " + Code(Status::Code::kInternal) + " 0 ");
  EXPECT_EQ(channels_->Find(buy)->counters().handler_errors, 1u);
  EXPECT_FALSE(requests_->InFlight(ada.session(), 3));
}

TEST_F(PendingRequestsTest, RefusingAChannelsRequestsAnswersEachInTheOrderTheyCame) {
  BuildAll();
  const ChannelId buy = Declare();
  MemoryPeer& ada = Join("ada");
  MemoryPeer& bob = Join("bob");
  Open(ada, buy, 10);
  Open(bob, buy, 20);
  Open(ada, buy, 11);
  EXPECT_EQ(requests_->RefusePending(buy, Status::Code::kCancelled, 0.05), 3u);
  ASSERT_EQ(ada.frame_count(), 2u);
  EXPECT_EQ(Answer(ada, 0), "10 " + Code(Status::Code::kCancelled) + " 50 ");
  EXPECT_EQ(Answer(ada, 1), "11 " + Code(Status::Code::kCancelled) + " 50 ");
  EXPECT_EQ(Answer(bob, 0), "20 " + Code(Status::Code::kCancelled) + " 50 ");
  EXPECT_EQ(requests_->size(), 0u);
  EXPECT_EQ(requests_->RefusePending(buy, Status::Code::kCancelled, 0.05), 0u);
}

TEST_F(PendingRequestsTest, AnAnswerToASessionThatLeftIsStale) {
  BuildAll();
  const ChannelId buy = Declare();
  MemoryPeer& ada = Join("ada");
  const SessionId id = ada.session();
  Open(ada, buy, 1);
  links_->End(ada, ExitReason::kClientClosed, "");
  const Status s = requests_->Reply(tokens_[0], Status::Code::kOk, {});
  EXPECT_TRUE(s.code() == Status::Code::kStale);
  EXPECT_EQ(s.message(), "session " + std::to_string(id) + " left before the answer");
}

}  // namespace
}  // namespace molt::kernel::net
