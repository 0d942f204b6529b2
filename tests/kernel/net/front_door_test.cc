// SPDX-License-Identifier: Apache-2.0
// The front door (kernel/src/net/front_door.h). On real loopback sockets: handshake slots that idle
// connections cannot hold (from one address or from many), the handshake timeout against a slow
// drip, refusals that say why and are logged without flooding the log. Alone, on a manual clock
// with connections that keep what is written to them: the Hello's checks in order, resume and its
// missed frames, the drain, the session cap.
#include "kernel/src/net/front_door.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kernel/src/core/logger.h"
#include "kernel/src/wire/wire.h"
#include "net_fixture.h"
#include "net_parts_fixture.h"
#include "tests/support/burner.h"

namespace molt::kernel::net {
namespace {

using molt::test::Frame;
using molt::test::TestClient;
namespace w = ::molt::wire;
using namespace std::chrono_literals;

class FrontDoorTest : public NetTest {
 protected:
  static NetOptions Slots(std::size_t total, std::size_t per_address) {
    NetOptions o = NoResume();
    o.max_half_open = total;
    o.max_half_open_per_address = per_address;
    o.handshakes_per_address = 1000;
    return o;
  }
  // Connects from `from` and waits until the server holds it as half-open.
  std::unique_ptr<TestClient> Idle(const char* from) {
    const std::size_t before = net_->stats().connections_accepted;
    auto c = std::make_unique<TestClient>(port_, 0, from);
    EXPECT_TRUE(RunUntil([&] { return net_->stats().connections_accepted == before + 1; }));
    return c;
  }
  static void ExpectRefused(TestClient& c, w::RefuseReason reason, const std::string& text) {
    Frame f = c.Next();
    ASSERT_EQ(f.type(), w::Body::Refuse);
    EXPECT_EQ(f.envelope()->body_as_Refuse()->reason(), reason);
    EXPECT_EQ(f.envelope()->body_as_Refuse()->retry_after_ms(), 1000u);
    EXPECT_EQ(Text(f.envelope()), text);
    EXPECT_EQ(c.WaitClosed(), "closed");
  }
  std::uint64_t dropped(ExitReason r) {
    return net_->stats().handshakes_dropped[static_cast<std::size_t>(r)];
  }
};

TEST_F(FrontDoorTest, TheHalfOpenConnectionThatWaitedLongestMakesRoomForANewOne) {
  Boot(Slots(3, 16));
  Listen();
  auto first = Idle("127.0.0.2");
  auto second = Idle("127.0.0.3");
  auto third = Idle("127.0.0.4");
  ASSERT_EQ(net_->half_open(), 3u);
  Run([&] {
    TestClient newcomer(port_);
    ExpectRefused(*first, w::RefuseReason::ServerFull,
                  "3 connections are waiting to join (net.max_half_open) and this one waited "
                  "longest without a hello; retry");
    EXPECT_EQ(newcomer.Hello("newcomer").type(), w::Body::Welcome);
  });
  EXPECT_EQ(net_->stats().half_open_evicted, 1u);
  EXPECT_EQ(net_->stats().handshakes_refused, 1u);
  EXPECT_EQ(net_->half_open(), 2u);  // the second and the third still wait
  EXPECT_EQ(net_->sessions().stats().started, 1u);
}

TEST_F(FrontDoorTest, OneAddressCannotTakeEveryHandshakeSlot) {
  Boot(Slots(100, 2));
  Listen();
  auto a1 = Idle("127.0.0.2");
  auto a2 = Idle("127.0.0.2");
  auto other = Idle("127.0.0.3");
  Run([&] {
    TestClient a3(port_, 0, "127.0.0.2");
    ExpectRefused(*a1, w::RefuseReason::RateLimited,
                  "2 connections from 127.0.0.2 are waiting to join "
                  "(net.max_half_open_per_address) and this one waited longest without a "
                  "hello; retry");
    EXPECT_EQ(a3.Hello("a3").type(), w::Body::Welcome);
    EXPECT_EQ(other->Hello("other").type(), w::Body::Welcome);  // another address's was kept
  });
  EXPECT_EQ(net_->stats().half_open_evicted, 1u);
  EXPECT_EQ(net_->half_open(), 1u);  // a2
}

TEST_F(FrontDoorTest, ASlowDripHelloIsCutAtTheHandshakeTimeout) {
  NetOptions o = NoResume();
  o.handshake_timeout_seconds = 0.5;
  Boot(o);
  Listen();
  Run([&] {
    TestClient c(port_);
    const std::vector<std::uint8_t> hello = TestClient::HelloFrame("drip");
    const auto t0 = std::chrono::steady_clock::now();
    // One byte every 50 ms: the whole hello would take seconds; every byte is progress, and
    // still the handshake must end at its timeout.
    for (std::size_t i = 0; i + 1 < hello.size() && std::chrono::steady_clock::now() - t0 < 2s;
         ++i) {
      if (!c.SendRaw(std::span(hello.data() + i, 1))) {
        break;
      }
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(c.WaitClosed(), "TimedOut");
  });
  EXPECT_EQ(net_->stats().handshake_timeouts, 1u);
  EXPECT_EQ(dropped(ExitReason::kTimedOut), 1u);
  EXPECT_EQ(net_->sessions().stats().started, 0u);
  EXPECT_EQ(net_->half_open(), 0u);
}

// Closes that carry no Refuse are counted by reason; a refused one is not counted twice.
TEST_F(FrontDoorTest, HandshakesThatEndWithoutARefuseAreCountedByReason) {
  Listen();
  Run([&] {
    { TestClient gone(port_); }  // connects and leaves
    TestClient garbage(port_);
    garbage.SendRaw("GET / HTTP/1.1\r\n\r\n");
    EXPECT_EQ(garbage.WaitClosed(), "ProtocolError");
    TestClient old(port_);
    EXPECT_EQ(old.Hello("old", 1).type(), w::Body::Refuse);
  });
  ASSERT_TRUE(RunUntil([&] { return net_->half_open() == 0; }));
  EXPECT_EQ(dropped(ExitReason::kClientClosed), 1u);
  EXPECT_EQ(dropped(ExitReason::kProtocolError), 1u);
  EXPECT_EQ(net_->stats().handshakes_refused, 1u);
  const std::string json = NetStatsJson(*net_);
  EXPECT_NE(json.find(R"("handshakes_dropped":{"ClientClosed":1,"ProtocolError":1})"),
            std::string::npos)
      << json;
}

// An operator sees an attack in a few lines: the first refusal of a reason at once, then one
// line per interval with how many more there were.
TEST_F(FrontDoorTest, RefusalsAreLoggedOncePerReasonPerIntervalWithACount) {
  NetOptions o = NoResume();
  o.refusal_log_seconds = 0.5;
  Boot(o);
  Listen();
  std::mutex mu;
  std::vector<std::string> lines;
  auto sink = Logger::Get().AddSink([&](const LogEntry& e) {
    if (e.message.find("refused") != std::string_view::npos) {
      std::lock_guard<std::mutex> lock(mu);
      lines.emplace_back(e.message);
    }
  });
  Run([&] {
    for (int i = 0; i < 30; ++i) {
      TestClient c(port_);
      EXPECT_EQ(c.Hello("old", 1).type(), w::Body::Refuse);
    }
  });
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0],
              "refused a connection from 127.0.0.1 (ProtocolVersion): protocol version 1 is not "
              "supported: this server speaks 2");
  }
  ASSERT_TRUE(RunUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return lines.size() == 2;
  }));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(lines[1],
            "refused 29 more connection(s) (ProtocolVersion) within 0.5 s "
            "(net.refusal_log_seconds); the latest from 127.0.0.1: protocol version 1 is not "
            "supported: this server speaks 2");
}

