// SPDX-License-Identifier: Apache-2.0
// Hostile clients on real loopback sockets: each gets its expected counter and outcome, and a
// well-behaved client on the same server keeps being served.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net_fixture.h"

namespace molt::kernel::net {
namespace {

using molt::test::Frame;
using molt::test::TestClient;
namespace w = ::molt::wire;
using namespace std::chrono_literals;

class HostileTest : public NetTest {
 protected:
  // A bystander that joined first and must still get its intents through afterwards.
  void CheckBystander(TestClient& c, ChannelId say) {
    c.Intent(say, SayPayload("still here"));
    c.Ping(77, 1);
    Frame f = c.NextOf(w::Body::Pong);
    ASSERT_EQ(f.type(), w::Body::Pong);
    EXPECT_EQ(f.envelope()->body_as_Pong()->seq(), 77u);
  }
  std::uint64_t accepted(ChannelId id) { return net_->channels().Find(id)->counters().accepted; }
  std::vector<std::string> ends_;
  std::atomic<bool> slow_cut_{false};
  Connection end_log_;  // a member: sessions still open end in TearDown
  void LogEnds() {
    end_log_ = kernel_->bus().Subscribe("Kernel.SessionEnd", [this](std::string_view, Args a) {
      ends_.emplace_back(a[1].AsString());
    });
  }
};

TEST_F(HostileTest, AnOversizedFrameEndsTheConnectionAsAProtocolError) {
  const ChannelId say = DeclareSay("chat.Say");
  Listen();
  LogEnds();
  Run([&] {
    TestClient good(port_);
    ASSERT_EQ(good.Hello("good").type(), w::Body::Welcome);
    TestClient bad(port_);
    ASSERT_EQ(bad.Hello("bad").type(), w::Body::Welcome);
    const std::uint32_t huge = 100000;
    bad.SendRaw(std::string_view(reinterpret_cast<const char*>(&huge), 4));
    Frame f = bad.NextOf(w::Body::Bye);
    ASSERT_EQ(f.type(), w::Body::Bye);
    EXPECT_EQ(f.envelope()->body_as_Bye()->reason()->str(), "ProtocolError");
    EXPECT_EQ(Text(f.envelope()),
              "a frame of 100000 bytes exceeds the 8192-byte cap (net.max_frame_bytes)");
    EXPECT_EQ(bad.WaitClosed(), "closed");
    CheckBystander(good, say);
  });
  EXPECT_EQ(Rejected(*net_, Reject::kFrameTooLarge), 1u);
  EXPECT_EQ(ends_.front(), "ProtocolError");
  EXPECT_TRUE(RunUntil([&] { return accepted(say) == 1u; }));
}

TEST_F(HostileTest, GarbageEnvelopesAreCountedAndDroppedWithoutClosing) {
  const ChannelId say = DeclareSay("chat.Say");
  Listen();
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.SendFramed(std::vector<std::uint8_t>{0xde, 0xad, 0xbe, 0xef, 1, 2, 3});
    c.SendFramed(std::vector<std::uint8_t>(64, 0xff));
    // A server-only message from a client is refused too.
    flatbuffers::FlatBufferBuilder b;
    c.SendRaw(TestClient::Finish(b, w::Body::Event,
                                 w::CreateEvent(b, say, b.CreateVector<std::uint8_t>({})).Union()));
    CheckBystander(c, say);
  });
  EXPECT_EQ(Rejected(*net_, Reject::kBadEnvelope), 3u);
  EXPECT_EQ(accepted(say), 1u);
}

