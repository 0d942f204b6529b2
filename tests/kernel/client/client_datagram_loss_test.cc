// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/client/client_datagram_loss_test.cc
//
// The datagram link through real loss: libmolt_client against an in-process server whose
// Welcome names molt-relay's port (net.udp_public_port), the relay on its own thread dropping
// 0%, 1% and 5% of the datagrams each way and holding each 50 ms +- 10 ms (so some overtake
// others). While the server streams its authoritative position on an unreliable latest-wins
// channel and numbered events on a reliable one, the client walks by predicted intents, some
// into a wall the server refuses. Latest-wins never delivers an older position after a newer
// one; the reliable events arrive each once and in order; every predicted intent is resolved
// exactly once and each step the server took is taken once; and the client's view (the last
// authoritative position plus what is pending) converges on the server's.
#include <gtest/gtest.h>
#include <molt/client.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client_fixture.h"
#include "hosts/molt-relay/relay.h"

namespace molt::kernel::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A free loopback UDP port for the relay to listen on (the Welcome must name it before the relay
// can be told where the server is).
std::uint16_t FreeUdpPort() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// What the client saw, by channel.
struct View {
  std::uint16_t pos = 0;
  std::uint16_t log = 0;
  std::vector<int> ticks;     // pos: the server's tick of each position delivered, in order
  int authoritative = 0;      // pos: the newest position
  std::vector<int> log_seen;  // log: each number delivered, in order
  std::map<std::uint32_t, int> resolved;  // seq -> times resolved
  std::map<std::uint32_t, bool> accepted;
};

void OnViewEvent(void* ud, std::uint16_t channel, const void* data, std::size_t) {
  View& v = *static_cast<View*>(ud);
  const std::string text = flatbuffers::GetRoot<molt::test::Say>(data)->text()->str();
  if (channel == v.pos) {  // "tick x"
    const std::size_t space = text.find(' ');
    v.ticks.push_back(std::stoi(text.substr(0, space)));
    v.authoritative = std::stoi(text.substr(space + 1));
  } else if (channel == v.log) {
    v.log_seen.push_back(std::stoi(text));
  }
}

void OnViewResolved(void* ud, std::uint16_t, std::uint32_t seq, std::int32_t accepted,
                    molt_status_t) {
  View& v = *static_cast<View*>(ud);
  ++v.resolved[seq];
  v.accepted[seq] = accepted != 0;
}

// Pending inputs replayed over the authoritative position: +1 a "step", 0 a "wall".
void OnViewPending(void* ud, std::uint16_t, std::uint32_t, const void* data, std::size_t) {
  if (flatbuffers::GetRoot<molt::test::Say>(data)->text()->str() == "step") {
    ++*static_cast<int*>(ud);
  }
}

class DatagramLossTest : public ClientTest, public ::testing::WithParamInterface<double> {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    Teardown();
    relay_port_ = FreeUdpPort();
    NetOptions o = NoResume();
    o.udp = "127.0.0.1:0";
    o.udp_public_port = relay_port_;
    Boot(std::move(o));
  }
  void TearDown() override {
    if (relay_) {
      relay_->Stop();
      relay_thread_.join();
    }
    ClientTest::TearDown();
  }
  void StartRelay(double drop, std::uint64_t rebind_after = 0) {
    relay::RelayOptions r;
    r.listen = {"127.0.0.1", relay_port_};
    r.to = {"127.0.0.1", net_->udp_port()};
    r.impairment.drop = drop;
    r.impairment.delay = milliseconds(50);
    r.impairment.jitter = milliseconds(10);
    r.seed = 51;
    r.rebind_after = rebind_after;
    auto opened = relay::Relay::Open(r);
    ASSERT_TRUE(std::holds_alternative<std::unique_ptr<relay::Relay>>(opened))
        << std::get<std::string>(opened);
    relay_ = std::move(std::get<std::unique_ptr<relay::Relay>>(opened));
    relay_thread_ = std::thread([this] { relay_->Run(); });
  }
  // The server and one client step.
  void Turn() {
    kernel_->loop().io().restart();
    kernel_->loop().RunFor(milliseconds(1));
    ASSERT_EQ(molt_client_step(client_, 0.0015), MOLT_OK);
  }
  int ViewOfClient() {
    int x = view_.authoritative;
    EXPECT_EQ(molt_client_pending(client_, view_move_, OnViewPending, &x), MOLT_OK);
    return x;
  }
  std::size_t PendingCount() {
    std::size_t n = 0;
    molt_client_pending(
        client_, view_move_,
        [](void* ud, std::uint16_t, std::uint32_t, const void*, std::size_t) {
          ++*static_cast<std::size_t*>(ud);
        },
        &n);
    return n;
  }

  // The world: "move", a predicted intent whose handler takes a "step" (server_x_ + 1) and
  // refuses a "wall"; "pos", an unreliable latest-wins channel for the server's position. Then
  // listens, starts the relay, connects the client and waits for its datagram link.
  void Play(double drop, std::uint64_t rebind_after = 0) {
    DeclareSayOf(ChannelKind::kPredicted, "move", [this](Session&, std::span<Value> args) {
      if (flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str() == "wall") {
        throw HandlerRefused{"a wall"};
      }
      ++server_x_;
    });
    pos_id_ = DeclareSayOf(ChannelKind::kUnreliable, "pos", nullptr, /*latest_wins=*/true);
    log_id_ = DeclareEvent("log");
    Listen();
    StartRelay(drop, rebind_after);
    ASSERT_TRUE(Connect());
    ASSERT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED) << Error();
    view_.pos = Channel("pos");
    view_.log = Channel("log");
    view_move_ = Channel("move");
    ASSERT_EQ(molt_client_on_event(client_, MOLT_CLIENT_ALL_CHANNELS, OnViewEvent, &view_),
              MOLT_OK);
    ASSERT_EQ(molt_client_on_resolved(client_, OnViewResolved, &view_), MOLT_OK);
    // Through the relay: ENet's handshake, then the sealed Ping that binds the link.
    ASSERT_TRUE(Pump([&] { return net_->datagrams().counts().opened >= 1; }, milliseconds(10000)));
  }
  // The server's position, numbered by its tick ("tick x"), when its 60 Hz tick is due.
  void Tick() {
    if (Clock::now() >= next_tick_) {
      ASSERT_TRUE(net_->Broadcast(pos_id_, SayPayload(std::to_string(++ticks_) + " " +
                                                      std::to_string(server_x_)))
                      .ok());
      next_tick_ = std::max(next_tick_ + milliseconds(16), Clock::now() - milliseconds(16));
    }
  }
  void Predict(const std::string& text) {
    const std::vector<std::uint8_t> p = SayPayload(text);
    ASSERT_EQ(molt_client_predict(client_, view_move_, p.data(), p.size(), nullptr), MOLT_OK)
        << Error();
    ++predicted_;
  }
  // Ticks and turns until every prediction is resolved, `more` holds no longer, and the client
  // has the server's position with nothing pending (15 s at most).
  void Settle(const std::function<bool()>& more = [] { return false; }) {
    const Clock::time_point settle = Clock::now() + std::chrono::seconds(15);
    while ((view_.resolved.size() < predicted_ || more() || view_.authoritative != server_x_ ||
            PendingCount() != 0) &&
           Clock::now() < settle) {
      Tick();
      Turn();
    }
  }
  // What every run ends with: latest-wins never went back, each prediction was resolved exactly
  // once, and the client converged on the server's position.
  void ExpectConverged() {
    ASSERT_FALSE(view_.ticks.empty());
    for (std::size_t i = 1; i < view_.ticks.size(); ++i) {
      ASSERT_LT(view_.ticks[i - 1], view_.ticks[i]) << "at " << i;
    }
    ASSERT_EQ(view_.resolved.size(), predicted_);
    for (const auto& [seq, times] : view_.resolved) {
      EXPECT_EQ(times, 1) << "seq " << seq;
    }
    EXPECT_EQ(PendingCount(), 0u);
    EXPECT_EQ(ViewOfClient(), server_x_);
  }

  std::uint16_t relay_port_ = 0;
  std::unique_ptr<relay::Relay> relay_;
  std::thread relay_thread_;
  View view_;
  std::uint16_t view_move_ = 0;
  ChannelId pos_id_ = 0;
  ChannelId log_id_ = 0;
  int server_x_ = 0;  // the authoritative position: one per step the server took
  int ticks_ = 0;
  Clock::time_point next_tick_ = Clock::now();
  std::uint32_t predicted_ = 0;
};