// An attacker in a process of its own (its descriptors are its own): it opens `count`
// connections that never say a word, from 127.0.0.2 up (250 addresses, so the per-address
// handshake rate lets each one in), then keeps replacing its oldest with a new one, a thousand a
// second, until it is killed (so the slots never stop changing hands; the rate is bounded so the
// figure means the same in a sanitizer build on 2 cores). The child makes only system calls:
// its memory is allocated before the fork.
class Attacker {
 public:
  Attacker(std::uint16_t port, int count) : fds_(static_cast<std::size_t>(count), -1) {
    int p[2];
    if (::pipe(p) != 0) {
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(p[0]);
      Child(port, p[1]);
    }
    ::close(p[1]);
    progress_ = p[0];
    ::fcntl(progress_, F_SETFL, O_NONBLOCK);
  }
  ~Attacker() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (progress_ >= 0) {
      ::close(progress_);
    }
  }
  // How many connections the child has opened so far (a byte per thousand).
  int opened() {
    char buf[64];
    ssize_t n;
    while ((n = ::read(progress_, buf, sizeof(buf))) > 0) {
      thousands_ += static_cast<int>(n);
    }
    return thousands_ * 1000;
  }

 private:
  [[noreturn]] void Child(std::uint16_t port, int progress) {
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    auto open = [&](std::size_t n) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in from{};
      from.sin_family = AF_INET;
      from.sin_addr.s_addr = htonl(0x7f000002u + static_cast<std::uint32_t>(n % 250));
      if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
          ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
        if (fd >= 0) {
          ::close(fd);
        }
        return -1;
      }
      return fd;
    };
    for (std::size_t i = 0; i < fds_.size(); ++i) {
      fds_[i] = open(i);
      if ((i + 1) % 1000 == 0 && ::write(progress, "k", 1) != 1) {
        ::_exit(1);
      }
    }
    const timespec gap{0, 1000000};            // 1 ms
    for (std::size_t n = fds_.size();; ++n) {  // churn: the oldest goes, a new one comes
      ::nanosleep(&gap, nullptr);
      const std::size_t i = n % fds_.size();
      if (fds_[i] >= 0) {
        ::close(fds_[i]);
      }
      fds_[i] = open(n);
    }
  }

  std::vector<int> fds_;
  pid_t pid_ = -1;
  int progress_ = -1;
  int thousands_ = 0;
};