// A union type without its table passes the FlatBuffers verifier: it must not reach a handler
// (found by the fuzzer: before the fix a 24-byte hello crashed the server).
std::vector<std::uint8_t> BodilessFrame(w::Body type) {
  flatbuffers::FlatBufferBuilder b;
  w::EnvelopeBuilder e(b);
  e.add_body_type(type);
  b.FinishSizePrefixed(e.Finish());
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

TEST_F(HostileTest, AMessageTypeWithoutItsMessageIsABadEnvelope) {
  const ChannelId say = DeclareSay("chat.Say");
  Listen();
  Run([&] {
    TestClient before(port_);
    before.SendRaw(BodilessFrame(w::Body::Hello));
    EXPECT_EQ(before.WaitClosed(), "ProtocolError");
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    for (w::Body type : {w::Body::Intent, w::Body::Request, w::Body::Ping, w::Body::Pong,
                         w::Body::Hello, w::Body::Bye}) {
      c.SendRaw(BodilessFrame(type));
    }
    CheckBystander(c, say);
  });
  EXPECT_EQ(Rejected(*net_, Reject::kBadEnvelope), 7u);
  EXPECT_EQ(net_->sessions().stats().started, 1u);
}

TEST_F(HostileTest, AFrameBeforeTheHandshakeEndsTheConnection) {
  const ChannelId say = DeclareSay("chat.Say");
  Listen();
  Run([&] {
    TestClient c(port_);
    c.Intent(say, SayPayload("x"));
    Frame f = c.NextOf(w::Body::Bye);
    ASSERT_EQ(f.type(), w::Body::Bye);
    EXPECT_EQ(Text(f.envelope()), "expected a hello first");
    EXPECT_EQ(c.WaitClosed(), "closed");
    TestClient g(port_);
    g.SendRaw("GET / HTTP/1.1\r\nHost: x\r\n\r\n");  // not our protocol: "GET " is a length
    EXPECT_EQ(g.WaitClosed(), "ProtocolError");
  });
  EXPECT_EQ(Rejected(*net_, Reject::kNoSession), 1u);
  EXPECT_EQ(Rejected(*net_, Reject::kFrameTooLarge), 1u);
  EXPECT_EQ(net_->sessions().stats().started, 0u);
  EXPECT_EQ(net_->half_open(), 0u);
}

TEST_F(HostileTest, ATruncatedFrameThenACloseLosesNothingElse) {
  int handled = 0;
  const ChannelId say =
      DeclareSay("chat.Say", true, 0, [&](Session&, std::span<Value>) { ++handled; });
  Listen();
  LogEnds();
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Intent(say, SayPayload("whole"));
    c.Ping(1, 1);  // a round trip, so the whole intent was handled before the half one
    EXPECT_EQ(c.NextOf(w::Body::Pong).type(), w::Body::Pong);
    std::vector<std::uint8_t> frame = TestClient::IntentFrame(say, SayPayload("half"));
    frame.resize(frame.size() / 2);
    c.SendRaw(frame);
    c.Close();
  });
  ASSERT_TRUE(RunUntil([&] { return net_->sessions().count() == 0; }));
  EXPECT_EQ(handled, 1);
  EXPECT_EQ(ends_, std::vector<std::string>{"ClientClosed"});
}

TEST_F(HostileTest, AFloodOfBytesEndsTheSessionAsFloodAndFiresTheHook) {
  NetOptions o = NoResume();
  o.bytes_per_tick = 256;  // 60 ticks: 15 KiB/s, bursts of 1 KiB
  Boot(o);
  const ChannelId say = DeclareSay("chat.Say", true, 1e9);
  std::vector<std::int64_t> flood_args;
  Connection hook = kernel_->hooks().On("Net.FloodDetected", [&](HookContext& ctx) {
    flood_args = {ctx.args[1].AsInt(), ctx.args[3].AsInt()};
    return true;
  });
  int topic = 0;
  Connection t =
      kernel_->bus().Subscribe("Net.FloodDetected", [&](std::string_view, Args) { ++topic; });
  Listen();
  LogEnds();
  Run([&] {
    TestClient good(port_);
    ASSERT_EQ(good.Hello("good").type(), w::Body::Welcome);
    TestClient bad(port_);
    ASSERT_EQ(bad.Hello("bad").type(), w::Body::Welcome);
    std::vector<std::uint8_t> burst;
    for (int i = 0; i < 100; ++i) {
      auto f = TestClient::IntentFrame(say, SayPayload("spam"));
      burst.insert(burst.end(), f.begin(), f.end());
    }
    bad.SendRaw(burst);
    EXPECT_EQ(bad.WaitClosed(), "Flood");
    CheckBystander(good, say);
  });
  EXPECT_EQ(net_->stats().transport_floods, 1u);
  EXPECT_GT(net_->stats().transport_flood_bytes, 0u);
  EXPECT_EQ(Rejected(*net_, Reject::kFlood), 1u);
  ASSERT_EQ(flood_args.size(), 2u);
  EXPECT_EQ(flood_args[1], 256);
  EXPECT_EQ(topic, 1);
  EXPECT_EQ(ends_.front(), "Flood");
}

