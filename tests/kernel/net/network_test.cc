// SPDX-License-Identifier: Apache-2.0
// The network on real loopback sockets: handshake, the inbound pipeline with every rejection
// counted, requests, events, and hostile clients, with the server serving everyone else.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"
#include "kernel/src/wire/wire.h"
#include "net_fixture.h"
#include "tests/support/run_on_loop.h"

namespace molt::kernel::net {
namespace {

using molt::test::Frame;
using molt::test::TestClient;
namespace w = ::molt::wire;
using namespace std::chrono_literals;

std::uint64_t Rejected(Network& net, ChannelId id, Reject r) {
  return net.channels().Find(id)->counters().rejected[static_cast<std::size_t>(r)];
}

// Records Kernel.SessionEnd reasons.
struct EndLog {
  explicit EndLog(Kernel& k) {
    c = k.bus().Subscribe("Kernel.SessionEnd", [this](std::string_view, Args args) {
      reasons.emplace_back(args[1].AsString());
    });
  }
  ~EndLog() { c.Disconnect(); }  // before `reasons` goes: sessions may still end later
  std::vector<std::string> reasons;
  Connection c;
};

TEST_F(NetTest, HandshakeWelcomesWithTheChannelTable) {
  const ChannelId say = DeclareSay("chat.Say", true, 5);
  Listen();
  EndLog ends(*kernel_);
  std::uint64_t session = 0;
  TestClient c(port_);  // connected here, closed at the end of the test
  Run([&] {
    Frame f = c.Hello("ada");
    ASSERT_EQ(f.type(), w::Body::Welcome);
    const w::Welcome* wel = f.envelope()->body_as_Welcome();
    session = wel->session_id();
    EXPECT_NE(session, 0u);
    EXPECT_EQ(wel->max_frame_bytes(), 8192u);
    EXPECT_EQ(wel->bytes_per_tick(), 8192u);
    EXPECT_EQ(wel->messages_per_tick(), 64u);
    ASSERT_EQ(wel->channels()->size(), 1u);
    const w::ChannelInfo* ch = wel->channels()->Get(0);
    EXPECT_EQ(ch->id(), say);
    EXPECT_EQ(ch->name()->str(), "chat.Say");
    EXPECT_EQ(ch->kind(), w::ChannelKind::Intent);
    EXPECT_EQ(ch->schema()->str(), "molt.test.Say");
    EXPECT_FLOAT_EQ(ch->rate(), 5);
    EXPECT_EQ(wel->protocol_hash(), net_->channels().ProtocolHash());
    EXPECT_TRUE(wel->device_hints());  // wire 2.7: the client may send Device frames
  });
  ASSERT_EQ(net_->sessions().count(), 1u);
  Session* s = net_->sessions().Get(session);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->user(), "ada");
  EXPECT_EQ(s->address(), "127.0.0.1");
  EXPECT_EQ(NetStatsJson(*net_).find("{\"port\":" + std::to_string(port_) + ",\"sessions\":1,"), 0u)
      << NetStatsJson(*net_);
  // The client goes away (the socket closes): the session ends as ClientClosed.
  c.Close();
  ASSERT_TRUE(RunUntil([&] { return net_->sessions().count() == 0; }));
  EXPECT_EQ(net_->sessions().Get(session), nullptr);
  EXPECT_EQ(ends.reasons, std::vector<std::string>{"ClientClosed"});
}

TEST_F(NetTest, RefusesAWrongVersionHashOrUserIdWithAReason) {
  DeclareSay("chat.Say");
  Listen();
  Run([&] {
    {
      TestClient c(port_);
      Frame f = c.Hello("ada", 1);  // a client from before replicas
      ASSERT_EQ(f.type(), w::Body::Refuse);
      EXPECT_EQ(f.envelope()->body_as_Refuse()->reason(), w::RefuseReason::ProtocolVersion);
      EXPECT_EQ(Text(f.envelope()), "protocol version 1 is not supported: this server speaks 2");
      EXPECT_EQ(c.WaitClosed(), "closed");
    }
    {
      TestClient c(port_);
      Frame f = c.Hello("ada", w::kProtocolVersion, 0x1234);
      ASSERT_EQ(f.type(), w::Body::Refuse);
      EXPECT_EQ(f.envelope()->body_as_Refuse()->reason(), w::RefuseReason::ProtocolHash);
      EXPECT_NE(Text(f.envelope()).find("update the client"), std::string::npos);
    }
    {
      TestClient c(port_);
      Frame f = c.Hello("");
      ASSERT_EQ(f.type(), w::Body::Refuse);
      EXPECT_EQ(f.envelope()->body_as_Refuse()->reason(), w::RefuseReason::BadHello);
      EXPECT_EQ(Text(f.envelope()), "the user id must be 1..64 printable characters");
    }
  });
  EXPECT_EQ(net_->stats().handshakes_refused, 3u);
  EXPECT_EQ(net_->sessions().stats().started, 0u);
}

TEST_F(NetTest, AuthHelloDecidesAndMayReplaceTheUserId) {
  Listen();
  static const std::string kVerified = "verified:ada";
  Connection auth = kernel_->hooks().On("Auth.Hello", [](HookContext& ctx) {
    const Value& creds = ctx.args[1];
    const std::string_view secret(static_cast<const char*>(creds.as.ptr), creds.size);
    if (secret != "secret") {
      return false;
    }
    ctx.args[0] = Value::String(kVerified);
    return true;
  });
  std::uint64_t id = 0;
  Run([&] {
    TestClient bad(port_);
    Frame f = bad.Hello("ada", w::kProtocolVersion, 0, {'n', 'o'});
    ASSERT_EQ(f.type(), w::Body::Refuse);
    EXPECT_EQ(f.envelope()->body_as_Refuse()->reason(), w::RefuseReason::AuthFailed);
    EXPECT_EQ(Text(f.envelope()), "authentication failed");
    TestClient good(port_);
    f = good.Hello("ada", w::kProtocolVersion, 0, {'s', 'e', 'c', 'r', 'e', 't'});
    ASSERT_EQ(f.type(), w::Body::Welcome);
    id = f.envelope()->body_as_Welcome()->session_id();
    good.Bye();
    EXPECT_EQ(good.WaitClosed(), "closed");
  });
  // The session existed with the verified id (it ended when the client said bye).
  EXPECT_EQ(net_->sessions().stats().started, 1u);
  EXPECT_NE(id, 0u);
}

TEST_F(NetTest, ProductionAuthRefusesToListenWithoutAValidator) {
  NetOptions o = NoResume();
  o.auth = AuthMode::kProduction;
  Boot(o);
  Status s = net_->Listen();
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "net.auth is \"production\" but no plugin validates Auth.Hello: load an "
            "authentication plugin, or set net.auth = \"dev\" for development");
  Connection auth = kernel_->hooks().On("Auth.Hello", [](HookContext&) { return true; });
  EXPECT_TRUE(net_->Listen().ok());
}

