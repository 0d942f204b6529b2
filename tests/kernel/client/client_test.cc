// SPDX-License-Identifier: Apache-2.0
// libmolt_client (sdk/include/molt/client.h) against a real Network on loopback, in one thread:
// the test alternates the server's loop and molt_client_step, as an app's frame loop would.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <molt/client.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "client_fixture.h"
#include "kernel/src/net/replica.h"
#include "relay.h"
#include "tests/support/burner.h"

namespace molt::kernel::net {
namespace {

TEST_F(ClientTest, ConnectsSendsIntentsAndReceivesEvents) {
  const ChannelId said_id = DeclareEvent("chat.Said");
  std::vector<std::string> heard;
  DeclareSay("chat.Say", true, 100, [&](Session& s, std::span<Value> args) {
    auto* m = flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr);
    heard.push_back(s.user() + ": " + m->text()->str());
    (void)net_->Broadcast(said_id, SayPayload("echo " + m->text()->str()));
  });
  Listen();
  ASSERT_TRUE(Connect());
  EXPECT_EQ(journal_.states, (std::vector<std::string>{"connecting", "connected"}));
  EXPECT_NE(molt_client_session(client_), 0u);
  EXPECT_EQ(net_->sessions().Get(molt_client_session(client_))->user(), "ada");
  const std::uint16_t say = Channel("chat.Say");
  const std::vector<std::uint8_t> p = SayPayload("hi");
  ASSERT_EQ(molt_client_intent(client_, say, p.data(), p.size()), MOLT_OK);
  ASSERT_TRUE(Pump([&] { return !journal_.events.empty(); }));
  EXPECT_EQ(heard, std::vector<std::string>{"ada: hi"});
  EXPECT_EQ(journal_.events, std::vector<std::string>{"echo hi"});

  // Argument and state errors say what is wrong.
  std::uint16_t id = 0;
  EXPECT_EQ(molt_client_channel(client_, "chat.Nope", &id), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(Error(), "the server has no channel \"chat.Nope\"");
  EXPECT_EQ(molt_client_intent(client_, said_id, p.data(), p.size()), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(Error(), "the server has no intent or unreliable channel with id " +
                         std::to_string(said_id) + " (channel \"chat.Said\" is of kind Event)");
  EXPECT_EQ(molt_client_intent(client_, say, nullptr, 3), MOLT_ERR_INVALID_ARGUMENT);
  const std::vector<std::uint8_t> big(9000, 1);
  EXPECT_EQ(molt_client_intent(client_, say, big.data(), big.size()), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(), "a payload of 9000 bytes does not fit the server's 8192-byte frames");
  EXPECT_EQ(molt_client_connect(client_, "127.0.0.1", port_, "ada", nullptr, 0, nullptr, 0),
            MOLT_ERR_STATE);

  // Disconnecting says goodbye: the server ends the session as ClientClosed.
  std::vector<std::string> ends;
  Connection end = kernel_->bus().Subscribe(
      "Kernel.SessionEnd", [&](std::string_view, Args a) { ends.emplace_back(a[1].AsString()); });
  ASSERT_EQ(molt_client_disconnect(client_), MOLT_OK);
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_IDLE);
  ASSERT_TRUE(Pump([&] { return !ends.empty(); }));
  EXPECT_EQ(ends, std::vector<std::string>{"ClientClosed"});
  end.Disconnect();
}

TEST_F(ClientTest, RequestsAreAnsweredRejectedOrTimedOut) {
  ChannelSpec spec;
  spec.name = "shop.Double";
  spec.kind = ChannelKind::kRequest;
  spec.schema = "molt.test.Add";
  spec.verify = VerifyAdd;
  spec.rules = {FieldRule::Range(0, "amount", FieldType::kInt32, 0, 100)};
  spec.rate = 100;
  spec.timeout_seconds = 0.5;
  spec.reject_payload = {'n', 'o'};
  spec.on_request = [&](Session&, std::span<Value> args, RequestToken reply) {
    const int amount = flatbuffers::GetRoot<molt::test::Add>(args[0].as.ptr)->amount();
    if (amount == 7) {
      return;  // never answered: the server's timeout answers
    }
    const std::string s = std::to_string(amount * 2);
    (void)net_->Reply(reply, Status::Code::kOk,
                      std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
  };
  ASSERT_TRUE(net_->channels().Declare(std::move(spec)).ok());
  Listen();
  ASSERT_TRUE(Connect());
  const std::uint16_t dbl = Channel("shop.Double");
  for (int amount : {21, 500, 7}) {
    const std::vector<std::uint8_t> p = AddPayload(amount);
    ASSERT_EQ(molt_client_request(client_, dbl, p.data(), p.size(), 0, OnResponse, &journal_),
              MOLT_OK);
  }
  ASSERT_TRUE(Pump([&] { return journal_.responses.size() == 3; }));
  EXPECT_EQ(journal_.responses[0], std::make_pair(MOLT_OK, std::string("42")));
  EXPECT_EQ(journal_.responses[1], std::make_pair(MOLT_ERR_REJECTED, std::string("no")));
  EXPECT_EQ(journal_.responses[2], std::make_pair(MOLT_ERR_TIMEOUT, std::string()));

  // A request in flight when the connection ends is answered too: MOLT_ERR_TIMEOUT.
  const std::vector<std::uint8_t> p = AddPayload(7);
  ASSERT_EQ(molt_client_request(client_, dbl, p.data(), p.size(), 0, OnResponse, &journal_),
            MOLT_OK);
  ASSERT_EQ(molt_client_disconnect(client_), MOLT_OK);
  ASSERT_EQ(journal_.responses.size(), 4u);
  EXPECT_EQ(journal_.responses[3].first, MOLT_ERR_TIMEOUT);
}

TEST_F(ClientTest, TheClientMirrorsTheChannelsRateLimitSoTheServerNeverRefuses) {
  const ChannelId say = DeclareSay("chat.Say", true, /*rate=*/0.001);  // burst 1
  Listen();
  ASSERT_TRUE(Connect());
  const std::vector<std::uint8_t> p = SayPayload("x");
  EXPECT_EQ(molt_client_intent(client_, say, p.data(), p.size()), MOLT_OK);
  EXPECT_EQ(molt_client_intent(client_, say, p.data(), p.size()), MOLT_ERR_RATE_LIMITED);
  EXPECT_NE(Error().find("the server would refuse this one"), std::string::npos) << Error();
  Pump([&] { return net_->channels().Find(say)->counters().accepted == 1; });
  EXPECT_EQ(net_->channels().Find(say)->counters().accepted, 1u);
  EXPECT_EQ(net_->channels().Find(say)->counters().rejected_total(), 0u);
}

// An app that sends as fast as the library admits, for long enough to drain the channel's burst
// and then ride its rate: frames sent exactly 1/rate apart can reach the server closer together
// (the network, and a server that reads its clock once per batch), and a server bucket drained to
// its last token refuses those. The send queue leaves a margin (95% of the rate, a quarter of the
// burst), so a client that never breaks the rules is never refused.
TEST_F(ClientTest, AnAppSendingAtTheChannelsFullRateIsNeverRefused) {
  const ChannelId say = DeclareSay("chat.Say", true, /*rate=*/40);  // burst 40
  Listen();
  ASSERT_TRUE(Connect());
  const std::vector<std::uint8_t> p = SayPayload("x");
  int sent = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
  while (std::chrono::steady_clock::now() < end) {
    while (molt_client_intent(client_, say, p.data(), p.size()) == MOLT_OK) {
      ++sent;
    }
    Pump([] { return false; }, std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(Pump([&] {
    return net_->channels().Find(say)->counters().accepted +
               net_->channels().Find(say)->counters().rejected_total() ==
           static_cast<std::uint64_t>(sent);
  }));
  EXPECT_GT(sent, 100);  // the burst, then the rate for 2.5 s
  EXPECT_EQ(net_->channels().Find(say)->counters().rejected_total(), 0u);
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED);
}

// The issue that made the client pace itself: an app sending intents as fast as the library
// accepts them, on a channel with no rate limit, was ended as Flood after a few hundred. Now the
// client holds what the server's transport budget would refuse and lets it out at its pace.
TEST_F(ClientTest, AClientSendingAsFastAsItCanIsPacedNeverFloodedAndLosesNothing) {
  molt_client_destroy(client_);
  molt_client_options o{};
  o.struct_size = sizeof(o);
  o.max_send_queue_bytes = 16 * 1024;  // a small queue, so the app meets it
  ASSERT_EQ(molt_client_create(&o, &client_), MOLT_OK);
  molt_client_on_state(client_, OnState, &journal_);
  std::vector<int> seen;
  const ChannelId say_id =
      DeclareSay("load.Say", true, INFINITY, [&](Session&, std::span<Value> a) {
        seen.push_back(
            std::stoi(flatbuffers::GetRoot<molt::test::Say>(a[0].as.ptr)->text()->str()));
      });
  Listen();
  ASSERT_TRUE(Connect());
  const std::uint16_t say = Channel("load.Say");
  constexpr int kIntents = 3000;  // the default budget takes 64 per tick (3840/s), 256 at once
  int sent = 0;
  int full = 0;
  while (sent < kIntents) {
    const std::vector<std::uint8_t> p = SayPayload(std::to_string(sent));
    const molt_status_t s = molt_client_intent(client_, say, p.data(), p.size());
    if (s == MOLT_OK) {
      ++sent;
      continue;
    }
    ASSERT_EQ(s, MOLT_ERR_STATE) << Error();
    ASSERT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED) << journal_.states.back();
    if (++full == 1) {
      EXPECT_EQ(Error().rfind("the send queue is full (", 0), 0u) << Error();
      EXPECT_NE(Error().find(" bytes wait; max_send_queue_bytes is 16384): step or wait to let it "
                             "drain at the server's pace"),
                std::string::npos)
          << Error();
    }
    Pump([] { return false; }, std::chrono::milliseconds(1));  // one frame of the app's loop
  }
  EXPECT_GT(full, 0);
  ASSERT_TRUE(Pump([&] {
    return seen.size() == kIntents || molt_client_state(client_) != MOLT_CLIENT_CONNECTED;
  }));
  ASSERT_EQ(seen.size(), std::size_t{kIntents}) << journal_.states.back();
  for (int i = 0; i < kIntents; ++i) {
    ASSERT_EQ(seen[i], i) << "out of order at " << i;
  }
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED);
  EXPECT_EQ(net_->stats().transport_floods, 0u);
  EXPECT_EQ(net_->channels().Find(say_id)->counters().accepted, std::uint64_t{kIntents});
  EXPECT_EQ(molt_client_send_queue_bytes(client_), 0u);
}

// An app that is not a frame loop: it sleeps in molt_client_wait (or its own poller on the
// socket) until the socket or one of the client's timers needs a step.
TEST_F(ClientTest, AnAppThatWaitsIsWokenByItsSocketAndItsTimers) {
  EXPECT_EQ(molt_client_socket(client_), -1);  // idle: nothing to poll, nothing scheduled
  EXPECT_EQ(molt_client_socket_events(client_), 0);
  EXPECT_EQ(molt_client_timeout(client_), -1);
  EXPECT_EQ(molt_client_wait(client_, INFINITY), MOLT_ERR_STATE);
  EXPECT_EQ(Error(),
            "nothing to wait for: the client has no connection and no timer (connect first)");
  EXPECT_EQ(molt_client_wait(client_, -1), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(molt_client_wait(client_, NAN), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(molt_client_wait(client_, 0.001), MOLT_OK);

  const ChannelId said = DeclareEvent("chat.Said");
  DeclareAddRequest("slow.Ask", [](Session&, std::span<Value>, RequestToken) {});  // never answers
  Listen();
  ASSERT_EQ(molt_client_connect(client_, "127.0.0.1", port_, "ada", nullptr, 0, nullptr, 0),
            MOLT_OK);
  EXPECT_GE(molt_client_socket(client_), 0);  // connecting: writable once connected
  EXPECT_EQ(molt_client_socket_events(client_), MOLT_CLIENT_WAIT_WRITE);
  EXPECT_GT(molt_client_timeout(client_), 0);  // the connect deadline
  EXPECT_LE(molt_client_timeout(client_), 5);
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; }));
  EXPECT_EQ(molt_client_socket_events(client_), MOLT_CLIENT_WAIT_READ);
  const double idle = molt_client_timeout(client_);
  EXPECT_GT(idle, 0);  // an idle connected client wakes for its next ping, no sooner
  EXPECT_LE(idle, 1.0);