TEST_F(FrontDoorTest, TenThousandIdleConnectionsFromManyAddressesKeepNoPlayerOut) {
  // The server's side of the attack needs descriptors too (the refused ones linger up to 2 s).
  rlimit lim{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &lim), 0);
  lim.rlim_cur = lim.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);
  NetOptions o = NoResume();  // the defaults: 1024 slots, 16 per address, 20 handshakes/s
  Boot(o);
  const ChannelId say = DeclareSay("chat.Say");
  Listen();
  constexpr int kIdle = 10000;
  Attacker attacker(port_, kIdle);
  ASSERT_TRUE(RunUntil([&] { return attacker.opened() >= kIdle; }, 120s))
      << "the attacker opened " << attacker.opened();
  ASSERT_TRUE(RunUntil([&] { return net_->stats().connections_accepted >= kIdle; }, 60s));
  EXPECT_EQ(net_->half_open(), o.max_half_open);  // every slot is taken by the attacker
  std::vector<std::chrono::steady_clock::duration> joins;
  std::vector<std::unique_ptr<TestClient>> players;
  Run([&] {
    for (int i = 0; i < 20; ++i) {  // while the attacker keeps opening more
      const auto t0 = std::chrono::steady_clock::now();
      players.push_back(std::make_unique<TestClient>(port_));
      Frame f = players.back()->Hello("player" + std::to_string(i));
      ASSERT_EQ(f.type(), w::Body::Welcome) << "player " << i;
      joins.push_back(std::chrono::steady_clock::now() - t0);
      players.back()->Intent(say, SayPayload("in"));
    }
  });
  // Every player was welcomed within the Hello's wait. How long the slowest took is reported,
  // not asserted: a machine busy with other tests can let the listen backlog drop a player's SYN,
  // and the operating system's retransmission (1 s, then 2 s) is then the wait (docs/network.md).
  ASSERT_EQ(joins.size(), 20u);
  const auto slowest = *std::max_element(joins.begin(), joins.end());
  ASSERT_TRUE(RunUntil([&] { return net_->channels().Find(say)->counters().accepted == 20; }));
  EXPECT_EQ(net_->sessions().count(), 20u);
  EXPECT_LE(net_->half_open(), o.max_half_open);
  EXPECT_GT(net_->stats().half_open_evicted, 0u);
  std::printf("slowest of 20 joins under %d idle connections: %.1f ms; %llu evicted\n", kIdle,
              std::chrono::duration<double, std::milli>(slowest).count(),
              static_cast<unsigned long long>(net_->stats().half_open_evicted));
}