TEST_F(NetTest, AnAcceptedIntentRunsHooksThenTheHandlerThenTheTopic) {
  std::vector<std::string> order;
  std::string seen_text;
  const ChannelId say = DeclareSay("chat.Say", false, 0, [&](Session& s, std::span<Value> args) {
    order.push_back("handler");
    EXPECT_EQ(s.user(), "ada");
    auto* msg = flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr);
    seen_text = msg->text()->str();
  });
  Listen();
  Connection v = kernel_->hooks().On("Intent.chat.Say", [&](HookContext& ctx) {
    order.push_back("validator");
    EXPECT_NE(ctx.session, 0u);
    return true;
  });
  Connection t = kernel_->bus().Subscribe("Intent.chat.Say", [&](std::string_view, Args a) {
    order.push_back("topic");
    EXPECT_EQ(a[0].type, Value::kHandle);
  });
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Intent(say, SayPayload("hello"));
    c.Bye();
    c.WaitClosed();
  });
  EXPECT_EQ(order, (std::vector<std::string>{"validator", "handler", "topic"}));
  EXPECT_EQ(seen_text, "hello");
  EXPECT_EQ(net_->channels().Find(say)->counters().accepted, 1u);
  EXPECT_EQ(net_->stats().intents_accepted, 1u);
}