  // The server sends: the socket the app polls becomes readable; a wait returns; a step delivers.
  ASSERT_TRUE(net_->Send(said, molt_client_session(client_), SayPayload("wake up")).ok());
  ASSERT_TRUE(RunUntil([&] {  // the server's loop writes it; the client's socket turns readable
    pollfd p{molt_client_socket(client_), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }));
  EXPECT_EQ(molt_client_wait(client_, 5), MOLT_OK);
  EXPECT_EQ(molt_client_step(client_, 0), MOLT_OK);
  EXPECT_EQ(journal_.events, std::vector<std::string>{"wake up"});

  // A request's deadline is one of the client's timers.
  const std::vector<std::uint8_t> a = AddPayload(1);
  ASSERT_EQ(molt_client_request(client_, Channel("slow.Ask"), a.data(), a.size(), 0.05, OnResponse,
                                &journal_),
            MOLT_OK);
  EXPECT_LE(molt_client_timeout(client_), 0.05);
  while (journal_.responses.empty()) {  // the app's whole loop: wait, step
    ASSERT_EQ(molt_client_wait(client_, 5), MOLT_OK);
    ASSERT_EQ(molt_client_step(client_, 0), MOLT_OK);
  }
  EXPECT_EQ(journal_.responses[0].first, MOLT_ERR_TIMEOUT);
}

// A host name goes through the resolver's thread, which cannot wake an app's poll: while it
// resolves there is no socket yet and the client asks to be stepped again within a millisecond.
TEST_F(ClientTest, AHostNameIsResolvedWhileTheAppWaits) {
  Listen();
  ASSERT_EQ(molt_client_connect(client_, "localhost", port_, "ada", nullptr, 0, nullptr, 0),
            MOLT_OK);
  EXPECT_EQ(molt_client_socket(client_), -1);
  EXPECT_EQ(molt_client_socket_events(client_), 0);
  EXPECT_GE(molt_client_timeout(client_), 0);
  EXPECT_LE(molt_client_timeout(client_), 0.001);
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; }))
      << journal_.states.back();
}

TEST_F(ClientTest, RefusalsKicksAndUnreachableServersCloseWithTheReason) {
  Connection auth = kernel_->hooks().On(
      "Auth.Hello", [](HookContext& ctx) { return ctx.args[0].AsString() != "mallory"; });
  Listen();
  ASSERT_TRUE(Connect("mallory"));
  EXPECT_EQ(journal_.states.back(), "closed (AuthFailed: authentication failed)");
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CLOSED);

  ASSERT_TRUE(Connect("ada"));  // a closed client may connect again
  ASSERT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED);
  ASSERT_TRUE(net_->Kick(molt_client_session(client_), "cheating").ok());
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CLOSED; }));
  EXPECT_EQ(journal_.states.back(), "closed (Kicked: cheating)");
  EXPECT_EQ(molt_client_session(client_), 0u);

  net_.reset();  // nothing listens on the port any more
  ASSERT_TRUE(Connect("ada"));
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CLOSED);
  EXPECT_NE(journal_.states.back().find("closed (cannot connect to 127.0.0.1:"), std::string::npos)
      << journal_.states.back();
}