TEST_F(HostileTest, AFloodOfMessagesEndsTheSessionAsFlood) {
  NetOptions o = NoResume();
  o.messages_per_tick = 2;  // bursts of 8 messages
  Boot(o);
  Listen();
  Run([&] {
    TestClient bad(port_);
    ASSERT_EQ(bad.Hello("bad").type(), w::Body::Welcome);
    std::vector<std::uint8_t> burst;
    for (int i = 0; i < 40; ++i) {
      flatbuffers::FlatBufferBuilder b;
      auto f = TestClient::Finish(b, w::Body::Ping, w::CreatePing(b, 1, 1).Union());
      burst.insert(burst.end(), f.begin(), f.end());
    }
    bad.SendRaw(burst);
    EXPECT_EQ(bad.WaitClosed(), "Flood");
  });
  EXPECT_EQ(net_->stats().transport_floods, 1u);
}

TEST_F(HostileTest, AHandshakeThatNeverFinishesTimesOut) {
  NetOptions o = NoResume();
  o.handshake_timeout_seconds = 0.3;
  Boot(o);
  Listen();
  Run([&] {
    TestClient c(port_);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(c.WaitClosed(5000ms), "TimedOut");
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms);
  });
  EXPECT_EQ(net_->stats().handshake_timeouts, 1u);
  EXPECT_EQ(net_->half_open(), 0u);
}

// A game that crashed and starts again joins afresh: the session its lost link left waiting ends
// (as the link did) before the new one starts, rather than holding on for the resume window.
TEST_F(HostileTest, AUserBackWithoutTheirResumeTokenEndsTheSessionTheirLostLinkLeft) {
  Boot(NetOptions());  // the default window: 30 s
  Listen();
  LogEnds();
  std::vector<std::string> order;
  Connection starts = net_->sessions().OnSession(
      [&](Session& s) { order.push_back("start " + std::to_string(s.id())); });
  Connection ends = kernel_->bus().Subscribe("Kernel.SessionEnd", [&](std::string_view, Args a) {
    order.push_back("end " + std::to_string(a[0].AsHandle()));
  });
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    TestClient other(port_);
    ASSERT_EQ(other.Hello("bob").type(), w::Body::Welcome);
  });  // both links drop without a Bye
  ASSERT_TRUE(RunUntil([&] { return net_->stats().links_lost == 2; }));
  Run([&] {
    TestClient again(port_);
    Frame f = again.Hello("ada");
    ASSERT_EQ(f.type(), w::Body::Welcome);
    EXPECT_FALSE(f.envelope()->body_as_Welcome()->resumed());
    again.Bye();
  });
  ASSERT_TRUE(RunUntil([&] { return order.size() == 5; }));
  EXPECT_EQ(order, (std::vector<std::string>{"start 1", "start 2", "end 1", "start 3", "end 3"}));
  EXPECT_EQ(ends_, (std::vector<std::string>{"ClientClosed", "ClientClosed"}));
  EXPECT_EQ(net_->stats().resumes_superseded, 1u);
  EXPECT_NE(net_->sessions().Get(2), nullptr);  // bob's still waits for him
  Teardown();                                   // bob's ends while `order` exists
}