// A kernel thread with more work than time: a new client is refused at once with Overloaded
// over a real socket, while the session already here is answered.
TEST_F(FrontDoorTest, AnOverloadedServerRefusesANewClientAtOnceAndAnswersItsSession) {
  NetOptions o = NoResume();
  o.overload_seconds = 0.5;
  Boot(o);
  Listen();
  TestClient ada(port_);
  Frame welcome;
  Run([&] { welcome = ada.Hello("ada"); });
  ASSERT_EQ(welcome.type(), w::Body::Welcome);
  molt::test::Burner burner(kernel_->scheduler());  // every step leaves work waiting
  ASSERT_TRUE(RunUntil([&] { return net_->Snapshot().load.overloaded; }));
  Frame refused;
  Frame pong;
  Run([&] {
    TestClient bob(port_);
    refused = bob.Hello("bob");
    ada.Ping(7, 0);
    pong = ada.NextOf(w::Body::Pong);
  });
  burner.Stop();
  ASSERT_TRUE(RunUntil([&] { return burner.idle(); }));
  ASSERT_EQ(refused.type(), w::Body::Refuse);
  EXPECT_EQ(refused.envelope()->body_as_Refuse()->reason(), w::RefuseReason::Overloaded);
  EXPECT_EQ(pong.type(), w::Body::Pong);
  EXPECT_EQ(net_->stats().refused_overloaded, 1u);
  EXPECT_EQ(net_->sessions().count(), 1u);
  EXPECT_NE(NetStatsJson(*net_).find(R"("load":{"overloaded":true,"episodes":1)"),
            std::string::npos)
      << NetStatsJson(*net_);
}

// --- The front door alone ----------------------------------------------------------------------

class FrontDoorAloneTest : public NetPartsTest {
 protected:
  // `p` says Hello as `user` (with `token` to resume).
  void Hello(MemoryPeer& p, const std::string& user, std::uint32_t version = w::kProtocolVersion,
             std::vector<std::uint8_t> token = {}) {
    const std::vector<std::uint8_t> frame =
        TestClient::HelloFrame(user, version, 0, {}, {}, std::move(token));
    door_->OnHello(p, *w::GetSizePrefixedEnvelope(frame.data())->body_as_Hello());
  }
  // "Reason: text (retry ms)" of `p`'s last frame, a Refuse.
  static std::string Refusal(const MemoryPeer& p) {
    const w::Refuse* r = p.frame_count() > 0 ? p.last()->body_as_Refuse() : nullptr;
    if (r == nullptr) {
      return "(not refused)";
    }
    return std::string(w::EnumNameRefuseReason(r->reason())) + ": " + r->text()->str() + " (" +
           std::to_string(r->retry_after_ms()) + ")";
  }
  static std::vector<std::uint8_t> TokenOf(const MemoryPeer& p) {
    const w::Welcome* welcome = p.frame(0)->body_as_Welcome();
    return {welcome->resume_token()->begin(), welcome->resume_token()->end()};
  }
};

TEST_F(FrontDoorAloneTest, AHelloOfAnotherProtocolVersionIsRefusedNamingBoth) {
  BuildAll();
  MemoryPeer& p = Arrive();
  Hello(p, "ada", 1);
  EXPECT_EQ(Refusal(p),
            "ProtocolVersion: protocol version 1 is not supported: this server speaks 2 (0)");
  EXPECT_TRUE(p.closed());
  EXPECT_EQ(stats_.handshakes_refused, 1u);
  EXPECT_EQ(slots_->size(), 0u);
}

TEST_F(FrontDoorAloneTest, WhileNoGenerationServesAHelloIsToldToRetryAndAtTheCloseToGo) {
  BuildAll();
  door_->SetServing(false);
  MemoryPeer& early = Arrive();
  Hello(early, "ada");
  EXPECT_EQ(Refusal(early),
            "Starting: the server is starting: no plugin generation serves yet (1000)");
  door_->SetServing(true);
  door_->Close();
  MemoryPeer& late = Arrive();
  Hello(late, "ada");
  EXPECT_EQ(Refusal(late), "ShuttingDown: the server is shutting down (0)");
}

TEST_F(FrontDoorAloneTest, AWelcomedHelloBecomesASessionAndLeavesItsHandshakeSlot) {
  BuildAll();
  MemoryPeer& p = Arrive();
  EXPECT_EQ(slots_->size(), 1u);
  Hello(p, "ada");
  ASSERT_EQ(p.Kinds(), std::vector<std::string>{"Welcome"});
  EXPECT_NE(p.session(), 0u);
  EXPECT_EQ(p.frame(0)->body_as_Welcome()->session_id(), p.session());
  EXPECT_EQ(SessionOf(p)->user(), "ada");
  EXPECT_EQ(slots_->size(), 0u);
}