TEST_F(ClientTest, PingsGiveTheClientARoundTripTime) {
  NetOptions o = NoResume();
  o.ping_interval_seconds = 0.05;
  Boot(o);
  Listen();
  ASSERT_TRUE(Connect());
  Pump([&] { return molt_client_rtt(client_) > 0; });
  EXPECT_GT(molt_client_rtt(client_), 0);
  EXPECT_LT(molt_client_rtt(client_), 0.5);
}

TEST_F(ClientTest, ALostLinkReconnectsAndResumesTheSessionWithNothingLost) {
  Boot(NetOptions());  // the server keeps a lost link's session for 30 s
  const ChannelId said_id = DeclareEvent("chat.Said");
  std::vector<std::string> heard;
  const ChannelId say = DeclareSay("chat.Say", true, 100, [&](Session& s, std::span<Value> args) {
    heard.push_back(std::to_string(s.id()) + " " +
                    flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
  });
  Listen();
  molt::test::Relay relay(port_);
  ASSERT_TRUE(Connect("ada", relay.port()));
  const std::uint64_t session = molt_client_session(client_);

  relay.Cut();  // the link breaks under both ends
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_RECONNECTING; }));
  ASSERT_TRUE(Pump([&] { return net_->stats().links_lost == 1; }));
  // Meanwhile: the app keeps sending (queued), the server keeps sending (kept for the session).
  const std::vector<std::uint8_t> p = SayPayload("sent while away");
  ASSERT_EQ(molt_client_intent(client_, say, p.data(), p.size()), MOLT_OK);
  ASSERT_TRUE(net_->Send(said_id, session, SayPayload("missed")).ok());
  // What the app sends while away waits in the send queue, within the channel's rate limit
  // (100 per second, burst 100), and leaves paced after the resume: no flood, no rejection.
  int queued = 1;
  while (molt_client_intent(client_, say, p.data(), p.size()) == MOLT_OK) {
    ++queued;
  }
  EXPECT_EQ(queued, 100);
  EXPECT_EQ(Error(),
            "channel \"chat.Say\" allows 100 per second: the server would refuse this one");
  EXPECT_GT(molt_client_send_queue_bytes(client_), 100 * p.size());

  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; }));
  EXPECT_EQ(molt_client_session(client_), session);
  ASSERT_TRUE(Pump([&] { return !heard.empty() && !journal_.events.empty(); }));
  ASSERT_TRUE(Pump([&] { return heard.size() == 100; }));
  EXPECT_EQ(heard.front(), std::to_string(session) + " sent while away");
  EXPECT_EQ(net_->stats().transport_floods, 0u);
  EXPECT_EQ(net_->channels().Find(say)->counters().rejected_total(), 0u);
  EXPECT_EQ(journal_.events, std::vector<std::string>{"missed"});
  ASSERT_GE(journal_.states.size(), 4u);
  EXPECT_EQ(journal_.states[2], "reconnecting (the server closed the connection)");
  EXPECT_EQ(journal_.states.back(), "connected (resumed)");
  EXPECT_EQ(net_->stats().resumes, 1u);
  EXPECT_EQ(net_->sessions().stats().started, 1u);
  EXPECT_EQ(relay.connections(), 2);
}

TEST_F(ClientTest, ABusyServerWhileReconnectingIsRetriedAndANewSessionDropsTheBacklog) {
  NetOptions o;  // a resume window, and room for one session
  o.max_sessions = 1;
  Boot(o);
  std::vector<std::string> heard;
  const ChannelId say = DeclareSay("chat.Say", true, 100, [&](Session&, std::span<Value> args) {
    heard.push_back(flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
  });
  DeclareAddRequest("shop.Double", [](Session&, std::span<Value>, RequestToken) {});
  Listen();
  molt::test::Relay relay(port_);
  ASSERT_TRUE(Connect("ada", relay.port()));
  const std::uint64_t first = molt_client_session(client_);
  relay.Cut();
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_RECONNECTING; }));
  // While it is away: an intent and a request wait in the backlog; its session ends, and
  // another client takes the only place. Only the server and the other client run meanwhile,
  // so ada cannot come back (and resume) before that.
  const std::vector<std::uint8_t> p = SayPayload("queued");
  ASSERT_EQ(molt_client_intent(client_, say, p.data(), p.size()), MOLT_OK);
  const std::vector<std::uint8_t> a = AddPayload(1);
  ASSERT_EQ(molt_client_request(client_, Channel("shop.Double"), a.data(), a.size(), 0, OnResponse,
                                &journal_),
            MOLT_OK);
  ASSERT_TRUE(RunUntil([&] { return net_->stats().links_lost == 1; }));
  ASSERT_TRUE(net_->Kick(first, "gone").ok());
  molt_client* other = nullptr;
  ASSERT_EQ(molt_client_create(nullptr, &other), MOLT_OK);
  ASSERT_EQ(molt_client_connect(other, "127.0.0.1", port_, "bob", nullptr, 0, nullptr, 0), MOLT_OK);
  ASSERT_TRUE(RunUntil([&] {
    EXPECT_EQ(molt_client_step(other, 0.001), MOLT_OK);
    return molt_client_state(other) == MOLT_CLIENT_CONNECTED;
  }));
  ASSERT_TRUE(Pump([&] {
    EXPECT_EQ(molt_client_step(other, 0.001), MOLT_OK);
    return net_->stats().handshakes_refused >= 1;  // ada's reconnect: ServerFull
  }));
  // Refused for now, not closed: it retries after the refusal's retry_after (5 s).
  Pump([&] { return false; }, std::chrono::milliseconds(200));
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_RECONNECTING);
  molt_client_destroy(other);  // the place frees up
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; },
                   std::chrono::milliseconds(10000)))
      << ::testing::PrintToString(journal_.states);
  EXPECT_EQ(journal_.states.back(),
            "connected (a new session: the server did not resume the old one)");
  EXPECT_NE(molt_client_session(client_), first);
  // The old session's backlog is not sent to the new one; its request is answered.
  ASSERT_EQ(journal_.responses.size(), 1u);
  EXPECT_EQ(journal_.responses[0].first, MOLT_ERR_TIMEOUT);
  Pump([&] { return false; }, std::chrono::milliseconds(100));
  EXPECT_TRUE(heard.empty()) << heard.front();
  for (const std::string& s : journal_.states) {
    EXPECT_FALSE(s.starts_with("closed")) << s;  // never given up on
  }
}

// A swap that changes the channel table tells connected clients (a Channels frame): the client
// finds a channel the swap added, keeps the ids and rate state of those that stayed, and forgets
// one it retired.
TEST_F(ClientTest, AConnectedClientLearnsTheChannelsAServerUpdateAddsAndRetires) {
  const ChannelId said = DeclareEvent("chat.Said");
  const ChannelId say = DeclareSay("chat.Say", true, 2);  // 2 per second, burst 2
  Listen();
  ASSERT_TRUE(Connect());
  std::uint16_t id = 0;
  EXPECT_EQ(molt_client_channel(client_, "chat.News", &id), MOLT_ERR_NOT_FOUND);
  const std::vector<std::uint8_t> p = SayPayload("hi");
  ASSERT_EQ(molt_client_intent(client_, say, p.data(), p.size()), MOLT_OK);
  ASSERT_EQ(molt_client_intent(client_, say, p.data(), p.size()), MOLT_OK);

  const ChannelId news = DeclareEvent("chat.News");
  ASSERT_TRUE(net_->channels().Remove(said).ok());
  EXPECT_EQ(net_->AnnounceChannels(), 1u);
  ASSERT_TRUE(Pump([&] { return molt_client_channel(client_, "chat.News", &id) == MOLT_OK; }));
  EXPECT_EQ(id, news);
  EXPECT_EQ(molt_client_channel(client_, "chat.Said", &id), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(molt_client_channel(client_, "chat.Say", &id), MOLT_OK);
  EXPECT_EQ(id, say);
  // The rate state of a channel that stayed carries on: the burst is still spent.
  EXPECT_EQ(molt_client_intent(client_, say, p.data(), p.size()), MOLT_ERR_RATE_LIMITED);
  EXPECT_TRUE(net_->Broadcast(news, SayPayload("fresh")).ok());
  ASSERT_TRUE(Pump([&] { return !journal_.events.empty(); }));
  EXPECT_EQ(journal_.events, std::vector<std::string>{"fresh"});
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED);
}