TEST_F(NetTest, EveryRejectionIsCountedByChannelAndReasonAndTheClientStaysServed) {
  int handled = 0;
  auto count = [&](Session&, std::span<Value>) { ++handled; };
  const ChannelId guarded = DeclareSay("chat.Say", true, 0, count);
  const ChannelId unguarded = DeclareSay("chat.Shout", false, 0, count);
  const ChannelId hooked = DeclareSay("chat.Whisper", false, 0, count);
  Connection veto = kernel_->hooks().On("Intent.chat.Whisper", [](HookContext&) { return false; });
  ChannelSpec req;
  req.name = "shop.Buy";
  req.kind = ChannelKind::kRequest;
  req.schema = "molt.test.Add";
  req.verify = VerifyAdd;
  req.open = true;
  const ChannelId buy = net_->channels().Declare(std::move(req)).value();
  Listen();
  std::vector<std::string> warnings;
  Logger::Registration capture = Logger::Get().Capture([&](std::string_view line, LogLevel l) {
    if (l == LogLevel::kWarn) {
      warnings.emplace_back(line);
    }
  });
  std::vector<std::uint8_t> garbage = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Intent(99, SayPayload("x"));                        // unknown channel
    c.Intent(buy, AddPayload(1));                         // a request channel, as an intent
    c.Intent(guarded, garbage);                           // not a Say
    c.Intent(guarded, SayPayload(std::string(40, 'x')));  // rule: text <= 32
    c.Intent(unguarded, SayPayload("x"));                 // no validator, not Open
    c.Intent(unguarded, SayPayload("y"));                 // (warned once)
    c.Intent(hooked, SayPayload("x"));                    // the hook vetoes
    c.Intent(guarded, SayPayload("fine"));                // still served
    c.Bye();
    c.WaitClosed();
  });
  EXPECT_EQ(Rejected(*net_, Reject::kUnknownChannel), 2u);
  EXPECT_EQ(Rejected(*net_, guarded, Reject::kBadPayload), 1u);
  EXPECT_EQ(Rejected(*net_, guarded, Reject::kRuleViolated), 1u);
  EXPECT_EQ(Rejected(*net_, unguarded, Reject::kUnguarded), 2u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("intent \"chat.Shout\" rejected a payload: it has no validator and "
                             "is not Open, so it is fail-closed; add a validator (a "
                             "Intent.chat.Shout hook handler, or rules), or declare it Open"),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ(Rejected(*net_, hooked, Reject::kHookRejected), 1u);
  EXPECT_EQ(net_->channels().Find(guarded)->counters().accepted, 1u);
  EXPECT_EQ(handled, 1);
  EXPECT_EQ(net_->stats().intents_rejected, 7u);
  const std::string json = NetStatsJson(*net_);
  EXPECT_NE(json.find("\"chat.Say\":{\"id\":0,\"kind\":\"intent\",\"accepted\":1,\"rejected\":2"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"unknown_channel\":2"), std::string::npos) << json;
}

