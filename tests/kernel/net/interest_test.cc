// SPDX-License-Identifier: Apache-2.0
// Interest (kernel/src/net/replica.h, interest_sources.h, zones.h) on the manual clock: who sees
// a replica, and that entering sends its snapshot and leaving its remove exactly once each,
// whatever the mix of list, zones and predicate (replica_fixture.h).
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernel/src/net/grids.h"
#include "kernel/src/net/zones.h"
#include "replica_fixture.h"

namespace molt::kernel::net {
namespace {

using std::chrono::milliseconds;
using Lines = std::vector<std::string>;

class InterestTest : public ReplicaTest {
 protected:
  Replicas& replicas() { return net_->replicas(); }
  Zones& zones() { return net_->zones(); }
  ZoneId Zone(const std::string& name) {
    Result<ZoneId> z = zones().Declare(name, &owner_);
    EXPECT_TRUE(z.ok()) << z.status().ToString();
    return z.ok() ? *z : 0;
  }
  void Tick() { Pass(milliseconds(100)); }
  // A list-audience replica "dot" with float fields x and y at (x, y).
  ReplicaId Dot(double x, double y) {
    ReplicaSpec spec;
    spec.name = "dot";
    spec.audience = Audience::kList;
    spec.fields = {{"x", ReplicaFieldType::kFloat}, {"y", ReplicaFieldType::kFloat}};
    Result<ReplicaId> id = replicas().Create(std::move(spec), &owner_);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    EXPECT_TRUE(replicas().SetFloat(*id, 0, x).ok());
    EXPECT_TRUE(replicas().SetFloat(*id, 1, y).ok());
    return *id;
  }
  GridId World(double radius, double leave_radius = 0) {
    GridSpec spec;
    spec.name = "world";
    spec.options.radius = radius;
    spec.options.leave_radius = leave_radius;
    Result<GridId> g = net_->grids().Declare(std::move(spec), &owner_);
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return g.ok() ? *g : 0;
  }
};

TEST_F(InterestTest, AZoneMemberSeesTheZonesReplicasAndLeavingSendsOneRemove) {
  CapturePeer& ada = Join("ada");
  CapturePeer& bob = Join("bob");
  const ZoneId hall = Zone("hall");
  const ReplicaId door = Board(Audience::kList);
  ASSERT_TRUE(zones().Bind(hall, door).ok());
  ASSERT_TRUE(zones().Enter(hall, ada.session()).ok());
  ASSERT_TRUE(zones().Enter(hall, ada.session()).ok());  // twice: once
  Tick();
  EXPECT_EQ(ada.Replicas(), Lines{"Snapshot 0=0 1="});
  EXPECT_TRUE(bob.Replicas().empty());
  ASSERT_TRUE(replicas().SetInt(door, 0, 7).ok());
  Tick();
  EXPECT_EQ(ada.Replicas(), Lines{"Delta 0=7"});
  ASSERT_TRUE(zones().Leave(hall, ada.session()).ok());
  ASSERT_TRUE(zones().Leave(hall, ada.session()).ok());
  EXPECT_EQ(ada.Replicas(), Lines{"Remove"});
  Tick();
  EXPECT_TRUE(ada.Replicas().empty());
  // Back in: a fresh snapshot, once.
  ASSERT_TRUE(zones().Enter(hall, ada.session()).ok());
  Tick();
  EXPECT_EQ(ada.Replicas(), Lines{"Snapshot 0=7 1="});
  EXPECT_EQ(replicas().stats().removes_sent, 1u);
}

TEST_F(InterestTest, ASessionHeldByTwoSourcesLosesTheReplicaOnlyWithTheLast) {
  CapturePeer& ada = Join("ada");
  const ZoneId hall = Zone("hall");
  const ZoneId yard = Zone("yard");
  const ReplicaId door = Board(Audience::kList);
  ASSERT_TRUE(zones().Bind(hall, door).ok());
  ASSERT_TRUE(zones().Bind(yard, door).ok());
  ASSERT_TRUE(zones().Enter(hall, ada.session()).ok());
  ASSERT_TRUE(zones().Enter(yard, ada.session()).ok());
  ASSERT_TRUE(replicas().AddSession(door, ada.session()).ok());
  Tick();
  EXPECT_EQ(ada.Replicas(), Lines{"Snapshot 0=0 1="});
  ASSERT_TRUE(zones().Leave(hall, ada.session()).ok());
  ASSERT_TRUE(replicas().RemoveSession(door, ada.session()).ok());
  Tick();
  EXPECT_TRUE(ada.Replicas().empty()) << "the yard still holds her";
  ASSERT_TRUE(zones().Unbind(yard, door).ok());
  EXPECT_EQ(ada.Replicas(), Lines{"Remove"});
  Tick();
  EXPECT_TRUE(ada.Replicas().empty());
}

TEST_F(InterestTest, BindingAReplicaToAZoneReachesItsMembersAndDestroyingTheZoneRemovesIt) {
  CapturePeer& ada = Join("ada");
  CapturePeer& bob = Join("bob");
  const ZoneId hall = Zone("hall");
  ASSERT_TRUE(zones().Enter(hall, ada.session()).ok());
  ASSERT_TRUE(zones().Enter(hall, bob.session()).ok());
  const ReplicaId door = Board(Audience::kList);
  const ReplicaId lamp = Board(Audience::kList);
  ASSERT_TRUE(zones().Bind(hall, door).ok());
  ASSERT_TRUE(zones().Bind(hall, lamp).ok());
  Tick();
  EXPECT_EQ(ada.Replicas().size(), 2u);
  EXPECT_EQ(bob.Replicas().size(), 2u);
  ASSERT_TRUE(zones().Destroy(hall).ok());
  EXPECT_EQ(ada.Replicas(), (Lines{"Remove", "Remove"}));
  EXPECT_EQ(bob.Replicas(), (Lines{"Remove", "Remove"}));
  EXPECT_EQ(zones().Enter(hall, ada.session()).message(),
            "enter: zone " + std::to_string(hall) + " does not exist (destroyed?)");
  // A destroyed replica drops out of its zones.
  const ZoneId yard = Zone("yard");
  ASSERT_TRUE(zones().Bind(yard, door).ok());
  ASSERT_TRUE(replicas().Destroy(door).ok());
  EXPECT_TRUE(zones().Enter(yard, ada.session()).ok());
  Tick();
  EXPECT_TRUE(ada.Replicas().empty());
}

TEST_F(InterestTest, AZoneRefusesAnEveryoneReplicaAndAnUnknownSessionNamingThem) {
  const ZoneId hall = Zone("hall");
  const ReplicaId board = Board(Audience::kAll);
  EXPECT_EQ(zones().Bind(hall, board).message(),
            "replica \"board\" goes to everyone; create it with the list audience to bind it to "
            "zone \"hall\"");
  EXPECT_EQ(zones().Enter(hall, 999).message(), "session 999 is not active");
  EXPECT_EQ(zones().Bind(hall, 12345).message(), "bind: replica 12345 does not exist (destroyed?)");
  EXPECT_EQ(zones().Declare("", &owner_).status().message(),
            "a zone needs a name of 1 to 128 characters");
}

TEST_F(InterestTest, AnEndedSessionLeavesItsZonesWithoutARemove) {
  CapturePeer& ada = Join("ada");
  CapturePeer& bob = Join("bob");
  const ZoneId hall = Zone("hall");
  const ReplicaId door = Board(Audience::kList);
  ASSERT_TRUE(zones().Bind(hall, door).ok());
  ASSERT_TRUE(zones().Enter(hall, ada.session()).ok());
  ASSERT_TRUE(zones().Enter(hall, bob.session()).ok());
  Tick();
  const SessionId gone = bob.session();
  ASSERT_TRUE(net_->Kick(gone, "bye").ok());
  Tick();
  EXPECT_FALSE(zones().Contains(hall, gone));
  ASSERT_TRUE(zones().Destroy(hall).ok());
  EXPECT_EQ(replicas().stats().removes_sent, 1u);  // ada's only
}

// The spec's Interest = function(player) -> bool: of the candidates, only those it says yes to.
TEST_F(InterestTest, ThePredicateChoosesAmongTheCandidatesAndARefreshAppliesItsNewAnswer) {
  CapturePeer& ada = Join("ada");
  CapturePeer& bob = Join("bob");
  const ReplicaId board = Board(Audience::kAll);
  std::set<SessionId> near = {ada.session()};
  ASSERT_TRUE(replicas().SetInterest(board, [&](SessionId s) { return near.contains(s); }).ok());
  Tick();
  EXPECT_EQ(ada.Replicas().size(), 1u);
  EXPECT_TRUE(bob.Replicas().empty());
  // What the predicate reads changed: a refresh of one session, then of all.
  near = {bob.session()};
  ASSERT_TRUE(replicas().RefreshInterest(board, bob.session()).ok());
  Tick();
  EXPECT_EQ(bob.Replicas(), Lines{"Snapshot 0=0 1="});
  EXPECT_TRUE(ada.Replicas().empty()) << "not refreshed yet";
  ASSERT_TRUE(replicas().RefreshInterest(board, 0).ok());
  EXPECT_EQ(ada.Replicas(), Lines{"Remove"});
  // A session that joins is asked too; clearing the predicate lets everyone in.
  near.clear();
  CapturePeer& cy = Join("cy");
  Tick();
  EXPECT_TRUE(cy.Replicas().empty());
  ASSERT_TRUE(replicas().SetInterest(board, nullptr).ok());
  Tick();
  EXPECT_EQ(cy.Replicas().size(), 1u);
  EXPECT_EQ(ada.Replicas().size(), 1u);
  EXPECT_TRUE(bob.Replicas().empty()) << "bob had it all along";
}

TEST_F(InterestTest, ThePredicateFiltersAZonesMembers) {
  CapturePeer& ada = Join("ada");
  CapturePeer& bob = Join("bob");
  const ZoneId hall = Zone("hall");
  const ReplicaId door = Board(Audience::kList);
  ASSERT_TRUE(zones().Bind(hall, door).ok());
  const SessionId not_bob = bob.session();
  ASSERT_TRUE(replicas().SetInterest(door, [&](SessionId s) { return s != not_bob; }).ok());
  ASSERT_TRUE(zones().Enter(hall, ada.session()).ok());
  ASSERT_TRUE(zones().Enter(hall, bob.session()).ok());
  Tick();
  EXPECT_EQ(ada.Replicas().size(), 1u);
  EXPECT_TRUE(bob.Replicas().empty());
  ASSERT_TRUE(zones().Leave(hall, bob.session()).ok());  // never had it: no Remove
  EXPECT_TRUE(bob.Replicas().empty());
  EXPECT_EQ(replicas().stats().removes_sent, 0u);
}

TEST_F(InterestTest, AGridShowsEachSessionTheReplicasWithinItsRadiusOnceEach) {
  CapturePeer& ada = Join("ada");
  CapturePeer& bob = Join("bob");
  const GridId world = World(50, 60);
  const ReplicaId near = Dot(10, 0);
  const ReplicaId far = Dot(200, 0);
  ASSERT_TRUE(net_->grids().BindReplica(world, near, 0, 1).ok());
  ASSERT_TRUE(net_->grids().BindReplica(world, far, 0, 1).ok());
  ASSERT_TRUE(net_->grids().PlaceSession(world, ada.session(), 0, 0).ok());
  ASSERT_TRUE(net_->grids().PlaceSession(world, bob.session(), 190, 0).ok());
  Tick();  // the pass, then the deliveries
  Tick();
  std::set<ReplicaId> ada_has, bob_has;
  EXPECT_EQ(ada.Track(ada_has), 0);
  EXPECT_EQ(bob.Track(bob_has), 0);
  EXPECT_EQ(ada_has, std::set<ReplicaId>{near});
  EXPECT_EQ(bob_has, std::set<ReplicaId>{far});
  // The replica moves by its own fields: out past the leave radius, then back within the radius.
  ASSERT_TRUE(replicas().SetFloat(near, 0, 55).ok());  // within leave_radius: stays
  Tick();
  Tick();
  EXPECT_EQ(ada.Track(ada_has), 0);
  EXPECT_EQ(ada_has, std::set<ReplicaId>{near});
  ASSERT_TRUE(replicas().SetFloat(near, 0, 61).ok());
  Tick();
  Tick();
  EXPECT_EQ(ada.Track(ada_has), 0);
  EXPECT_TRUE(ada_has.empty());
  ASSERT_TRUE(net_->grids().PlaceSession(world, ada.session(), 20, 0).ok());  // ada walks to it
  Tick();
  Tick();
  EXPECT_EQ(ada.Track(ada_has), 0);
  EXPECT_EQ(ada_has, std::set<ReplicaId>{near});
  const ReplicaStats st = replicas().stats();
  EXPECT_EQ(st.snapshots_sent, 3u);
  EXPECT_EQ(st.removes_sent, 1u);
}

// Random walks of sessions and replicas: every snapshot and remove fits what the client has, and
// after every pass each session has exactly what the grid says it sees.
TEST_F(InterestTest, ARandomWorldsClientsHoldExactlyWhatTheGridShowsThem) {
  std::mt19937 rng(5252);
  std::uniform_real_distribution<double> where(-150, 150);
  std::uniform_real_distribution<double> step(-12, 12);
  const GridId world = World(40, 48);
  std::vector<CapturePeer*> peers;
  std::vector<std::pair<double, double>> at;
  for (int i = 0; i < 24; ++i) {
    peers.push_back(&Join("p" + std::to_string(i)));
    at.emplace_back(where(rng), where(rng));
  }
  std::vector<ReplicaId> dots;
  for (int i = 0; i < 60; ++i) {
    dots.push_back(Dot(where(rng), where(rng)));
    ASSERT_TRUE(net_->grids().BindReplica(world, dots.back(), 0, 1).ok());
  }
  std::vector<std::set<ReplicaId>> held(peers.size());
  for (int round = 0; round < 40; ++round) {
    for (std::size_t p = 0; p < peers.size(); ++p) {
      at[p].first += step(rng);
      at[p].second += step(rng);
      ASSERT_TRUE(
          net_->grids().PlaceSession(world, peers[p]->session(), at[p].first, at[p].second).ok());
    }
    for (ReplicaId d : dots) {
      ASSERT_TRUE(replicas().SetFloat(d, 0, replicas().Float(d, 0).value() + step(rng)).ok());
    }
    net_->grids().PassAll();
    Tick();
    for (std::size_t p = 0; p < peers.size(); ++p) {
      ASSERT_EQ(peers[p]->Track(held[p]), 0) << "round " << round << " peer " << p;
      // What the brute force says it may hold: within 48 of it, and everything within 40.
      for (ReplicaId d : dots) {
        const double dx = replicas().Float(d, 0).value() - at[p].first;
        const double dy = replicas().Float(d, 1).value() - at[p].second;
        const double dist2 = dx * dx + dy * dy;
        if (dist2 <= 40 * 40) {
          EXPECT_TRUE(held[p].contains(d)) << "round " << round;
        } else if (dist2 > 48 * 48) {
          EXPECT_FALSE(held[p].contains(d)) << "round " << round;
        }
      }
    }
  }
  EXPECT_GT(net_->grids().stats().leaves, 0u);
}

TEST_F(InterestTest, ADestroyedGridOrReplicaOrAnEndedSessionLeavesOnce) {
  CapturePeer& ada = Join("ada");
  CapturePeer& bob = Join("bob");
  const GridId world = World(50);
  const ReplicaId a = Dot(0, 0);
  const ReplicaId b = Dot(5, 0);
  ASSERT_TRUE(net_->grids().BindReplica(world, a, 0, 1).ok());
  ASSERT_TRUE(net_->grids().BindReplica(world, b, 0, 1).ok());
  ASSERT_TRUE(net_->grids().PlaceSession(world, ada.session(), 0, 0).ok());
  ASSERT_TRUE(net_->grids().PlaceSession(world, bob.session(), 0, 0).ok());
  net_->grids().PassAll();
  Tick();
  std::set<ReplicaId> ada_has;
  EXPECT_EQ(ada.Track(ada_has), 0);
  EXPECT_EQ(ada_has.size(), 2u);
  // A destroyed replica: one Remove (its own), nothing more at the next pass.
  ASSERT_TRUE(replicas().Destroy(a).ok());
  net_->grids().PassAll();
  Tick();
  EXPECT_EQ(ada.Track(ada_has), 0);
  EXPECT_EQ(ada_has, std::set<ReplicaId>{b});
  // An ended session: no Remove for it.
  const std::uint64_t removes = replicas().stats().removes_sent;
  ASSERT_TRUE(net_->Kick(bob.session(), "bye").ok());
  net_->grids().PassAll();
  Tick();
  EXPECT_EQ(replicas().stats().removes_sent, removes);
  // The grid destroyed: ada loses what she saw through it, once.
  ASSERT_TRUE(net_->grids().Destroy(world).ok());
  EXPECT_EQ(ada.Track(ada_has), 0);
  EXPECT_TRUE(ada_has.empty());
  EXPECT_EQ(net_->grids().PlaceSession(world, ada.session(), 0, 0).message(),
            "place: grid " + std::to_string(world) + " does not exist (destroyed?)");
}

TEST_F(InterestTest, AGridRefusesWhatItCannotPlaceNamingIt) {
  GridSpec spec;
  spec.name = "world";
  EXPECT_FALSE(net_->grids().Declare(spec, &owner_).ok());  // no radius
  spec.options.radius = 10;
  spec.rate = 0;
  EXPECT_EQ(net_->grids().Declare(spec, &owner_).status().message(),
            "grid \"world\": rate 0 is out of range (0, 100] passes a second");
  const GridId world = World(10);
  EXPECT_EQ(net_->grids().BindReplica(world, Board(Audience::kAll), 0, 1).message(),
            "replica \"board\" goes to everyone; create it with the list audience to place it "
            "in grid \"world\"");
  EXPECT_EQ(net_->grids().BindReplica(world, Board(Audience::kList), 0, 1).message(),
            "replica \"board\": field \"joins\" is int, not float");
  EXPECT_EQ(net_->grids().PlaceSession(world, 999, 0, 0).message(), "session 999 is not active");
}

}  // namespace
}  // namespace molt::kernel::net