// While no plugin generation serves (a failed swap whose restore failed too), handshakes are
// refused with Starting: a new client is closed with the reason, one resuming keeps trying and
// resumes its session once a generation serves again.
TEST_F(ClientTest, AServerWithNoGenerationServingRefusesSayingItIsStarting) {
  Boot(NetOptions());  // a resume window
  Listen();
  net_->SetServing(false);
  ASSERT_TRUE(Connect("ada"));
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CLOSED);
  EXPECT_EQ(journal_.states.back(),
            "closed (Starting: the server is starting: no plugin generation serves yet)");

  net_->SetServing(true);
  molt::test::Relay relay(port_);
  ASSERT_TRUE(Connect("ada", relay.port()));
  const std::uint64_t session = molt_client_session(client_);
  net_->SetServing(false);
  relay.Cut();
  ASSERT_TRUE(Pump([&] { return net_->stats().handshakes_refused >= 2; }));  // the resume
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_RECONNECTING);
  net_->SetServing(true);
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; },
                   std::chrono::milliseconds(10000)))
      << ::testing::PrintToString(journal_.states);
  EXPECT_EQ(molt_client_session(client_), session);
  EXPECT_EQ(journal_.states.back(), "connected (resumed)");
}

// A server whose kernel thread has more work than time refuses new sessions with Overloaded: a
// new client is closed with the reason and when to retry; one reconnecting (its session gone)
// keeps trying and gets a new session once the server caught up.
TEST_F(ClientTest, AnOverloadedServerRefusesNewSessionsAndAReconnectingClientKeepsTrying) {
  NetOptions o = NoResume();
  o.overload_seconds = 0.3;
  o.overload_retry_after_seconds = 0.4;
  Boot(o);
  Listen();
  auto burner = std::make_unique<molt::test::Burner>(kernel_->scheduler());
  ASSERT_TRUE(Pump([&] { return net_->Snapshot().load.overloaded; }));
  ASSERT_TRUE(Connect("bob"));
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CLOSED);
  EXPECT_EQ(journal_.states.back().rfind("closed (Overloaded: the server is overloaded: new "
                                         "sessions are refused until it catches up; retry in ",
                                         0),
            0u)
      << journal_.states.back();
  burner->Stop();
  ASSERT_TRUE(Pump([&] { return burner->idle() && !net_->Snapshot().load.overloaded; }));

  molt::test::Relay relay(port_);
  ASSERT_TRUE(Connect("ada", relay.port()));
  ASSERT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED);
  burner = std::make_unique<molt::test::Burner>(kernel_->scheduler());
  ASSERT_TRUE(Pump([&] { return net_->Snapshot().load.overloaded; }));
  const std::uint64_t refused = net_->stats().refused_overloaded;
  relay.Cut();  // no resume window: its session ends, and the Hello that follows asks a new one
  ASSERT_TRUE(Pump([&] { return net_->stats().refused_overloaded > refused; }));
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_RECONNECTING);
  burner->Stop();
  ASSERT_TRUE(Pump([&] { return burner->idle(); }));
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; },
                   std::chrono::milliseconds(10000)))
      << ::testing::PrintToString(journal_.states);
  EXPECT_EQ(journal_.states.back().rfind("connected (a new session", 0), 0u)
      << journal_.states.back();
}

// Client API 9: the device's quality goes in the Hello, and to the connected server in a Device
// frame when it changes (its Welcome said it takes them); what is not a number in [0, 16] is
// refused with the range and the meaning.
TEST_F(ClientTest, TheDeviceQualityReachesTheServerInTheHelloAndWhileConnected) {
  Boot(NoResume());
  Listen();
  EXPECT_EQ(molt_client_set_device_quality(client_, -1), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(),
            "the device quality must be a finite number in [0, 16] (1: the device keeps its "
            "frame budget; 0 withdraws the hint), not -1");
  EXPECT_EQ(molt_client_set_device_quality(client_, std::nan("")), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(molt_client_set_device_quality(client_, 17), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(molt_client_set_device_quality(nullptr, 1), MOLT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(molt_client_set_device_quality(client_, 0.3), MOLT_OK);
  ASSERT_TRUE(Connect("ada"));
  const Session* s = net_->sessions().Get(molt_client_session(client_));
  ASSERT_NE(s, nullptr);
  EXPECT_FLOAT_EQ(s->grade().device, 0.3f);
  ASSERT_EQ(molt_client_set_device_quality(client_, 1.5), MOLT_OK);
  EXPECT_TRUE(Pump([&] { return s->grade().device == 1.5f; })) << s->grade().device;
  ASSERT_EQ(molt_client_set_device_quality(client_, 0), MOLT_OK);  // withdrawn
  EXPECT_TRUE(Pump([&] { return s->grade().device == 0.0f; })) << s->grade().device;
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED);
}

TEST_F(ClientTest, ASilentLinkIsNoticedByTheClientWhichTakesItsSessionOver) {
  NetOptions o;  // resume on; the server itself would wait 15 s before calling the link idle
  o.ping_interval_seconds = 0.05;
  Boot(o);
  Listen();
  molt::test::Relay relay(port_);
  ASSERT_TRUE(Connect("ada", relay.port()));
  const std::uint64_t session = molt_client_session(client_);
  relay.Freeze();  // nothing gets through any more, and nothing closes
  // Silence for 3 ping intervals + 2 s: the client calls the link lost and reconnects; the
  // server still thinks the old link alive, and the token takes the session over from it.
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_RECONNECTING; },
                   std::chrono::milliseconds(6000)));
  EXPECT_NE(journal_.states.back().find("reconnecting (nothing from the server for 2 s)"),
            std::string::npos)
      << journal_.states.back();
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; }));
  EXPECT_EQ(journal_.states.back(), "connected (resumed)");
  EXPECT_EQ(molt_client_session(client_), session);
  EXPECT_EQ(net_->stats().resumes, 1u);
  EXPECT_EQ(net_->sessions().count(), 1u);
}

TEST_F(ClientTest, WithoutReconnectALostLinkClosesTheClient) {
  molt_client_destroy(client_);
  molt_client_options o{};
  o.struct_size = sizeof(o);
  o.flags = MOLT_CLIENT_NO_RECONNECT;
  ASSERT_EQ(molt_client_create(&o, &client_), MOLT_OK);
  molt_client_on_state(client_, OnState, &journal_);
  Listen();
  molt::test::Relay relay(port_);
  ASSERT_TRUE(Connect("ada", relay.port()));
  relay.Cut();
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CLOSED; }));
  EXPECT_EQ(journal_.states.back(), "closed (the server closed the connection)");
}

// A bare TCP listener on loopback standing for the server a drain names: it takes one
// connection and reads the Hello the client sends it.
class HelloCatcher {
 public:
  HelloCatcher() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
  }
  ~HelloCatcher() {
    ::close(conn_);
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  // Accepts and reads without blocking; true once a whole Hello frame arrived.
  bool Poll() {
    if (conn_ < 0) {
      conn_ = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK);
      return false;
    }
    std::uint8_t buf[4096];
    const ssize_t n = ::read(conn_, buf, sizeof buf);
    if (n > 0) {
      in_.insert(in_.end(), buf, buf + n);
    }
    return hello() != nullptr;
  }
  const molt::wire::Hello* hello() const {
    if (in_.size() < 4) {
      return nullptr;
    }
    const std::uint32_t size = in_[0] | in_[1] << 8 | in_[2] << 16 | std::uint32_t{in_[3]} << 24;
    return in_.size() < 4 + size ? nullptr
                                 : molt::wire::GetSizePrefixedEnvelope(in_.data())->body_as_Hello();
  }

 private:
  int fd_ = -1;
  int conn_ = -1;
  std::uint16_t port_ = 0;
  std::vector<std::uint8_t> in_;
};