// A request id still in flight on the session is refused (and not answered: an answer would
// carry the id and settle the first); once the first is answered the id is free again.
TEST_F(HostileTest, ADuplicateInFlightRequestIdIsRefusedNotHandledTwice) {
  std::vector<RequestToken> held;
  const ChannelId add = DeclareAddRequest(
      "math.Add", [&](Session&, std::span<Value>, RequestToken t) { held.push_back(t); });
  Listen();
  TestClient c(port_);
  Run([&] {
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Request(add, 5, AddPayload(1));
    c.Request(add, 5, AddPayload(2));  // the same id while the first is unanswered
    c.Request(add, 6, AddPayload(3));
    c.Ping(1, 1);
    EXPECT_EQ(c.NextOf(w::Body::Pong).type(), w::Body::Pong);
  });
  ASSERT_TRUE(RunUntil([&] { return held.size() == 2; }));  // ids 5 and 6, once each
  Channel* ch = net_->channels().Find(add);
  EXPECT_EQ(ch->counters().rejected[static_cast<std::size_t>(Reject::kDuplicateRequest)], 1u);
  EXPECT_NE(NetStatsJson(*net_).find(R"("duplicate_request":1)"), std::string::npos);
  ASSERT_TRUE(net_->Reply(held[0], Status::Code::kOk, AddPayload(2)).ok());
  Run([&] {
    Frame r = c.NextOf(w::Body::Response);
    ASSERT_EQ(r.type(), w::Body::Response);
    EXPECT_EQ(r.envelope()->body_as_Response()->id(), 5u);
    c.Request(add, 5, AddPayload(4));  // answered: the id may be used again
    c.Ping(2, 1);
    EXPECT_EQ(c.NextOf(w::Body::Pong).type(), w::Body::Pong);
  });
  EXPECT_TRUE(RunUntil([&] { return held.size() == 3; }));
  EXPECT_EQ(ch->counters().accepted, 3u);
}

TEST_F(HostileTest, HandshakesPerAddressAreRateLimited) {
  NetOptions o = NoResume();
  o.handshakes_per_address = 1;  // burst 2
  Boot(o);
  Listen();
  Run([&] {
    TestClient a(port_);
    TestClient b(port_);
    TestClient c(port_);
    Frame f = c.Next();
    ASSERT_EQ(f.type(), w::Body::Refuse);
    EXPECT_EQ(f.envelope()->body_as_Refuse()->reason(), w::RefuseReason::RateLimited);
    EXPECT_GT(f.envelope()->body_as_Refuse()->retry_after_ms(), 0u);
    EXPECT_EQ(Text(f.envelope()), "too many connections from 127.0.0.1; retry later");
    ASSERT_EQ(a.Hello("a").type(), w::Body::Welcome);
  });
  EXPECT_EQ(net_->stats().refused_handshake_rate, 1u);
}