TEST_F(NetTest, TheTokenBucketIsPerSessionPerChannel) {
  const ChannelId say = DeclareSay("chat.Say", true, /*rate=*/0.001);  // burst 1
  int limited_hook = 0;
  int limited_topic = 0;
  Connection h = kernel_->hooks().On("Net.RateLimited", [&](HookContext& ctx) {
    EXPECT_EQ(ctx.args[1].AsString(), "chat.Say");
    ++limited_hook;
    return true;
  });
  Connection t =
      kernel_->bus().Subscribe("Net.RateLimited", [&](std::string_view, Args) { ++limited_topic; });
  Listen();
  Run([&] {
    TestClient a(port_);
    TestClient b(port_);
    ASSERT_EQ(a.Hello("a").type(), w::Body::Welcome);
    ASSERT_EQ(b.Hello("b").type(), w::Body::Welcome);
    for (int i = 0; i < 4; ++i) {
      a.Intent(say, SayPayload("x"));
    }
    b.Intent(say, SayPayload("x"));  // b has its own bucket
    a.Bye();
    b.Bye();
    a.WaitClosed();
    b.WaitClosed();
  });
  const ChannelCounters& c = net_->channels().Find(say)->counters();
  EXPECT_EQ(c.accepted, 2u);
  EXPECT_EQ(c.rejected[static_cast<std::size_t>(Reject::kRateLimited)], 3u);
  EXPECT_EQ(net_->stats().intents_rate_limited, 3u);
  EXPECT_EQ(limited_hook, 3);
  EXPECT_EQ(limited_topic, 3);
}

TEST_F(NetTest, RepeatOffendersAreDroppedThenToldThenDisconnected) {
  NetOptions o = NoResume();
  o.offender_drop_first = 2;
  o.offender_kick_after = 6;
  o.error_frame_gap_seconds = 0;
  Boot(o);
  const ChannelId say = DeclareSay("chat.Say");
  Listen();
  EndLog ends(*kernel_);
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    for (int i = 0; i < 6; ++i) {
      c.Intent(say, SayPayload(std::string(40, 'x')));  // rule violations
    }
    int errors = 0;
    std::string bye;
    for (;;) {
      Frame f = c.Next(3000ms);
      if (f.closed || f.timeout) {
        break;
      }
      if (f.type() == w::Body::Error) {
        ++errors;
        const w::Error* e = f.envelope()->body_as_Error();
        EXPECT_EQ(e->reason(), w::RejectReason::RuleViolated);
        EXPECT_EQ(e->channel(), say);
        EXPECT_EQ(Text(f.envelope()),
                  "field \"text\" (id 0) of molt.test.Say: length 40 exceeds 32");
      } else if (f.type() == w::Body::Bye) {
        bye = f.envelope()->body_as_Bye()->reason()->str();
        EXPECT_EQ(Text(f.envelope()), "6 refused messages within 10 s");
      }
    }
    EXPECT_EQ(errors, 3);  // offences 3, 4 and 5; the 6th disconnects
    EXPECT_EQ(bye, "Offender");
  });
  EXPECT_EQ(ends.reasons, std::vector<std::string>{"Offender"});
  EXPECT_EQ(net_->stats().error_frames, 3u);
}

TEST_F(NetTest, RequestsAreAnsweredRejectedOrTimedOut) {
  std::vector<RequestToken> unanswered;
  ChannelSpec spec;
  spec.name = "shop.Price";
  spec.kind = ChannelKind::kRequest;
  spec.schema = "molt.test.Add";
  spec.verify = VerifyAdd;
  spec.rules = {FieldRule::Range(0, "amount", FieldType::kInt32, 0, 100)};
  spec.timeout_seconds = 0.2;  // clamped to the 0.5 s minimum
  spec.reject_payload = {'n', 'o'};
  spec.on_request = [&](Session&, std::span<Value> args, RequestToken reply) {
    auto* add = flatbuffers::GetRoot<molt::test::Add>(args[0].as.ptr);
    if (add->amount() == 7) {
      unanswered.push_back(reply);  // answered by the timeout
      return;
    }
    const std::string price = std::to_string(add->amount() * 2);
    EXPECT_TRUE(
        net_->Reply(reply, Status::Code::kOk,
                    std::span(reinterpret_cast<const std::uint8_t*>(price.data()), price.size()))
            .ok());
  };
  const ChannelId price = net_->channels().Declare(std::move(spec)).value();
  EXPECT_DOUBLE_EQ(net_->channels().Find(price)->timeout_seconds(), 0.5);
  Listen();
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Request(price, 1, AddPayload(21));
    Frame f = c.NextOf(w::Body::Response);
    ASSERT_EQ(f.type(), w::Body::Response);
    const w::Response* r = f.envelope()->body_as_Response();
    EXPECT_EQ(r->id(), 1u);
    EXPECT_EQ(r->status(), 0);
    EXPECT_EQ(std::string(r->payload()->begin(), r->payload()->end()), "42");

    c.Request(price, 2, AddPayload(500));  // the range rule rejects: answered with RejectValue
    f = c.NextOf(w::Body::Response);
    r = f.envelope()->body_as_Response();
    EXPECT_EQ(r->id(), 2u);
    EXPECT_EQ(r->status(), MOLT_ERR_REJECTED);
    EXPECT_EQ(std::string(r->payload()->begin(), r->payload()->end()), "no");

    const auto sent = std::chrono::steady_clock::now();
    c.Request(price, 3, AddPayload(7));  // never answered by the handler
    f = c.NextOf(w::Body::Response);
    r = f.envelope()->body_as_Response();
    EXPECT_EQ(r->id(), 3u);
    EXPECT_EQ(r->status(), MOLT_ERR_TIMEOUT);
    EXPECT_GE(std::chrono::steady_clock::now() - sent, 400ms);
  });
  ASSERT_EQ(unanswered.size(), 1u);
  EXPECT_EQ(net_->Reply(unanswered[0], Status::Code::kOk, {}).code(), Status::Code::kStale);
  EXPECT_EQ(net_->channels().Find(price)->counters().timeouts, 1u);
  EXPECT_EQ(net_->stats().requests_rejected, 1u);
}