TEST_F(ClientTest, ARedirectIsFollowedWhenTheLinkEndsAsANewJoinOfTheSameUser) {
  Listen();
  ASSERT_TRUE(Connect("ada"));
  HelloCatcher next;
  const std::string address = "127.0.0.1:" + std::to_string(next.port());
  std::size_t told = 0;
  // The first names no port the client can read: ignored. The server's loop runs in this thread.
  told = net_->Redirect({{"eu-2", "not an address", "", 0}}, "first")[0].sessions;
  told += net_->Redirect({{"eu-2", address, "", 0}}, "the server is draining")[0].sessions;
  EXPECT_EQ(told, 2u);
  // Kept, not followed, while the link lasts: the game goes on until the server ends it.
  Pump([] { return false; }, std::chrono::milliseconds(100));
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED);
  net_->Shutdown();  // the Bye, once the profiles were saved and released
  ASSERT_TRUE(Pump([&] { return next.Poll(); })) << ::testing::PrintToString(journal_.states);
  EXPECT_EQ(journal_.states.back(),
            "reconnecting (redirected to server eu-2 at " + address + " (the server is draining))");
  const molt::wire::Hello* hello = next.hello();
  EXPECT_EQ(hello->user()->str(), "ada");
  ASSERT_NE(hello->credentials(), nullptr);
  EXPECT_EQ(std::string(hello->credentials()->begin(), hello->credentials()->end()), "pw");
  EXPECT_TRUE(hello->resume_token() == nullptr || hello->resume_token()->size() == 0)
      << "sessions do not move between servers: a new join";
}

TEST_F(ClientTest, ARedirectWithAnAddressItCannotReadIsIgnoredAndTheByeCloses) {
  Listen();
  ASSERT_TRUE(Connect("ada"));
  net_->Redirect({{"eu-2", "eu-2.internal:http", "", 0}}, "the server is draining");
  net_->Shutdown();
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CLOSED; }));
  EXPECT_EQ(journal_.states.back(),
            "closed (ServerShutdown: the server is draining: go to server eu-2 at "
            "eu-2.internal:http)");
}

// --- Replicas ------------------------------------------------------------------------------------

// What a client's replica callbacks saw: "snapshot score", "changed score.red", "removed score".
struct ReplicaLog {
  molt_client* client = nullptr;
  std::vector<std::string> seen;
};

void OnReplica(void* ud, molt_client_replica_t replica, std::int32_t what, std::int32_t field) {
  auto* log = static_cast<ReplicaLog*>(ud);
  static const char* kWhat[] = {"snapshot", "changed", "removed"};
  std::string s = std::string(kWhat[what]) + " " + molt_client_replica_name(log->client, replica);
  if (field >= 0) {
    std::int32_t index = -1;
    // The field's name: found through the field list the snapshot brought.
    for (const char* name : {"red", "blue", "banner", "speed"}) {
      if (molt_client_replica_field(log->client, replica, name, &index, nullptr) == MOLT_OK &&
          index == field) {
        s += std::string(".") + name;
      }
    }
  }
  log->seen.push_back(s);
}

class ClientReplicaTest : public ClientTest {
 protected:
  // "score": red and blue (ints), banner (bytes), speed (float); 20 deliveries a second.
  ReplicaId CreateScore(Audience audience = Audience::kAll) {
    ReplicaSpec spec;
    spec.name = "score";
    spec.fields = {{"red", ReplicaFieldType::kInt},
                   {"blue", ReplicaFieldType::kInt},
                   {"banner", ReplicaFieldType::kBytes, 32},
                   {"speed", ReplicaFieldType::kFloat}};
    spec.tick_rate = 20;
    spec.audience = audience;
    Result<ReplicaId> id = net_->replicas().Create(std::move(spec), nullptr);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }
  std::int64_t Int(molt_client* c, const char* field) {
    molt_client_replica_t r = 0;
    std::int32_t index = -1;
    std::int64_t v = -1;
    EXPECT_EQ(molt_client_replica_find(c, "score", &r), MOLT_OK) << molt_client_last_error(c);
    EXPECT_EQ(molt_client_replica_field(c, r, field, &index, nullptr), MOLT_OK);
    EXPECT_EQ(molt_client_replica_int(c, r, index, &v), MOLT_OK) << molt_client_last_error(c);
    return v;
  }
  std::vector<std::uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

  // "score" on a server with a resume window; the client, through a relay, gets its snapshot;
  // then the link is cut. Returns with the client reconnecting and the server waiting for it,
  // before the client could step again (so it has not come back yet).
  ReplicaId SnapshotThenCut() {
    Boot(NetOptions());  // the server keeps a lost link's session for 30 s
    Listen();
    const ReplicaId score = CreateScore();
    log_.client = client_;
    EXPECT_EQ(molt_client_on_replica(client_, "score", OnReplica, &log_), MOLT_OK);
    relay_ = std::make_unique<molt::test::Relay>(port_);
    EXPECT_TRUE(Connect("ada", relay_->port()));
    EXPECT_TRUE(Pump([&] { return log_.seen.size() == 1; }));
    relay_->Cut();
    EXPECT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_RECONNECTING; }));
    EXPECT_TRUE(RunUntil([&] { return net_->stats().links_lost == 1; }));
    return score;
  }

  ReplicaLog log_;
  std::unique_ptr<molt::test::Relay> relay_;
};