TEST_F(HostileTest, ASlowReaderIsCutOffWithoutDelayingAnyoneElse) {
  NetOptions o = NoResume();
  o.max_outbound_bytes = 64 * 1024;
  Boot(o);
  const ChannelId state = DeclareEvent("world.State");
  Listen();
  slow_cut_ = false;
  end_log_ = kernel_->bus().Subscribe("Kernel.SessionEnd", [this](std::string_view, Args a) {
    ends_.emplace_back(a[1].AsString());
    slow_cut_ = slow_cut_ || a[1].AsString() == "SlowReader";
  });
  // Once both joined, the server broadcasts 16 events of 4 KiB every millisecond (64 MB/s).
  const std::vector<std::uint8_t> big = SayPayload(std::string(4000, 's'));
  std::atomic<bool> joined{false};
  TaskHandle pump = kernel_->scheduler().Every(std::chrono::milliseconds(1), [&] {
    for (int i = 0; joined && i < 16; ++i) {
      (void)net_->Broadcast(state, big);
    }
  });
  TestClient slow(port_, /*recv_buffer=*/4096);
  TestClient fast(port_);
  Run([&] {
    ASSERT_EQ(slow.Hello("slow").type(), w::Body::Welcome);  // and never reads again
    ASSERT_EQ(fast.Hello("fast").type(), w::Body::Welcome);
    joined = true;
    int events = 0;
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (!slow_cut_ && std::chrono::steady_clock::now() < deadline) {
      Frame f = fast.Next(2000ms);
      ASSERT_FALSE(f.closed || f.timeout);
      events += f.type() == w::Body::Event;
    }
    EXPECT_TRUE(slow_cut_);
    // The fast reader goes on receiving after the cut.
    for (int i = 0; i < 100; ++i) {
      Frame f = fast.Next(2000ms);
      ASSERT_FALSE(f.closed || f.timeout);
    }
  });
  pump.Cancel();
  EXPECT_EQ(net_->stats().slow_readers, 1u);
  EXPECT_EQ(ends_, std::vector<std::string>{"SlowReader"});
  EXPECT_EQ(net_->sessions().count(), 1u);
}

// A reader that falls behind, short of the slow-reader cap, gets everything in order once it
// reads again: what the socket would not take waits, and goes out when the socket is writable
// again (its EPOLLOUT edge in the transport's epoll set).
TEST_F(HostileTest, AReaderThatFallsBehindGetsEverythingInOrderOnceItReadsAgain) {
  NetOptions o = NoResume();
  o.max_outbound_bytes = 32 << 20;
  o.ping_interval_seconds = 0;  // no pings: nothing else writes, only the writable edge flushes
  Boot(o);
  const ChannelId state = DeclareEvent("world.State");
  Listen();
  constexpr int kEvents = 2500;  // 10 MB: more than the socket buffers on both sides hold
  std::atomic<bool> joined{false};
  std::atomic<bool> sent{false};
  TaskHandle pump = kernel_->scheduler().Every(std::chrono::milliseconds(1), [&] {
    if (joined && !sent) {
      for (int i = 0; i < kEvents; ++i) {
        (void)net_->Broadcast(state, SayPayload(std::to_string(i) + std::string(4000, 's')));
      }
      sent = true;
    }
  });
  TestClient behind(port_, /*recv_buffer=*/4096);
  std::vector<int> got;
  Run([&] {
    ASSERT_EQ(behind.Hello("behind").type(), w::Body::Welcome);
    joined = true;
    while (!sent) {
      std::this_thread::sleep_for(1ms);
    }
    std::this_thread::sleep_for(100ms);  // behind: the server's queue waits on the socket
    for (int i = 0; i < kEvents; ++i) {
      Frame f = behind.Next(5000ms);
      ASSERT_FALSE(f.closed || f.timeout) << "after " << got.size() << " events";
      ASSERT_EQ(f.type(), w::Body::Event);
      const auto* p = f.envelope()->body_as_Event()->payload();
      got.push_back(std::stoi(flatbuffers::GetRoot<molt::test::Say>(p->data())->text()->str()));
    }
  });
  pump.Cancel();
  ASSERT_EQ(got.size(), static_cast<std::size_t>(kEvents));
  for (int i = 0; i < kEvents; ++i) {
    ASSERT_EQ(got[static_cast<std::size_t>(i)], i);
  }
  EXPECT_EQ(net_->stats().slow_readers, 0u);
}