TEST_P(DatagramLossTest, LatestWinsHoldsReliableStaysExactlyOncePredictionsResolveAndConverge) {
  const double drop = GetParam();
  Play(drop);
  // Three seconds of play: the server's position at 60 Hz, a reliable event at 20 Hz, a move at
  // 25 Hz (every seventh into the wall; the channel allows 30).
  int logged = 0;
  int steps = 0;
  const Clock::time_point start = Clock::now();
  Clock::time_point next_log = start, next_move = start;
  next_tick_ = start;
  while (Clock::now() - start < std::chrono::seconds(3)) {
    const Clock::time_point now = Clock::now();
    Tick();
    if (now >= next_log) {
      ASSERT_TRUE(net_->Broadcast(log_id_, SayPayload(std::to_string(++logged))).ok());
      next_log += milliseconds(50);
    }
    if (now >= next_move) {
      const bool wall = (predicted_ + 1) % 7 == 0;
      steps += wall ? 0 : 1;
      Predict(wall ? "wall" : "step");
      next_move += milliseconds(40);
    }
    Turn();
  }
  Settle([&] { return view_.log_seen.size() < static_cast<std::size_t>(logged); });

  ExpectConverged();
  // Most positions arrived (the others were lost, or overtaken and dropped as stale).
  EXPECT_GE(view_.ticks.size() * 2, static_cast<std::size_t>(ticks_)) << view_.ticks.size();
  // Reliable: each event once, in order.
  std::vector<int> expected(static_cast<std::size_t>(logged));
  for (int i = 0; i < logged; ++i) {
    expected[static_cast<std::size_t>(i)] = i + 1;
  }
  EXPECT_EQ(view_.log_seen, expected);
  // The walls rolled back; every step the client took was taken by the server exactly once
  // (ENet's reliable channel retransmits what is lost).
  for (const auto& [seq, accepted] : view_.accepted) {
    if (seq % 7 == 0) {
      EXPECT_FALSE(accepted) << "seq " << seq << " walked into the wall";
    }
  }
  EXPECT_EQ(server_x_, steps);
  // And it all went through the relay, which lost what it was told to.
  EXPECT_GE(net_->datagrams().counts().opened, predicted_);
  const relay::RelayStats stats = relay_->Snapshot();
  if (drop > 0) {
    EXPECT_GT(stats.to_server.dropped + stats.to_client.dropped, 0u) << stats.ToJson();
  }
  EXPECT_EQ(stats.clients, 1u) << stats.ToJson();
}