TEST_F(NetTest, EventsGoToOneSessionAListOrEveryone) {
  const ChannelId said = DeclareEvent("chat.Said");
  ChannelSpec bad;
  bad.name = "chat.Bad";
  bad.kind = ChannelKind::kEvent;
  EXPECT_EQ(net_->channels().Declare(std::move(bad)).status().message(),
            "channel \"chat.Bad\": name its payload schema (the FlatBuffers root type, e.g. "
            "\"chat.Say\")");
  // The sender's intent makes the server send: to the sender, then to a list, then to all.
  const ChannelId say = DeclareSay("chat.Say", true, 0, [&](Session& s, std::span<Value>) {
    EXPECT_TRUE(net_->Send(said, s.id(), SayPayload("to a")).ok());
    const std::vector<SessionId> all = net_->sessions().ActiveIds();
    EXPECT_TRUE(net_->SendList(said, all, SayPayload("to the list")).ok());
    EXPECT_TRUE(net_->Broadcast(said, SayPayload("to all")).ok());
  });
  EXPECT_EQ(net_->Send(say, 1, SayPayload("x")).message(),
            "channel id 1 is not a declared event or unreliable channel");
  Listen();
  auto text = [](const Frame& f) {
    const auto* p = f.envelope()->body_as_Event()->payload();
    return flatbuffers::GetRoot<molt::test::Say>(p->data())->text()->str();
  };
  Run([&] {
    TestClient a(port_);
    TestClient b(port_);
    ASSERT_EQ(a.Hello("a").type(), w::Body::Welcome);
    ASSERT_EQ(b.Hello("b").type(), w::Body::Welcome);
    a.Intent(say, SayPayload("go"));
    EXPECT_EQ(text(a.NextOf(w::Body::Event)), "to a");
    EXPECT_EQ(text(a.NextOf(w::Body::Event)), "to the list");
    EXPECT_EQ(text(a.NextOf(w::Body::Event)), "to all");
    EXPECT_EQ(text(b.NextOf(w::Body::Event)), "to the list");
    EXPECT_EQ(text(b.NextOf(w::Body::Event)), "to all");
  });
  EXPECT_EQ(net_->channels().Find(said)->counters().events_sent, 5u);
}