TEST_F(FrontDoorAloneTest, AResumeTokenTakesTheSessionBackWithWhatItMissedInOrder) {
  options_.resume_window_seconds = 30;
  BuildAll();
  MemoryPeer& first = Arrive();
  Hello(first, "ada");
  const SessionId id = first.session();
  links_->Unlink(first, ExitReason::kTransportError, /*resumable=*/true);
  const std::vector<std::uint8_t> missed = {4, 0, 0, 0, 7, 7, 7, 7};
  links_->SendTo(*sessions_->Get(id), missed);
  MemoryPeer& again = Arrive();
  Hello(again, "ada", w::kProtocolVersion, TokenOf(first));
  ASSERT_EQ(again.frame_count(), 2u);
  const w::Welcome* welcome = again.frame(0)->body_as_Welcome();
  ASSERT_NE(welcome, nullptr);
  EXPECT_TRUE(welcome->resumed());
  EXPECT_EQ(welcome->session_id(), id);
  EXPECT_NE(TokenOf(again), TokenOf(first));  // a fresh token each Welcome
  EXPECT_EQ(stats_.resumes, 1u);
  EXPECT_EQ(links_->waiting(), 0u);
  // The old token is spent, and good only for the user it was issued to.
  MemoryPeer& thief = Arrive();
  Hello(thief, "bob", w::kProtocolVersion, TokenOf(again));
  EXPECT_NE(thief.session(), id);
}

TEST_F(FrontDoorAloneTest, AUserBackWithoutTheirTokenEndsTheSessionTheirLostLinkLeftWaiting) {
  options_.resume_window_seconds = 30;
  BuildAll();
  MemoryPeer& first = Arrive();
  Hello(first, "ada");
  const SessionId old = first.session();
  links_->Unlink(first, ExitReason::kTransportError, /*resumable=*/true);
  MemoryPeer& again = Arrive();
  Hello(again, "ada");
  EXPECT_EQ(sessions_->Get(old), nullptr);
  EXPECT_NE(again.session(), old);
  EXPECT_EQ(stats_.resumes_superseded, 1u);
}

TEST_F(FrontDoorAloneTest, DuringTheDrainOnlyASessionOfThisServerMayComeBack) {
  options_.resume_window_seconds = 30;
  BuildAll();
  MemoryPeer& ada = Arrive();
  Hello(ada, "ada");
  links_->Unlink(ada, ExitReason::kTransportError, /*resumable=*/true);
  door_->Drain();
  redirection_->Begin({{"b", "10.1.0.2:7777", "", 0}}, "moving");
  MemoryPeer& bob = Arrive();
  Hello(bob, "bob");
  EXPECT_EQ(Refusal(bob), "ShuttingDown: moving: go to server b at 10.1.0.2:7777 (0)");
  MemoryPeer& back = Arrive();
  Hello(back, "ada", w::kProtocolVersion, TokenOf(ada));
  ASSERT_GE(back.frame_count(), 2u);
  EXPECT_TRUE(back.frame(0)->body_as_Welcome()->resumed());
  EXPECT_NE(back.last()->body_as_Redirect(), nullptr);  // and is told where to go next
}

// --- Overload: new players are told to come back, the sessions here keep their service ---

constexpr char kOverloaded[] =
    "Overloaded: the server is overloaded: new sessions are refused until it catches up; retry in ";

// The retry-after of `p`'s last frame, a Refuse; 0 when it is none.
std::uint32_t RetryOf(const MemoryPeer& p) {
  const w::Refuse* r = p.frame_count() > 0 ? p.last()->body_as_Refuse() : nullptr;
  return r != nullptr ? r->retry_after_ms() : 0;
}