// A NAT that gives the client a new port every 150 datagrams: the server's ENet ignores the new
// address, the client's gives up within about 2 s and connects again from there, and the first
// datagram that authenticates moves the session's link. Predictions made meanwhile resolve (late
// acks or timeouts) and the client still converges.
TEST_F(DatagramLossTest, ANatRebindingMovesTheLinkAndPlayGoesOn) {
  Play(0, 150);
  // A step every 40 ms and the position at 60 Hz until the link has moved and carried 30
  // datagrams since.
  std::uint64_t opened_before_move = 0;
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(20);
  Clock::time_point next_move = Clock::now();
  next_tick_ = Clock::now();
  while (Clock::now() < give_up) {
    Tick();
    if (Clock::now() >= next_move) {
      Predict("step");
      next_move += milliseconds(40);
    }
    Turn();
    if (net_->datagrams().counts().moves == 0) {
      opened_before_move = net_->datagrams().counts().opened;
    } else if (net_->datagrams().counts().opened > opened_before_move + 30) {
      break;
    }
  }
  ASSERT_GE(net_->datagrams().counts().moves, 1u);
  EXPECT_GE(relay_->Snapshot().rebinds, 1u);
  Settle();

  ExpectConverged();
  // The session never noticed: connected throughout, never reconnecting.
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED);
  EXPECT_EQ(journal_.states, (std::vector<std::string>{"connecting", "connected"}));
}

INSTANTIATE_TEST_SUITE_P(Loss, DatagramLossTest, ::testing::Values(0.0, 0.01, 0.05),
                         [](const ::testing::TestParamInfo<double>& p) {
                           return std::to_string(static_cast<int>(p.param * 100)) + "percent";
                         });

}  // namespace
}  // namespace molt::kernel::net