// The close: once the intake stops, a handshake is refused (ShuttingDown) while the sessions
// there are still served (a stop() may still send them a last event); Shutdown then ends them.
TEST_F(NetTest, AfterStopAcceptingSessionsAreStillServedAndNewHandshakesRefused) {
  const ChannelId said = DeclareEvent("chat.Said");
  Listen();
  Run([&] {
    TestClient a(port_);
    ASSERT_EQ(a.Hello("a").type(), w::Body::Welcome);
    TestClient late(port_);  // connected, no Hello yet
    std::atomic<bool> stopped{false};
    std::function<void()> stop = [&] {
      if (net_->peers() < 2) {  // not accepted yet: the acceptor closing would drop it
        kernel_->loop().Post(stop);
        return;
      }
      net_->StopAccepting();
      EXPECT_TRUE(net_->Broadcast(said, SayPayload("last words")).ok());
      stopped = true;
    };
    kernel_->loop().Post(stop);
    while (!stopped) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    Frame f = late.Hello("late");
    ASSERT_EQ(f.type(), w::Body::Refuse);
    EXPECT_EQ(f.envelope()->body_as_Refuse()->reason(), w::RefuseReason::ShuttingDown);
    Frame e = a.NextOf(w::Body::Event);
    ASSERT_EQ(e.type(), w::Body::Event);
    kernel_->loop().Post([&] { net_->Shutdown(); });
    Frame bye = a.NextOf(w::Body::Bye);
    ASSERT_EQ(bye.type(), w::Body::Bye);
    EXPECT_EQ(bye.envelope()->body_as_Bye()->reason()->str(), "ServerShutdown");
  });
}

TEST_F(NetTest, ADrainTellsEverySessionWhereToGoAndTheByeSaysItToo) {
  Boot(NetOptions());  // the default resume window: 30 s
  Listen();
  Run([&] {
    TestClient a(port_);
    auto b = std::make_unique<TestClient>(port_);
    ASSERT_EQ(a.Hello("a").type(), w::Body::Welcome);
    const Frame welcome_b = b->Hello("b");
    ASSERT_EQ(welcome_b.type(), w::Body::Welcome);
    const auto* t = welcome_b.envelope()->body_as_Welcome()->resume_token();
    const std::vector<std::uint8_t> token(t->begin(), t->end());
    b.reset();  // b's link is lost: its session waits for it to resume
    std::atomic<std::size_t> told{99};
    std::function<void()> redirect = [&] {
      if (net_->sessions().count() != 2 || net_->peers() != 1) {
        kernel_->loop().Post(redirect);
        return;
      }
      told =
          net_->Redirect({{"eu-2", "10.0.0.2:7777", "", 0}}, "the server is draining")[0].sessions;
    };
    kernel_->loop().Post(redirect);
    auto expect_redirect = [](TestClient& c) {
      Frame f = c.NextOf(w::Body::Redirect);
      ASSERT_EQ(f.type(), w::Body::Redirect);
      const w::Redirect* r = f.envelope()->body_as_Redirect();
      EXPECT_EQ(r->address()->str(), "10.0.0.2:7777");  // TCP links: the TCP address
      EXPECT_EQ(r->server()->str(), "eu-2");
      EXPECT_EQ(r->reason()->str(), "the server is draining");
    };
    expect_redirect(a);
    EXPECT_EQ(told.load(), 1u) << "b's link was down";
    // A new player is refused, saying where to go; b's client comes back, resumes its session
    // and is told after its Welcome.
    TestClient late(port_);
    Frame refused = late.Hello("late");
    ASSERT_EQ(refused.type(), w::Body::Refuse);
    EXPECT_EQ(refused.envelope()->body_as_Refuse()->reason(), w::RefuseReason::ShuttingDown);
    EXPECT_EQ(refused.envelope()->body_as_Refuse()->text()->str(),
              "the server is draining: go to server eu-2 at 10.0.0.2:7777");
    TestClient back(port_);
    Frame resumed = back.Resume("b", token);
    ASSERT_EQ(resumed.type(), w::Body::Welcome);
    EXPECT_TRUE(resumed.envelope()->body_as_Welcome()->resumed());
    expect_redirect(back);
    kernel_->loop().Post([&] { net_->Shutdown(); });
    Frame bye = a.NextOf(w::Body::Bye);
    ASSERT_EQ(bye.type(), w::Body::Bye);
    EXPECT_EQ(bye.envelope()->body_as_Bye()->reason()->str(), "ServerShutdown");
    EXPECT_EQ(bye.envelope()->body_as_Bye()->text()->str(),
              "the server is draining: go to server eu-2 at 10.0.0.2:7777");
  });
}