TEST_F(FrontDoorAloneTest, WhileOverloadedANewPlayerIsToldToRetryAndTheSessionsHereAreServed) {
  options_.resume_window_seconds = 30;
  BuildAll();
  MemoryPeer& ada = Arrive();
  Hello(ada, "ada");
  MemoryPeer& cy = Arrive();
  Hello(cy, "cy");
  const SessionId id = ada.session();
  links_->Unlink(ada, ExitReason::kTransportError, /*resumable=*/true);
  Busy(std::chrono::milliseconds(2500));
  MemoryPeer& bob = Arrive();
  Hello(bob, "bob");
  EXPECT_EQ(Refusal(bob).rfind(kOverloaded, 0), 0u) << Refusal(bob);
  EXPECT_GE(RetryOf(bob), 3750u);  // net.overload_retry_after_seconds (5) +-25%
  EXPECT_LE(RetryOf(bob), 6250u);
  EXPECT_TRUE(bob.closed());
  EXPECT_EQ(stats_.refused_overloaded, 1u);
  EXPECT_EQ(door_->load().figures().episodes, 1u);
  // Ada's client comes back through the load: her session, resumed.
  MemoryPeer& again = Arrive();
  Hello(again, "ada", w::kProtocolVersion, TokenOf(ada));
  ASSERT_GE(again.frame_count(), 1u);
  ASSERT_NE(again.frame(0)->body_as_Welcome(), nullptr) << Refusal(again);
  EXPECT_EQ(again.session(), id);
  EXPECT_FALSE(cy.closed());
  EXPECT_EQ(sessions_->count(), 2u);
  // Those refused together are not all told to come back at the same moment.
  std::set<std::uint32_t> retries;
  for (int i = 0; i < 20; ++i) {
    MemoryPeer& p = Arrive(fmt::format("10.0.1.{}", i));
    Hello(p, fmt::format("player{}", i));
    retries.insert(RetryOf(p));
  }
  EXPECT_GT(retries.size(), 1u);
  EXPECT_EQ(stats_.refused_overloaded, 21u);
  // The server catches up: new players are welcome again.
  Calm(std::chrono::milliseconds(2500));
  MemoryPeer& later = Arrive("10.0.2.1");
  Hello(later, "bob");
  EXPECT_EQ(later.Kinds(), std::vector<std::string>{"Welcome"});
}

TEST_F(FrontDoorAloneTest, WhileOverloadedAFullHandshakeTableRefusesTheNewcomerNotTheOldest) {
  options_.max_half_open = 2;
  BuildAll();
  Busy(std::chrono::milliseconds(2500));
  MemoryPeer& a = Arrive("10.0.0.1");
  MemoryPeer& b = Arrive("10.0.0.2");
  MemoryPeer& c = Arrive("10.0.0.3");
  EXPECT_EQ(Refusal(c).rfind(kOverloaded, 0), 0u) << Refusal(c);
  EXPECT_EQ(a.frame_count(), 0u);  // they wait for the server, not the other way round
  EXPECT_EQ(b.frame_count(), 0u);
  EXPECT_EQ(stats_.half_open_evicted, 0u);
  // Caught up, a full table makes room as always: the one that waited longest goes.
  Calm(std::chrono::milliseconds(2500));
  MemoryPeer& d = Arrive("10.0.0.4");
  EXPECT_EQ(Refusal(a).rfind("ServerFull: ", 0), 0u) << Refusal(a);
  EXPECT_EQ(d.frame_count(), 0u);
  EXPECT_EQ(stats_.half_open_evicted, 1u);
}

TEST_F(FrontDoorAloneTest, AFullServerRefusesNewPlayersWithARetry) {
  options_.max_sessions = 1;
  BuildAll();
  MemoryPeer& ada = Arrive();
  Hello(ada, "ada");
  MemoryPeer& bob = Arrive();
  Hello(bob, "bob");
  EXPECT_EQ(Refusal(bob), "ServerFull: the server is full (1 sessions) (5000)");
}

TEST_F(FrontDoorAloneTest, InProductionModeAHelloWithNoAuthenticatorIsRefused) {
  options_.auth = AuthMode::kProduction;
  BuildAll();
  EXPECT_FALSE(door_->authenticates());
  MemoryPeer& p = Arrive();
  Hello(p, "ada");
  EXPECT_EQ(Refusal(p), "AuthFailed: no authenticator is installed (0)");
}

TEST_F(FrontDoorAloneTest, AnAddressPastItsHandshakeRateIsRefusedAtAdmission) {
  options_.handshakes_per_address = 1;  // 2 at once
  BuildAll();
  Arrive();
  Arrive();
  MemoryPeer& third = Arrive();
  EXPECT_EQ(Refusal(third), "RateLimited: too many connections from 10.0.0.1; retry later (1000)");
  EXPECT_EQ(stats_.refused_handshake_rate, 1u);
  EXPECT_EQ(stats_.connections_accepted, 3u);
}

}  // namespace
}  // namespace molt::kernel::net