TEST_F(ClientReplicaTest, ASnapshotFirstThenWritesCoalesceIntoOneDeltaPerDeadline) {
  Listen();
  const ReplicaId score = CreateScore();
  ASSERT_TRUE(net_->replicas().SetInt(score, 0, 5).ok());
  ASSERT_TRUE(net_->replicas().SetBytes(score, 2, Bytes("go red")).ok());
  ASSERT_TRUE(net_->replicas().SetFloat(score, 3, 1.5).ok());
  log_.client = client_;
  ASSERT_EQ(molt_client_on_replica(client_, "score", OnReplica, &log_), MOLT_OK);
  ASSERT_TRUE(Connect());
  ASSERT_TRUE(Pump([&] { return !log_.seen.empty(); }));
  EXPECT_EQ(log_.seen, std::vector<std::string>{"snapshot score"});
  EXPECT_EQ(Int(client_, "red"), 5);
  EXPECT_EQ(Int(client_, "blue"), 0);
  molt_client_replica_t r = 0;
  ASSERT_EQ(molt_client_replica_find(client_, "score", &r), MOLT_OK);
  const void* data = nullptr;
  std::size_t size = 0;
  ASSERT_EQ(molt_client_replica_bytes(client_, r, 2, &data, &size), MOLT_OK);
  EXPECT_EQ(std::string(static_cast<const char*>(data), size), "go red");
  double speed = 0;
  ASSERT_EQ(molt_client_replica_float(client_, r, 3, &speed), MOLT_OK);
  EXPECT_EQ(speed, 1.5);

  // Three writes of red and one of blue before the deadline: one delta, the last values.
  for (std::int64_t v : {6, 7, 8}) {
    ASSERT_TRUE(net_->replicas().SetInt(score, 0, v).ok());
  }
  ASSERT_TRUE(net_->replicas().SetInt(score, 1, 2).ok());
  ASSERT_TRUE(Pump([&] { return log_.seen.size() == 3; }));
  EXPECT_EQ(log_.seen, (std::vector<std::string>{"snapshot score", "changed score.red",
                                                 "changed score.blue"}));
  EXPECT_EQ(Int(client_, "red"), 8);
  EXPECT_EQ(Int(client_, "blue"), 2);
  EXPECT_EQ(net_->replicas().stats().snapshots_sent, 1u);
  EXPECT_EQ(net_->replicas().stats().deltas_sent, 1u);

  // Writing the value already there sends nothing, even after several deadlines.
  ASSERT_TRUE(net_->replicas().SetInt(score, 0, 8).ok());
  Pump([] { return false; }, std::chrono::milliseconds(200));
  EXPECT_EQ(net_->replicas().stats().deltas_sent, 1u);
  EXPECT_EQ(log_.seen.size(), 3u);

  // Reading errors name the replica and the field.
  std::int64_t v = 0;
  EXPECT_EQ(molt_client_replica_int(client_, r, 3, &v), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(), "replica \"score\": field \"speed\" is float, not int");
  EXPECT_EQ(molt_client_replica_int(client_, r, 9, &v), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(), "replica \"score\" has no field 9 (it has 4)");
  EXPECT_EQ(molt_client_replica_field(client_, r, "green", nullptr, nullptr), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(Error(), "replica \"score\" has no field \"green\"");
  EXPECT_EQ(molt_client_replica_find(client_, "nope", &r), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(Error(), "no replica \"nope\" is held (not sent yet, or not to this session)");
  EXPECT_EQ(molt_client_replica_name(client_, 999), nullptr);

  // Destroying it removes it from the client.
  ASSERT_TRUE(net_->replicas().Destroy(score).ok());
  ASSERT_TRUE(Pump([&] { return log_.seen.size() == 4; }));
  EXPECT_EQ(log_.seen.back(), "removed score");
  EXPECT_EQ(molt_client_replica_find(client_, "score", &r), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(net_->replicas().count(), 0u);
}

TEST_F(ClientReplicaTest, ALateJoinerGetsTheCurrentStateAndAListenerRegisteredLateIsCaughtUp) {
  Listen();
  const ReplicaId score = CreateScore();
  ASSERT_TRUE(Connect());
  ASSERT_TRUE(net_->replicas().SetInt(score, 0, 1).ok());
  ASSERT_TRUE(Pump([&] { return net_->replicas().stats().snapshots_sent == 1; }));
  ASSERT_TRUE(net_->replicas().SetInt(score, 0, 42).ok());
  ASSERT_TRUE(Pump([&] { return net_->replicas().stats().deltas_sent == 1; }));

  molt_client* late = nullptr;
  ASSERT_EQ(molt_client_create(nullptr, &late), MOLT_OK);
  ASSERT_EQ(molt_client_connect(late, "127.0.0.1", port_, "bob", nullptr, 0, nullptr, 0), MOLT_OK);
  molt_client_replica_t r = 0;
  ASSERT_TRUE(Pump([&] {
    EXPECT_EQ(molt_client_step(late, 0.001), MOLT_OK);
    return molt_client_replica_find(late, "score", &r) == MOLT_OK;
  }));
  EXPECT_EQ(Int(late, "red"), 42);
  EXPECT_EQ(net_->replicas().stats().snapshots_sent, 2u);
  // Nobody listened while it arrived: listening now announces what is held.
  log_.client = late;
  ASSERT_EQ(molt_client_on_replica(late, nullptr, OnReplica, &log_), MOLT_OK);
  EXPECT_EQ(log_.seen, std::vector<std::string>{"snapshot score"});
  molt_client_destroy(late);
  EXPECT_EQ(Int(client_, "red"), 42);
}

TEST_F(ClientReplicaTest, AListAudienceReachesOnlyItsSessionsAndLeavingSendsARemove) {
  Listen();
  const ReplicaId inv = CreateScore(Audience::kList);
  log_.client = client_;
  ASSERT_EQ(molt_client_on_replica(client_, nullptr, OnReplica, &log_), MOLT_OK);
  ASSERT_TRUE(Connect());
  molt_client* other = nullptr;
  ASSERT_EQ(molt_client_create(nullptr, &other), MOLT_OK);
  ASSERT_EQ(molt_client_connect(other, "127.0.0.1", port_, "bob", nullptr, 0, nullptr, 0), MOLT_OK);
  ASSERT_TRUE(Pump([&] {
    EXPECT_EQ(molt_client_step(other, 0.001), MOLT_OK);
    return molt_client_state(other) == MOLT_CLIENT_CONNECTED;
  }));
  ASSERT_TRUE(net_->replicas().AddSession(inv, molt_client_session(client_)).ok());
  ASSERT_TRUE(net_->replicas().AddSession(inv, molt_client_session(client_)).ok());  // no-op
  ASSERT_TRUE(net_->replicas().SetInt(inv, 1, 3).ok());
  ASSERT_TRUE(Pump([&] { return !log_.seen.empty(); }));
  EXPECT_EQ(Int(client_, "blue"), 3);
  ASSERT_TRUE(net_->replicas().RemoveSession(inv, molt_client_session(client_)).ok());
  ASSERT_TRUE(Pump([&] { return log_.seen.size() == 2; }));
  EXPECT_EQ(log_.seen, (std::vector<std::string>{"snapshot score", "removed score"}));
  // The other session never had it.
  molt_client_step(other, 0.01);
  molt_client_replica_t r = 0;
  EXPECT_EQ(molt_client_replica_find(other, "score", &r), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(net_->replicas().stats().snapshots_sent, 1u);
  EXPECT_EQ(net_->replicas().stats().removes_sent, 1u);
  molt_client_destroy(other);

  // A session that is not live cannot be added; an everyone-replica has no list.
  Status s = net_->replicas().AddSession(inv, 999);
  EXPECT_EQ(s.message(), "session 999 is not active");
  const ReplicaId all = CreateScore();
  s = net_->replicas().AddSession(all, molt_client_session(client_));
  EXPECT_EQ(s.message(),
            "replica \"score\" goes to everyone; create it with the list audience to choose "
            "sessions");
}

TEST_F(ClientReplicaTest, AResumedSessionGetsAFreshSnapshotInsteadOfTheDeltasItMissed) {
  const ReplicaId score = SnapshotThenCut();
  // Many deadlines pass while it is away (only the server runs: the client cannot come back).
  for (std::int64_t v = 1; v <= 50; ++v) {
    ASSERT_TRUE(net_->replicas().SetInt(score, 0, v).ok());
    RunUntil([] { return false; }, std::chrono::milliseconds(2));
  }
  const std::uint64_t deltas = net_->replicas().stats().deltas_sent;
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; }));
  ASSERT_TRUE(Pump([&] { return log_.seen.size() == 2; }));
  EXPECT_EQ(log_.seen, (std::vector<std::string>{"snapshot score", "snapshot score"}));
  EXPECT_EQ(Int(client_, "red"), 50);
  EXPECT_EQ(net_->replicas().stats().snapshots_sent, 2u);
  EXPECT_EQ(deltas, 0u);  // nothing was queued for the lost link
  EXPECT_EQ(net_->stats().resumes, 1u);
}

TEST_F(ClientReplicaTest, AReplicaDestroyedWhileTheLinkIsDownIsRemovedOnResume) {
  const ReplicaId score = SnapshotThenCut();
  ASSERT_TRUE(net_->replicas().SetInt(score, 0, 1).ok());  // a deadline passes while away
  RunUntil([] { return false; }, std::chrono::milliseconds(100));
  ASSERT_TRUE(net_->replicas().Destroy(score).ok());
  ASSERT_TRUE(Pump([&] { return log_.seen.size() == 2; }));
  EXPECT_EQ(log_.seen, (std::vector<std::string>{"snapshot score", "removed score"}));
  molt_client_replica_t r = 0;
  EXPECT_EQ(molt_client_replica_find(client_, "score", &r), MOLT_ERR_NOT_FOUND);
}

TEST_F(ClientReplicaTest, AReplicaCreatedAsASessionStartsSendsItOneSnapshot) {
  Listen();
  Connection hook = kernel_->hooks().On("Session.Start", [&](HookContext&) {
    if (net_->replicas().count() == 0) {
      CreateScore();  // takes in the starting session, which is already active
    }
    return true;
  });
  ASSERT_TRUE(Connect());
  ASSERT_TRUE(Pump([&] { return net_->replicas().stats().snapshots_sent >= 1; }));
  Pump([] { return false; }, std::chrono::milliseconds(100));
  EXPECT_EQ(net_->replicas().stats().snapshots_sent, 1u);
  ASSERT_TRUE(net_->replicas().SetInt(1, 0, 5).ok());
  ASSERT_TRUE(Pump([&] { return net_->replicas().stats().deltas_sent >= 1; }));
  Pump([] { return false; }, std::chrono::milliseconds(100));
  EXPECT_EQ(net_->replicas().stats().deltas_sent, 1u);  // not one per duplicate
  hook.Disconnect();
}

// The client's verifier takes what the server may send: a Welcome with a table per channel, a
// snapshot with two per field.
TEST_F(ClientReplicaTest, AWelcomeWithManyChannelsAndTheWidestReplicaReachTheClient) {
  for (int i = 0; i < 200; ++i) {
    DeclareEvent("wide.E" + std::to_string(i));
  }
  Listen();
  ReplicaSpec spec;
  spec.name = "wide";
  for (int i = 0; i < 64; ++i) {
    spec.fields.push_back({"f" + std::to_string(i), ReplicaFieldType::kInt});
  }
  ASSERT_TRUE(net_->replicas().Create(std::move(spec), nullptr).ok());
  ASSERT_TRUE(Connect());
  ASSERT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED) << journal_.states.back();
  molt_client_replica_t r = 0;
  ASSERT_TRUE(Pump([&] { return molt_client_replica_find(client_, "wide", &r) == MOLT_OK; }));
  std::int32_t index = -1;
  EXPECT_EQ(molt_client_replica_field(client_, r, "f63", &index, nullptr), MOLT_OK);
  EXPECT_EQ(index, 63);
}