TEST_F(NetTest, ADrainSpreadsItsSessionsOverTheLeastLoadedTargets) {
  Listen();
  Run([&] {
    TestClient a(port_);
    TestClient b(port_);
    TestClient c(port_);
    ASSERT_EQ(a.Hello("a").type(), w::Body::Welcome);
    ASSERT_EQ(b.Hello("b").type(), w::Body::Welcome);
    ASSERT_EQ(c.Hello("c").type(), w::Body::Welcome);
    std::vector<Network::RedirectTarget> spread;
    molt::test::RunOnLoop(kernel_->loop(), [&] {
      // eu-4 takes no TCP client; eu-3 serves one already, eu-2 none.
      spread = net_->Redirect({{"eu-2", "10.0.0.2:7777", "", 0},
                               {"eu-3", "10.0.0.3:7777", "", 1},
                               {"eu-4", "", "10.0.0.4:7780", 0}},
                              "moving");
    });
    ASSERT_EQ(spread.size(), 3u);
    EXPECT_EQ(spread[0].sessions, 2u);  // a, then b (a tie with eu-3: the first)
    EXPECT_EQ(spread[1].sessions, 2u);  // c
    EXPECT_EQ(spread[2].sessions, 0u);
    std::vector<std::string> to;
    for (TestClient* t : {&a, &b, &c}) {
      Frame f = t->NextOf(w::Body::Redirect);
      ASSERT_EQ(f.type(), w::Body::Redirect);
      to.push_back(f.envelope()->body_as_Redirect()->server()->str() + " " +
                   f.envelope()->body_as_Redirect()->address()->str());
    }
    EXPECT_EQ(to, (std::vector<std::string>{"eu-2 10.0.0.2:7777", "eu-2 10.0.0.2:7777",
                                            "eu-3 10.0.0.3:7777"}));
    kernel_->loop().Post([&] { net_->Shutdown(); });
    Frame bye = c.NextOf(w::Body::Bye);
    ASSERT_EQ(bye.type(), w::Body::Bye);
    EXPECT_EQ(bye.envelope()->body_as_Bye()->text()->str(),
              "moving: go to server eu-3 at 10.0.0.3:7777");
  });
}

// A connection without a socket: the test hands Network::Receive the bytes a read would.
class StreamPeer final : public Peer {
 public:
  StreamPeer() : Peer("10.0.0.9") {}
  void Write(std::span<const std::uint8_t>) override {}
  std::size_t queued_bytes() const override { return 0; }
  void Close(bool) override {}
};