TEST_F(HostileTest, PingsMeasureRoundTripsAndSilenceTimesOut) {
  NetOptions o = NoResume();
  o.ping_interval_seconds = 0.1;
  o.idle_timeout_seconds = 0.6;
  Boot(o);
  Listen();
  LogEnds();
  SessionId id = 0;
  TestClient c(port_);
  Run([&] {
    Frame f = c.Hello("ada");
    ASSERT_EQ(f.type(), w::Body::Welcome);
    id = f.envelope()->body_as_Welcome()->session_id();
    EXPECT_EQ(f.envelope()->body_as_Welcome()->ping_interval_ms(), 100u);
    EXPECT_TRUE(c.Next(500ms).timeout);  // answers every ping meanwhile
    EXPECT_GE(c.pings(), 3);
  });
  Session* s = net_->sessions().Get(id);
  ASSERT_NE(s, nullptr);
  EXPECT_GT(s->rtt().count(), 0);
  EXPECT_LT(s->rtt(), std::chrono::milliseconds(100));
  // Silence (the client stops answering) ends the session.
  ASSERT_TRUE(RunUntil([&] { return net_->sessions().count() == 0; }, 3000ms));
  EXPECT_EQ(ends_, std::vector<std::string>{"TimedOut"});
}

TEST_F(HostileTest, ALostLinkResumesTheSameSessionWithWhatItMissed) {
  Boot(NetOptions());  // the default window: 30 s
  const ChannelId said = DeclareEvent("chat.Said");
  Listen();
  LogEnds();
  int starts = 0;
  int resumed = 0;
  int unbound = 0;
  Connection on = net_->sessions().OnSession([&](Session& s) {
    ++starts;
    s.Bind([&] { ++unbound; });
  });
  Connection r =
      kernel_->bus().Subscribe("Kernel.SessionResumed", [&](std::string_view, Args) { ++resumed; });
  SessionId id = 0;
  std::vector<std::uint8_t> token;
  Run([&] {
    TestClient c(port_);
    Frame f = c.Hello("ada");
    ASSERT_EQ(f.type(), w::Body::Welcome);
    const w::Welcome* wel = f.envelope()->body_as_Welcome();
    id = wel->session_id();
    token.assign(wel->resume_token()->begin(), wel->resume_token()->end());
    EXPECT_EQ(token.size(), 16u);
    EXPECT_FALSE(wel->resumed());
    EXPECT_EQ(wel->resume_window_ms(), 30000u);
  });  // the socket closes without a Bye: the link is lost, not the session
  ASSERT_TRUE(RunUntil([&] { return net_->stats().links_lost == 1; }));
  Session* s = net_->sessions().Get(id);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->detached());
  ASSERT_TRUE(net_->Send(said, id, SayPayload("while you were away")).ok());  // kept for it
  Run([&] {
    TestClient stranger(port_);  // a token for another user resumes nothing
    Frame f = stranger.Resume("mallory", token);
    ASSERT_EQ(f.type(), w::Body::Welcome);
    EXPECT_NE(f.envelope()->body_as_Welcome()->session_id(), id);
    EXPECT_FALSE(f.envelope()->body_as_Welcome()->resumed());
    TestClient back(port_);
    f = back.Resume("ada", token);
    ASSERT_EQ(f.type(), w::Body::Welcome);
    EXPECT_EQ(f.envelope()->body_as_Welcome()->session_id(), id);
    EXPECT_TRUE(f.envelope()->body_as_Welcome()->resumed());
    Frame missed = back.NextOf(w::Body::Event);
    ASSERT_EQ(missed.type(), w::Body::Event);
    const auto* p = missed.envelope()->body_as_Event()->payload();
    EXPECT_EQ(flatbuffers::GetRoot<molt::test::Say>(p->data())->text()->str(),
              "while you were away");
    back.Bye();
    EXPECT_EQ(back.WaitClosed(), "closed");
  });
  EXPECT_EQ(starts, 2);  // ada once (not again on resume), mallory once
  EXPECT_EQ(resumed, 1);
  EXPECT_EQ(net_->stats().resumes, 1u);
  ASSERT_TRUE(RunUntil([&] { return net_->sessions().Get(id) == nullptr; }));
  EXPECT_EQ(unbound, 1);  // ada's binding ran once, when she said bye (mallory's link waits)
  Teardown();             // mallory's session ends while the counter its binding writes exists
  EXPECT_EQ(unbound, 2);
}