TEST_F(ClientReplicaTest, ANewSessionDropsTheOldSessionsReplicas) {
  Listen();
  CreateScore();
  log_.client = client_;
  ASSERT_EQ(molt_client_on_replica(client_, "score", OnReplica, &log_), MOLT_OK);
  ASSERT_TRUE(Connect());
  ASSERT_TRUE(Pump([&] { return log_.seen.size() == 1; }));
  ASSERT_EQ(molt_client_disconnect(client_), MOLT_OK);
  ASSERT_TRUE(Connect());  // a new session: its own snapshot, after the old one's removal
  ASSERT_TRUE(Pump([&] { return log_.seen.size() == 3; }));
  EXPECT_EQ(log_.seen,
            (std::vector<std::string>{"snapshot score", "removed score", "snapshot score"}));
}

TEST_F(ClientReplicaTest, BadSpecsAndWritesAreRefusedWithTheReason) {
  auto create = [&](ReplicaSpec spec) {
    Result<ReplicaId> id = net_->replicas().Create(std::move(spec), nullptr);
    return id.ok() ? std::string("ok") : id.status().message();
  };
  ReplicaSpec spec;
  spec.name = "r";
  EXPECT_EQ(create(spec),
            "replica \"r\": 0 fields; a replica has 1 to 64 (split it by audience or cadence)");
  spec.fields = {{"a", ReplicaFieldType::kInt}, {"a", ReplicaFieldType::kFloat}};
  EXPECT_EQ(create(spec), "replica \"r\": field \"a\" is declared twice");
  spec.fields = {{"", ReplicaFieldType::kInt}};
  EXPECT_EQ(create(spec), "replica \"r\": field 0 needs a name of 1 to 64 characters");
  spec.fields = {{"a", ReplicaFieldType::kInt}};
  spec.tick_rate = 0;
  EXPECT_EQ(create(spec),
            "replica \"r\": tick rate 0 is out of range (0, 1000] deliveries per second");
  spec.tick_rate = 10;
  spec.fields = {{"blob", ReplicaFieldType::kBytes, 9000}};
  EXPECT_EQ(create(spec),
            "replica \"r\": a snapshot could take 9125 bytes, more than a frame "
            "(net.max_frame_bytes = 8192); lower the bytes fields' max_bytes or split the replica");
  spec.fields = {{"blob", ReplicaFieldType::kBytes, 0xFFFFFFF8u}};  // no 32-bit wrap
  EXPECT_EQ(create(spec),
            "replica \"r\": a snapshot could take 4294967413 bytes, more than a frame "
            "(net.max_frame_bytes = 8192); lower the bytes fields' max_bytes or split the replica");
  spec.name = "";
  EXPECT_EQ(create(spec), "a replica needs a name of 1 to 128 characters");

  const ReplicaId id = CreateScore();
  Replicas& rs = net_->replicas();
  EXPECT_EQ(rs.SetFloat(id, 0, 1).message(), "replica \"score\": field \"red\" is int, not float");
  EXPECT_EQ(rs.SetInt(id, 4, 1).message(), "replica \"score\" has no field 4 (it has 4)");
  EXPECT_EQ(rs.SetBytes(id, 2, Bytes(std::string(33, 'x'))).message(),
            "replica \"score\": 33 bytes for field \"banner\", whose max_bytes is 32");
  EXPECT_EQ(rs.SetFloat(id, 3, std::nan("")).message(),
            "replica \"score\": field \"speed\" cannot be NaN");
  EXPECT_EQ(rs.SetInt(999, 0, 1).message(), "set: replica 999 does not exist (destroyed?)");
  EXPECT_EQ(rs.Destroy(999).message(), "destroy: replica 999 does not exist (destroyed?)");
  EXPECT_EQ(rs.RemoveSession(id, 1).message(),
            "replica \"score\" goes to everyone; it has no session list");
  // The counters are in the network's stats.
  EXPECT_NE(NetStatsJson(*net_).find("\"replicas\":{\"live\":1"), std::string::npos)
      << NetStatsJson(*net_);
}

// A server that accepts one client, reads its Hello, sends `script` and waits for the close.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<std::uint8_t> script) : script_(std::move(script)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = molt::test::Relay::Loopback(0);
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listener_, 1), 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      const int fd = ::accept(listener_, nullptr, nullptr);
      std::uint8_t buf[4096];
      (void)::recv(fd, buf, sizeof buf, 0);  // whatever the client says
      (void)::send(fd, script_.data(), script_.size(), MSG_NOSIGNAL);
      while (::recv(fd, buf, sizeof buf, 0) > 0) {
      }
      ::close(fd);
    });
  }
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;
  ~ScriptedServer() {
    ::shutdown(listener_, SHUT_RDWR);  // an accept still waiting (no client came) returns
    thread_.join();
    ::close(listener_);
  }

  // A client connected to it, stepped until closed (or 10 s); its states go to `journal`.
  molt_client* Client(Journal& journal) {
    molt_client* c = nullptr;
    if (molt_client_create(nullptr, &c) != MOLT_OK) {
      return nullptr;
    }
    molt_client_on_state(c, OnState, &journal);
    EXPECT_EQ(molt_client_connect(c, "127.0.0.1", port_, "ada", nullptr, 0, nullptr, 0), MOLT_OK);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (molt_client_state(c) != MOLT_CLIENT_CLOSED &&
           std::chrono::steady_clock::now() < deadline) {
      EXPECT_EQ(molt_client_step(c, 0.001), MOLT_OK);
    }
    return c;
  }

 private:
  std::vector<std::uint8_t> script_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

