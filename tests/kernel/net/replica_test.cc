// SPDX-License-Identifier: Apache-2.0
// The server's replicas (kernel/src/net/replica.h) on the manual clock: what each session is sent
// and when (replica_fixture.h).
#include "kernel/src/net/replica.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernel/src/net/replica_pace.h"
#include "replica_fixture.h"

namespace molt::kernel::net {
namespace {

using std::chrono::milliseconds;

TEST_F(ReplicaTest, WritesBetweenDeadlinesLeaveAsOneDeltaAtTheNextDeadline) {
  CapturePeer& ada = Join("ada");
  const ReplicaId board = Board();  // 10 deliveries a second: 100 ms apart
  ASSERT_TRUE(net_->replicas().SetInt(board, 0, 1).ok());
  Pass(milliseconds(0));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Snapshot 0=1 1="});
  for (int i = 2; i <= 5; ++i) {  // four writes within one period
    ASSERT_TRUE(net_->replicas().SetInt(board, 0, i).ok());
    ASSERT_TRUE(net_->replicas().SetBytes(board, 1, Bytes("ada" + std::to_string(i))).ok());
    Pass(milliseconds(20));
  }
  EXPECT_TRUE(ada.Replicas().empty());  // 80 ms after the last delivery: not yet
  Pass(milliseconds(20));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Delta 0=5 1=ada5"});
  // Writing what is already there marks nothing: no frame at the next deadline.
  ASSERT_TRUE(net_->replicas().SetInt(board, 0, 5).ok());
  Pass(milliseconds(200));
  EXPECT_TRUE(ada.Replicas().empty());
  // Only the fields written go.
  ASSERT_TRUE(net_->replicas().SetBytes(board, 1, Bytes("bob")).ok());
  Pass(milliseconds(100));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Delta 1=bob"});
  EXPECT_EQ(net_->replicas().stats().deltas_sent, 2u);
}

TEST_F(ReplicaTest, ALateJoinerGetsTheStateAsASnapshotWhileOthersGetTheDelta) {
  CapturePeer& ada = Join("ada");
  const ReplicaId board = Board();
  ASSERT_TRUE(net_->replicas().SetInt(board, 0, 1).ok());
  Pass(milliseconds(100));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Snapshot 0=1 1="});
  CapturePeer& bob = Join("bob");
  ASSERT_TRUE(net_->replicas().SetInt(board, 0, 2).ok());
  Pass(milliseconds(100));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Delta 0=2"});
  EXPECT_EQ(bob.Replicas(), std::vector<std::string>{"Snapshot 0=2 1="});
}

TEST_F(ReplicaTest, AListAudienceReachesOnlyItsSessionsAndLeavingItSendsARemove) {
  CapturePeer& ada = Join("ada");
  CapturePeer& bob = Join("bob");
  const ReplicaId board = Board(Audience::kList);
  ASSERT_TRUE(net_->replicas().AddSession(board, bob.session()).ok());
  ASSERT_TRUE(net_->replicas().AddSession(board, bob.session()).ok());  // twice: once
  Pass(milliseconds(100));
  EXPECT_TRUE(ada.Replicas().empty());
  EXPECT_EQ(bob.Replicas(), std::vector<std::string>{"Snapshot 0=0 1="});
  ASSERT_TRUE(net_->replicas().RemoveSession(board, bob.session()).ok());
  Pass(milliseconds(100));
  EXPECT_EQ(bob.Replicas(), std::vector<std::string>{"Remove"});
  ASSERT_TRUE(net_->replicas().SetInt(board, 0, 9).ok());
  Pass(milliseconds(100));
  EXPECT_TRUE(bob.Replicas().empty());
  EXPECT_EQ(net_->replicas().AddSession(board, 999).message(), "session 999 is not active");
  EXPECT_EQ(net_->replicas().AddSession(Board(), ada.session()).message(),
            "replica \"board\" goes to everyone; create it with the list audience to choose "
            "sessions");
}

TEST_F(ReplicaTest, DestroyingOrItsOwnerLeavingRemovesItFromEverySessionThatHadIt) {
  CapturePeer& ada = Join("ada");
  const ReplicaId first = Board();
  const ReplicaId second = Board(Audience::kAll, 50);  // names need not be unique
  Pass(milliseconds(100));
  EXPECT_EQ(ada.Replicas().size(), 2u);
  ASSERT_TRUE(net_->replicas().Destroy(first).ok());
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Remove"});
  EXPECT_EQ(net_->replicas().SetInt(first, 0, 1).message(),
            "set: replica " + std::to_string(first) + " does not exist (destroyed?)");
  net_->replicas().ReleaseOwner(&owner_);  // the plugin stopped
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Remove"});
  EXPECT_EQ(net_->replicas().count(), 0u);
  EXPECT_FALSE(net_->replicas().Destroy(second).ok());
}

TEST_F(ReplicaTest, AFasterTickRateDeliversSooner) {
  CapturePeer& ada = Join("ada");
  const ReplicaId fast = Board(Audience::kAll, 100);  // 10 ms apart
  Pass(milliseconds(0));
  EXPECT_EQ(ada.Replicas().size(), 1u);
  ASSERT_TRUE(net_->replicas().SetInt(fast, 0, 1).ok());
  Pass(milliseconds(9));
  EXPECT_TRUE(ada.Replicas().empty());
  Pass(milliseconds(1));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Delta 0=1"});
}

// A position written at 20 Hz: x and y with a deadband of 0.05, hp (int) with one of 5.
ReplicaSpec Avatar(double rate = 20) {
  ReplicaSpec spec;
  spec.name = "avatar";
  spec.tick_rate = rate;
  spec.fields = {{"x", ReplicaFieldType::kFloat, 0, 0.05},
                 {"y", ReplicaFieldType::kFloat, 0, 0.05},
                 {"hp", ReplicaFieldType::kInt, 0, 5}};
  return spec;
}

// The spec's example: a 20 Hz position wiggling by hundredths goes from 20 deltas a second to 0.
TEST_F(ReplicaTest, ADeadbandHoldsBackAWiggleSmallerThanItsThreshold) {
  CapturePeer& ada = Join("ada");
  Result<ReplicaId> avatar = net_->replicas().Create(Avatar(), &owner_);
  ASSERT_TRUE(avatar.ok()) << avatar.status().ToString();
  ASSERT_TRUE(net_->replicas().SetFloat(*avatar, 0, 10).ok());
  Pass(milliseconds(0));
  std::map<int, double> copy;
  ada.ApplyTo(copy);
  EXPECT_EQ(copy[0], 10);  // the snapshot is exact
  int deltas = 0;
  for (int i = 0; i < 20; ++i) {  // one second of +-0.01, +-0.02
    ASSERT_TRUE(net_->replicas().SetFloat(*avatar, 0, 10 + (i % 2 == 0 ? 0.01 : -0.02)).ok());
    ASSERT_TRUE(net_->replicas().SetInt(*avatar, 2, i % 3).ok());
    Pass(milliseconds(50));
    deltas += ada.ApplyTo(copy);
  }
  EXPECT_EQ(deltas, 0);
  EXPECT_EQ(net_->replicas().stats().fields_deadbanded, 20u + 19u);  // x 20 times, hp 19
  // A move by the threshold goes, and from then on the new value is the reference.
  ASSERT_TRUE(net_->replicas().SetFloat(*avatar, 0, 10.05).ok());
  Pass(milliseconds(50));
  EXPECT_EQ(ada.ApplyTo(copy), 1);
  EXPECT_DOUBLE_EQ(copy[0], 10.05);
  ASSERT_TRUE(net_->replicas().SetFloat(*avatar, 0, 10.01).ok());
  Pass(milliseconds(50));
  EXPECT_EQ(ada.ApplyTo(copy), 0);
}

// Random walks of every field: at every delivery each session's copy is within the deadband of
// the server's value (the drift never reaches it), whenever the session joined.
TEST_F(ReplicaTest, ADeadbandNeverLetsACopyDriftByItsThreshold) {
  std::mt19937 rng(52);
  std::uniform_real_distribution<double> step(-0.03, 0.03);
  std::uniform_int_distribution<int> hp_step(-2, 2);
  std::vector<CapturePeer*> peers = {&Join("ada")};
  Result<ReplicaId> avatar = net_->replicas().Create(Avatar(), &owner_);
  ASSERT_TRUE(avatar.ok());
  std::vector<std::map<int, double>> copies(3);
  double x = 0, y = 0;
  std::int64_t hp = 100;
  for (int tick = 0; tick < 200; ++tick) {  // 10 s: the test's peers answer no pings
    if (tick == 60 || tick == 130) {
      peers.push_back(&Join(tick == 60 ? "bob" : "cy"));
    }
    x += step(rng);
    y += step(rng);
    hp += hp_step(rng);
    ASSERT_TRUE(net_->replicas().SetFloat(*avatar, 0, x).ok());
    ASSERT_TRUE(net_->replicas().SetFloat(*avatar, 1, y).ok());
    ASSERT_TRUE(net_->replicas().SetInt(*avatar, 2, hp).ok());
    Pass(milliseconds(50));
    for (std::size_t p = 0; p < peers.size(); ++p) {
      peers[p]->ApplyTo(copies[p]);
      ASSERT_LT(std::abs(copies[p][0] - x), 0.05) << "tick " << tick << " peer " << p;
      ASSERT_LT(std::abs(copies[p][1] - y), 0.05) << "tick " << tick << " peer " << p;
      ASSERT_LT(std::abs(copies[p][2] - static_cast<double>(hp)), 5) << "tick " << tick;
    }
  }
  const ReplicaStats st = net_->replicas().stats();
  EXPECT_GT(st.fields_deadbanded, 0u);
  EXPECT_LT(st.deltas_sent, 200u + 140u + 70u);  // some deliveries held back altogether
}

TEST_F(ReplicaTest, ADeadbandOnBytesOrNotAFiniteNumberIsRefusedNamingTheField) {
  ReplicaSpec bytes = Avatar();
  bytes.fields.push_back({"tag", ReplicaFieldType::kBytes, 8, 1});
  EXPECT_EQ(net_->replicas().Create(std::move(bytes), &owner_).status().message(),
            "replica \"avatar\": field \"tag\" is bytes; only int and float fields take a "
            "deadband");
  ReplicaSpec negative = Avatar();
  negative.fields[1].quantize = -1;
  EXPECT_EQ(net_->replicas().Create(std::move(negative), &owner_).status().message(),
            "replica \"avatar\": field \"y\" has deadband -1; a deadband is a finite number >= 0 "
            "(0: every change is sent)");
  ReplicaSpec nan = Avatar();
  nan.fields[0].quantize = std::nan("");
  EXPECT_FALSE(net_->replicas().Create(std::move(nan), &owner_).ok());
}

// Sessions at a divisor of their own (the NetGovernor's tiers), the rest at 1.
class FixedPace final : public ReplicaPace {
 public:
  std::uint32_t Divisor(const Session& s) const override {
    auto it = divisors.find(s.id());
    return it == divisors.end() ? 1 : it->second;
  }
  std::map<SessionId, std::uint32_t> divisors;
};

// Spec (NetGovernor): Poor clients get every 4th tick, what the skipped ticks wrote is banked and
// merged into the next send, snapshots and removes never wait, and phases differ per player.
TEST_F(ReplicaTest, ASlowerPaceSendsEveryNthTickAndNeverLosesAField) {
  FixedPace pace;
  net_->replicas().SetPace(&pace);
  CapturePeer& good = Join("good");
  CapturePeer& poor = Join("poor");
  pace.divisors[poor.session()] = 4;
  const ReplicaId board = Board(Audience::kAll, 10);
  Pass(milliseconds(0));
  EXPECT_EQ(poor.Replicas(), std::vector<std::string>{"Snapshot 0=0 1="});  // at once
  good.Replicas();
  std::vector<int> poor_ticks;
  std::map<int, double> poor_copy;
  for (int tick = 1; tick <= 16; ++tick) {
    ASSERT_TRUE(net_->replicas().SetInt(board, 0, tick).ok());
    if (tick == 6) {  // written once, on a tick the poor session skips or not: it arrives
      ASSERT_TRUE(net_->replicas().SetBytes(board, 1, Bytes("six")).ok());
    }
    Pass(milliseconds(100));
    EXPECT_EQ(good.Replicas().size(), 1u) << "tick " << tick;
    const std::vector<std::string> got = poor.Replicas();
    if (!got.empty()) {
      poor_ticks.push_back(tick);
    }
  }
  ASSERT_EQ(poor_ticks.size(), 4u);
  for (std::size_t i = 1; i < poor_ticks.size(); ++i) {
    EXPECT_EQ(poor_ticks[i] - poor_ticks[i - 1], 4);
  }
  // Its copy ends equal to the server's once its next tick comes.
  for (int i = 0; i < 4; ++i) {
    Pass(milliseconds(100));
  }
  std::map<int, double> copy;
  poor.ApplyTo(copy);
  EXPECT_EQ(copy[0], 16);
  EXPECT_GT(net_->replicas().stats().deltas_deferred, 0u);
  // A remove is not delayed.
  ASSERT_TRUE(net_->replicas().Destroy(board).ok());
  EXPECT_EQ(poor.Replicas().back(), "Remove");
  net_->replicas().SetPace(nullptr);
}

TEST_F(ReplicaTest, SessionsAtOnePaceTakeDifferentTicks) {
  FixedPace pace;
  net_->replicas().SetPace(&pace);
  std::vector<CapturePeer*> peers;
  for (int i = 0; i < 12; ++i) {
    peers.push_back(&Join("p" + std::to_string(i)));
    pace.divisors[peers.back()->session()] = 4;
  }
  const ReplicaId board = Board(Audience::kAll, 10);
  Pass(milliseconds(0));
  std::set<int> first_ticks;
  std::vector<int> first(peers.size(), 0);
  for (int tick = 1; tick <= 4; ++tick) {
    ASSERT_TRUE(net_->replicas().SetInt(board, 0, tick).ok());
    Pass(milliseconds(100));
    for (std::size_t p = 0; p < peers.size(); ++p) {
      for (const std::string& line : peers[p]->Replicas()) {
        if (line.starts_with("Delta") && first[p] == 0) {
          first[p] = tick;
          first_ticks.insert(tick);
        }
      }
    }
  }
  EXPECT_GE(first_ticks.size(), 3u) << "12 sessions at divisor 4 bunched on too few ticks";
  for (int f : first) {
    EXPECT_NE(f, 0);  // each took one of the four
  }
  net_->replicas().SetPace(nullptr);
}

}  // namespace
}  // namespace molt::kernel::net