TEST_F(HostileTest, ASessionWhoseClientNeverComesBackEndsWhenTheWindowPasses) {
  NetOptions o = NoResume();
  o.resume_window_seconds = 0.3;
  Boot(o);
  Listen();
  LogEnds();
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
  });
  ASSERT_TRUE(RunUntil([&] { return net_->stats().links_lost == 1; }));
  EXPECT_EQ(net_->sessions().count(), 1u);
  EXPECT_TRUE(ends_.empty());
  ASSERT_TRUE(RunUntil([&] { return net_->sessions().count() == 0; }, 3000ms));
  EXPECT_EQ(ends_, std::vector<std::string>{"ClientClosed"});
  EXPECT_EQ(net_->stats().resumes_expired, 1u);
}

TEST_F(HostileTest, ASilentLinkIsALostLinkTheSessionWaitsForItsClient) {
  NetOptions o;  // resume on (30 s)
  o.ping_interval_seconds = 0.1;
  o.idle_timeout_seconds = 0.4;
  Boot(o);
  Listen();
  LogEnds();
  TestClient c(port_);
  std::vector<std::uint8_t> token;
  Run([&] {
    Frame f = c.Hello("ada");
    ASSERT_EQ(f.type(), w::Body::Welcome);
    const auto* t = f.envelope()->body_as_Welcome()->resume_token();
    token.assign(t->begin(), t->end());
  });  // then the client stops answering (its socket stays open)
  ASSERT_TRUE(RunUntil([&] { return net_->stats().links_lost == 1; }, 3000ms));
  EXPECT_TRUE(ends_.empty());
  EXPECT_EQ(net_->sessions().count(), 1u);
  Run([&] {
    TestClient back(port_);
    Frame f = back.Resume("ada", token);
    ASSERT_EQ(f.type(), w::Body::Welcome);
    EXPECT_TRUE(f.envelope()->body_as_Welcome()->resumed());
  });
  EXPECT_EQ(net_->stats().resumes, 1u);
}

TEST_F(HostileTest, KickAndShutdownSayWhyBeforeClosing) {
  Listen();
  LogEnds();
  std::atomic<SessionId> first{0};
  Connection trigger = kernel_->bus().Subscribe("Kernel.SessionStart", [&](std::string_view, Args) {
    if (net_->sessions().count() == 2) {
      kernel_->scheduler().Schedule([&] {
        EXPECT_TRUE(net_->Kick(net_->sessions().ActiveIds()[0], "cheating").ok());
        net_->Shutdown();
      });
    }
  });
  Run([&] {
    TestClient a(port_);
    Frame f = a.Hello("a");
    ASSERT_EQ(f.type(), w::Body::Welcome);
    first = f.envelope()->body_as_Welcome()->session_id();
    TestClient b(port_);
    ASSERT_EQ(b.Hello("b").type(), w::Body::Welcome);
    // The kick and the shutdown happen on the loop thread (below) once both joined.
    Frame bye = a.NextOf(w::Body::Bye);
    ASSERT_EQ(bye.type(), w::Body::Bye);
    EXPECT_EQ(bye.envelope()->body_as_Bye()->reason()->str(), "Kicked");
    EXPECT_EQ(Text(bye.envelope()), "cheating");
    bye = b.NextOf(w::Body::Bye);
    ASSERT_EQ(bye.type(), w::Body::Bye);
    EXPECT_EQ(bye.envelope()->body_as_Bye()->reason()->str(), "ServerShutdown");
  });
  (void)first;
  EXPECT_EQ(ends_, (std::vector<std::string>{"Kicked", "ServerShutdown"}));
}

}  // namespace
}  // namespace molt::kernel::net
