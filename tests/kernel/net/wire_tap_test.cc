// SPDX-License-Identifier: Apache-2.0
// The wire inspector (kernel/src/net/wire_tap.h): nothing is recorded until an operator leases
// it; then every message the network handles is kept with its verdict, in the order it happened
// (a request before the events and the response it causes), and hook chains are timed.
#include "kernel/src/net/wire_tap.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "kernel/src/core/logger.h"
#include "net_fixture.h"

namespace molt::kernel::net {
namespace {

namespace w = molt::wire;
using molt::test::TestClient;
using namespace std::chrono_literals;

TEST(WireTapTest, ALeaseTurnsItOnEachReadExtendsItAndItExpiresAlone) {
  WireTap tap;
  const TimePoint t0{};
  EXPECT_FALSE(tap.on());
  EXPECT_TRUE(tap.Lease(t0, 10s));        // it was off
  EXPECT_FALSE(tap.Lease(t0 + 5s, 10s));  // extended to t0 + 15 s
  EXPECT_FALSE(tap.Expire(t0 + 12s));
  EXPECT_TRUE(tap.on());
  EXPECT_TRUE(tap.Expire(t0 + 15s));
  EXPECT_FALSE(tap.on());
  EXPECT_FALSE(tap.Expire(t0 + 20s));  // already off
}

TEST(WireTapTest, KeepsTheNewestFramesWithTheirFirstBytesAndPagesBySince) {
  WireTap tap;
  const std::vector<std::uint8_t> big(WireTap::kHeadBytes + 36, 0xab);
  for (std::size_t i = 0; i < WireTap::kCapacity + 4; ++i) {
    WireFrame f;
    f.kind = "intent";
    f.bytes = static_cast<std::uint32_t>(i);
    tap.Record(std::move(f), big);
  }
  WireTap::Page all = tap.Since(0);
  ASSERT_EQ(all.items.size(), WireTap::kCapacity);
  EXPECT_EQ(all.lost, 4u);
  EXPECT_EQ(all.items.front().seq, 5u);
  EXPECT_EQ(all.items.front().head.size(), WireTap::kHeadBytes);
  EXPECT_EQ(all.next, WireTap::kCapacity + 4);
  EXPECT_TRUE(tap.Since(all.next).items.empty());
  EXPECT_EQ(tap.Find(4), nullptr);  // pushed out
  ASSERT_NE(tap.Find(all.next), nullptr);
  EXPECT_EQ(tap.Find(all.next)->bytes, WireTap::kCapacity + 3);
}

std::vector<WireFrame> Frames(const Network& net) { return net.tap().Since(0).items; }

TEST_F(NetTest, TheWireInspectorRecordsMessagesWithVerdictsOnlyWhileAnOperatorWatches) {
  const ChannelId say = DeclareSay("chat.Say");
  const ChannelId shout = DeclareSay("chat.Shout", false);  // no validator: fail-closed
  const ChannelId boom = DeclareSay(
      "chat.Boom", true, 0, [](Session&, std::span<Value>) { throw std::runtime_error("boom"); });
  const ChannelId said = DeclareEvent("chat.Said");
  ChannelSpec spec;
  spec.name = "shop.Price";
  spec.kind = ChannelKind::kRequest;
  spec.schema = "molt.test.Add";
  spec.verify = VerifyAdd;
  spec.open = true;
  spec.on_request = [&](Session& s, std::span<Value>, RequestToken reply) {
    const std::vector<std::uint8_t> news = SayPayload("priced");
    EXPECT_TRUE(net_->Send(said, s.id(), news).ok());
    EXPECT_TRUE(net_->Reply(reply, Status::Code::kOk, {}).ok());
  };
  const ChannelId price = net_->channels().Declare(std::move(spec)).value();
  Listen();
  const std::vector<std::uint8_t> hello = SayPayload("hello");
  const std::vector<std::uint8_t> garbage = {1, 2, 3, 4, 5, 6, 7, 8};
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Intent(say, hello);  // nobody watches: not recorded
    c.Ping(1, 1);          // a round trip: the intent was handled
    ASSERT_EQ(c.NextOf(w::Body::Pong).type(), w::Body::Pong);
  });
  EXPECT_TRUE(Frames(*net_).empty());
  EXPECT_FALSE(net_->tap().on());
  EXPECT_FALSE(kernel_->hooks().timing());

  net_->Inspect(10s);
  EXPECT_TRUE(net_->tap().on());
  EXPECT_TRUE(kernel_->hooks().timing());
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("bob").type(), w::Body::Welcome);
    c.Intent(say, hello);
    c.Intent(say, garbage);  // not a Say
    c.Intent(shout, hello);
    c.Intent(boom, hello);
    c.Request(price, 9, AddPayload(3));
    ASSERT_EQ(c.NextOf(w::Body::Response).type(), w::Body::Response);
    c.Bye();
    c.WaitClosed();
  });
  const std::vector<WireFrame> frames = Frames(*net_);
  ASSERT_EQ(frames.size(), 7u);
  auto expect = [&](std::size_t i, bool inbound, std::string_view kind, ChannelId channel,
                    std::string_view verdict) {
    SCOPED_TRACE(i);
    EXPECT_EQ(frames[i].inbound, inbound);
    EXPECT_EQ(frames[i].kind, kind);
    EXPECT_EQ(frames[i].channel, channel);
    EXPECT_EQ(frames[i].channel_name, net_->channels().Find(channel)->name());
    EXPECT_EQ(frames[i].verdict, verdict);
    EXPECT_NE(frames[i].session, 0u);
  };
  expect(0, true, "intent", say, "accepted");
  EXPECT_EQ(frames[0].head, hello);
  EXPECT_EQ(frames[0].bytes, hello.size());
  EXPECT_GT(frames[0].took.count(), 0);
  expect(1, true, "intent", say, "bad_payload");
  EXPECT_EQ(frames[1].detail, "the payload is not a valid molt.test.Say");
  expect(2, true, "intent", shout, "unguarded");
  EXPECT_EQ(frames[2].detail, "the channel has no validator");
  expect(3, true, "intent", boom, "handler_error");
  // The request comes first, then the event its handler sent, then its answer.
  expect(4, true, "request", price, "accepted");
  expect(5, false, "event", said, "sent");
  EXPECT_EQ(frames[5].recipients, 1u);
  EXPECT_EQ(frames[5].head, SayPayload("priced"));
  expect(6, false, "response", price, "OK");
  EXPECT_LT(frames[0].seq, frames[6].seq);
}

// Nobody reads it for its lease: it stops recording and timing on its own, and says so.
TEST_F(NetTest, TheWireInspectorTurnsItselfOffWhenItsLeaseIsNotRenewed) {
  std::vector<std::string> lines;
  Logger::Registration capture =
      Logger::Get().Capture([&](std::string_view line, LogLevel) { lines.emplace_back(line); });
  net_->Inspect(50ms);
  net_->Inspect(100ms);  // renewed: the end moves
  EXPECT_TRUE(net_->tap().on());
  Run([] { std::this_thread::sleep_for(300ms); });
  EXPECT_FALSE(net_->tap().on());
  EXPECT_FALSE(kernel_->hooks().timing());
  std::size_t on = 0;
  std::size_t off = 0;
  for (const std::string& l : lines) {
    on += l.find("wire inspector on") != std::string::npos;
    off += l.find("wire inspector off: nobody read it for its lease") != std::string::npos;
  }
  EXPECT_EQ(on, 1u);
  EXPECT_EQ(off, 1u);
}

}  // namespace
}  // namespace molt::kernel::net