// A server that speaks the protocol badly: after a real Welcome it sends replica updates that
// make no sense (unknown ids, field indexes out of range, values for a field list it never sent),
// then bytes that are not an envelope. The client ignores what it cannot apply, keeps what it
// can, and closes on the garbage with the reason; nothing crashes (ASan runs this too).
TEST(ClientHostileServerTest, NonsenseIsIgnoredAndGarbageClosesTheClientWithTheReason) {
  namespace fb = ::flatbuffers;
  namespace w = ::molt::wire;
  auto frame = [](auto build) {
    fb::FlatBufferBuilder b;
    auto [type, body] = build(b);
    b.FinishSizePrefixed(w::CreateEnvelope(b, type, body));
    return std::vector<std::uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  };
  std::vector<std::uint8_t> script;
  auto add = [&script](const std::vector<std::uint8_t>& f) {
    script.insert(script.end(), f.begin(), f.end());
  };
  add(frame([](fb::FlatBufferBuilder& b) {
    auto wel = w::CreateWelcome(b, 7, 0, 60, 0, 8192, 8192, 64, 3600000);
    return std::pair(w::Body::Welcome, wel.Union());
  }));
  add(frame([](fb::FlatBufferBuilder& b) {  // a delta for a replica never sent
    std::vector<fb::Offset<w::ReplicaValue>> v = {w::CreateReplicaValue(b, 0, 5)};
    return std::pair(
        w::Body::Replica,
        w::CreateReplicaDirect(b, 99, w::ReplicaUpdateKind::Delta, nullptr, nullptr, &v).Union());
  }));
  add(frame([](fb::FlatBufferBuilder& b) {  // a value for field 5 of a one-field replica
    std::vector<fb::Offset<w::ReplicaFieldInfo>> f = {
        w::CreateReplicaFieldInfoDirect(b, "a", w::ReplicaFieldType::Int)};
    std::vector<fb::Offset<w::ReplicaValue>> v = {w::CreateReplicaValue(b, 5, 1),
                                                  w::CreateReplicaValue(b, 0, 42)};
    return std::pair(
        w::Body::Replica,
        w::CreateReplicaDirect(b, 1, w::ReplicaUpdateKind::Snapshot, "r", &f, &v).Union());
  }));
  add(frame([](fb::FlatBufferBuilder& b) {  // values without a field list; a stray remove
    std::vector<fb::Offset<w::ReplicaValue>> v = {w::CreateReplicaValue(b, 0, 1)};
    return std::pair(
        w::Body::Replica,
        w::CreateReplicaDirect(b, 2, w::ReplicaUpdateKind::Snapshot, "s", nullptr, &v).Union());
  }));
  add(frame([](fb::FlatBufferBuilder& b) {
    return std::pair(w::Body::Replica,
                     w::CreateReplicaDirect(b, 77, w::ReplicaUpdateKind::Remove).Union());
  }));
  add(frame([](fb::FlatBufferBuilder& b) {  // a body this client does not know (a newer server)
    const auto empty = b.StartTable();
    return std::pair(static_cast<w::Body>(200), fb::Offset<void>(b.EndTable(empty)));
  }));
  const std::uint8_t garbage[] = {8, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4};
  script.insert(script.end(), std::begin(garbage), std::end(garbage));

  ScriptedServer server(script);
  Journal journal;
  molt_client* c = server.Client(journal);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(journal.states.back(), "closed (the server sent a malformed frame)")
      << ::testing::PrintToString(journal.states);
  // What made sense was kept: replica "r" with a = 42; "s" has no fields to read.
  molt_client_replica_t r = 0;
  std::int64_t v = 0;
  ASSERT_EQ(molt_client_replica_find(c, "r", &r), MOLT_OK);
  ASSERT_EQ(molt_client_replica_int(c, r, 0, &v), MOLT_OK);
  EXPECT_EQ(v, 42);
  ASSERT_EQ(molt_client_replica_find(c, "s", &r), MOLT_OK);
  EXPECT_EQ(molt_client_replica_int(c, r, 0, &v), MOLT_ERR_INVALID_ARGUMENT);
  molt_client_destroy(c);
}

TEST(ClientHostileServerTest, AServerCannotMakeTheClientHoldUnboundedReplicas) {
  namespace fb = ::flatbuffers;
  namespace w = ::molt::wire;
  fb::FlatBufferBuilder wb;
  wb.FinishSizePrefixed(w::CreateEnvelope(
      wb, w::Body::Welcome, w::CreateWelcome(wb, 7, 0, 60, 0, 8192, 8192, 64, 3600000).Union()));
  std::vector<std::uint8_t> script(wb.GetBufferPointer(), wb.GetBufferPointer() + wb.GetSize());
  fb::FlatBufferBuilder b;
  std::vector<fb::Offset<w::ReplicaFieldInfo>> fields;
  for (int i = 0; i < 65; ++i) {
    fields.push_back(w::CreateReplicaFieldInfoDirect(b, ("f" + std::to_string(i)).c_str()));
  }
  b.FinishSizePrefixed(w::CreateEnvelope(
      b, w::Body::Replica,
      w::CreateReplicaDirect(b, 1, w::ReplicaUpdateKind::Snapshot, "wide", &fields).Union()));
  script.insert(script.end(), b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  ScriptedServer server(script);
  Journal journal;
  molt_client* c = server.Client(journal);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(journal.states.back(),
            "closed (the server sent a replica beyond the client's limits (4096 replicas, 64 "
            "fields, names of 128 bytes))");
  molt_client_replica_t r = 0;
  EXPECT_EQ(molt_client_replica_find(c, "wide", &r), MOLT_ERR_NOT_FOUND);
  molt_client_destroy(c);
}

TEST(ClientApiTest, NullAndBadArgumentsAreErrorsNotCrashes) {
  EXPECT_EQ(molt_client_create(nullptr, nullptr), MOLT_ERR_INVALID_ARGUMENT);
  molt_client_options small{};
  small.struct_size = 4;
  molt_client* c = nullptr;
  EXPECT_EQ(molt_client_create(&small, &c), MOLT_ERR_INVALID_ARGUMENT);
  small.struct_size = offsetof(molt_client_options, flags);  // an app built against API 1
  ASSERT_EQ(molt_client_create(&small, &c), MOLT_OK);
  molt_client_destroy(c);
  ASSERT_EQ(molt_client_create(nullptr, &c), MOLT_OK);
  EXPECT_EQ(molt_client_step(c, -1), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(molt_client_last_error(c),
               "budget_seconds must be a finite number >= 0, not -1.000000");
  EXPECT_EQ(molt_client_step(c, std::nan("")), MOLT_ERR_INVALID_ARGUMENT);
  auto ignore = [](void*, molt_status_t, const void*, std::size_t) {};
  EXPECT_EQ(molt_client_request(c, 0, nullptr, 0, HUGE_VAL, ignore, nullptr),
            MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(molt_client_last_error(c), "timeout_seconds must be a finite number >= 0, not inf");
  EXPECT_EQ(molt_client_intent(c, 0, nullptr, 4), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(molt_client_last_error(c), "data is NULL with size > 0");
  EXPECT_EQ(molt_client_connect(c, nullptr, 1, "u", nullptr, 0, nullptr, 0),
            MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(molt_client_last_error(c), "host is NULL");
  std::uint16_t id = 0;
  EXPECT_EQ(molt_client_channel(c, "x", &id), MOLT_ERR_STATE);
  EXPECT_EQ(molt_client_intent(c, 0, nullptr, 0), MOLT_ERR_STATE);
  EXPECT_STREQ(molt_client_last_error(c), "not connected");
  EXPECT_EQ(molt_client_step(nullptr, 0), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(molt_client_state(nullptr), MOLT_CLIENT_IDLE);
  molt_client_destroy(c);
  molt_client_destroy(nullptr);
}

}  // namespace
}  // namespace molt::kernel::net