TEST_F(NetTest, FramesCutAnywhereAcrossReadsAreEachHandledOnceInOrder) {
  std::map<SessionId, std::vector<std::string>> seen;
  const ChannelId say = DeclareSay("chat.Say", true, 0, [&](Session& s, std::span<Value> args) {
    seen[s.id()].push_back(flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
  });
  // Twenty intents of different lengths, so frames start at every offset of a read.
  std::vector<std::uint8_t> stream;
  std::vector<std::string> sent;
  for (int i = 0; i < 20; ++i) {
    sent.push_back(std::string(static_cast<std::size_t>(i), 'x') + std::to_string(i));
    const std::vector<std::uint8_t> f = TestClient::IntentFrame(say, SayPayload(sent.back()));
    stream.insert(stream.end(), f.begin(), f.end());
  }
  std::vector<std::unique_ptr<StreamPeer>> peers;
  for (std::size_t chunk : {1, 2, 3, 4, 5, 7, 13, 64, 100000}) {
    peers.push_back(std::make_unique<StreamPeer>());
    StreamPeer& peer = *peers.back();
    ASSERT_TRUE(net_->Attach(peer));
    net_->Receive(peer, TestClient::HelloFrame("user" + std::to_string(chunk)));
    ASSERT_NE(peer.session(), 0u);
    for (std::size_t at = 0; at < stream.size(); at += chunk) {
      net_->Receive(peer, std::span(stream).subspan(at, std::min(chunk, stream.size() - at)));
    }
    EXPECT_EQ(seen[peer.session()], sent) << "read in pieces of " << chunk << " bytes";
  }
  EXPECT_EQ(net_->stats().intents_accepted, sent.size() * peers.size());
  EXPECT_EQ(net_->stats().intents_rejected, 0u);
  for (auto& p : peers) {
    net_->Detach(*p, ExitReason::kClientClosed);
  }
}

// The transport reads a connection until a read comes back short, a few full reads a turn. A
// client whose bytes fill read after read (over 1 MB sent at once: some 70 reads of the 16 KB
// buffer, over many turns) is read to its end, each frame handled once and in order, and a
// client that connects meanwhile is served.
TEST_F(NetTest, AClientWhoseBytesFillReadAfterReadIsReadToItsEndAndOthersAreServed) {
  NetOptions o = NoResume();
  o.bytes_per_tick = 1u << 30;  // no flood: this client is only fast
  o.messages_per_tick = 1u << 20;
  Boot(std::move(o));
  std::vector<int> from_ada;
  std::vector<std::string> from_bob;
  const ChannelId say = DeclareSay("chat.Say", true, 1e9, [&](Session& s, std::span<Value> args) {
    const std::string text = flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str();
    if (s.user() == "ada") {
      from_ada.push_back(std::stoi(text));
    } else {
      from_bob.push_back(text);
    }
  });
  Listen();
  constexpr int kIntents = 16000;
  std::vector<std::uint8_t> stream;
  for (int i = 0; i < kIntents; ++i) {
    const std::vector<std::uint8_t> f =
        TestClient::IntentFrame(say, SayPayload(std::to_string(i) + std::string(24, '.')));
    stream.insert(stream.end(), f.begin(), f.end());
  }
  ASSERT_GT(stream.size(), 1'000'000u);
  Run([&] {
    TestClient ada(port_);
    ASSERT_EQ(ada.Hello("ada").type(), w::Body::Welcome);
    bool sent = false;
    std::thread writer([&] { sent = ada.SendRaw(stream); });
    TestClient bob(port_);
    const bool welcomed = bob.Hello("bob").type() == w::Body::Welcome;
    bob.Intent(say, SayPayload("hello"));
    bob.Bye();
    writer.join();
    ASSERT_TRUE(welcomed);
    ASSERT_TRUE(sent);
    ada.Bye();  // after the stream: handled once all of it is
    ada.WaitClosed(std::chrono::milliseconds(15000));
    bob.WaitClosed();
  });
  ASSERT_EQ(from_ada.size(), static_cast<std::size_t>(kIntents));
  for (int i = 0; i < kIntents; ++i) {
    ASSERT_EQ(from_ada[static_cast<std::size_t>(i)], i) << "intent " << i;
  }
  EXPECT_EQ(from_bob, std::vector<std::string>{"hello"});
}

TEST_F(NetTest, AHandlerMayRemoveItsOwnChannel) {
  ChannelId say = 0;
  int handled = 0;
  say = DeclareSay("chat.Once", true, 0, [&](Session&, std::span<Value>) {
    ++handled;
    EXPECT_TRUE(net_->channels().Remove(say).ok());  // the pipeline still holds it (ASan checks)
  });
  int published = 0;
  Connection t =
      kernel_->bus().Subscribe("Intent.chat.Once", [&](std::string_view, Args) { ++published; });
  Listen();
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Intent(say, SayPayload("once"));
    c.Intent(say, SayPayload("twice"));  // the channel is gone: unknown
    c.Bye();
    c.WaitClosed();
  });
  EXPECT_EQ(handled, 1);
  EXPECT_EQ(published, 1);
  EXPECT_EQ(Rejected(*net_, Reject::kUnknownChannel), 1u);
}

}  // namespace
}  // namespace molt::kernel::net
