// SPDX-License-Identifier: Apache-2.0
// The fleet's heartbeats (fleet/fleet.h) on a real PostgreSQL 15 the test starts: servers that
// report themselves into one table, listed by branch, a silent one shown as lost (never
// dropped); and a server without a fleet database, a fleet of one.
#include "kernel/src/fleet/fleet.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kernel/src/core/clock.h"
#include "tests/support/postgres.h"

namespace molt::kernel::fleet {
namespace {

using std::chrono::milliseconds;

molt::test::PostgresServer& Postgres() {
  static molt::test::PostgresServer server;
  return server;
}

std::vector<ServerReport> ListNow(Fleet& f, const std::string& branch = "") {
  std::promise<Result<std::vector<ServerReport>>> p;
  f.List(branch, [&p](Result<std::vector<ServerReport>> r) { p.set_value(std::move(r)); });
  Result<std::vector<ServerReport>> r = p.get_future().get();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<ServerReport>{};
}

ServerReport Report(const std::string& id, const std::string& branch, std::uint64_t sessions) {
  ServerReport r;
  r.id = id;
  r.branch = branch;
  r.build = "abc1234-def567";
  r.applied_seq = 7;
  r.sessions = sessions;
  r.tps = 60;
  r.address = "127.0.0.1:7777";
  r.started_ms = WallMs();
  return r;
}

TEST(FleetTest, ServersReportThemselvesAndASilentOneIsShownLost) {
  ASSERT_TRUE(Postgres().ok()) << Postgres().error();
  const std::string url = Postgres().NewDatabase();
  Fleet a(url, milliseconds(100));
  Fleet b(url, milliseconds(100));
  ASSERT_TRUE(a.Open().ok());
  ASSERT_TRUE(b.Open().ok());
  EXPECT_TRUE(a.shared());
  a.Beat(Report("eu-1", "prod", 12));
  b.Beat(Report("eu-2", "canary", 3));
  std::vector<ServerReport> all;
  for (int i = 0; i < 100 && all.size() < 2; ++i) {  // the heartbeats are written off this thread
    all = ListNow(a);
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, "eu-1");
  EXPECT_EQ(all[0].branch, "prod");
  EXPECT_EQ(all[0].build, "abc1234-def567");
  EXPECT_EQ(all[0].applied_seq, 7u);
  EXPECT_EQ(all[0].sessions, 12u);
  EXPECT_EQ(all[0].tps, 60);
  EXPECT_EQ(all[0].state, "live");
  EXPECT_EQ(all[0].interval_ms, 100);
  EXPECT_GT(all[0].last_seen_ms, 0);
  EXPECT_EQ(all[1].id, "eu-2");
  const std::vector<ServerReport> canary = ListNow(b, "canary");
  ASSERT_EQ(canary.size(), 1u);
  EXPECT_EQ(canary[0].id, "eu-2");
  // eu-2 goes quiet; eu-1 keeps beating: past three intervals eu-2 is lost, still listed.
  const auto until = std::chrono::steady_clock::now() + milliseconds(5000);
  std::string state;
  while (state != "lost" && std::chrono::steady_clock::now() < until) {
    a.Beat(Report("eu-1", "prod", 12));
    std::this_thread::sleep_for(milliseconds(50));
    all = ListNow(a);
    state = all.size() == 2 ? all[1].state : "";
  }
  EXPECT_EQ(state, "lost");
  EXPECT_EQ(all[0].state, "live");
  // A report that says it is closing.
  ServerReport closing = Report("eu-1", "prod", 12);
  closing.state = "draining";
  a.Beat(closing);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(ListNow(b, "prod")[0].state, "draining");
}

// Heartbeats go on across a restart (pg_ctl -m fast, or -m immediate, which tells no client):
// the beat that finds the connection broken is tried again, and the server reads live.
TEST(FleetTest, HeartbeatsGoOnAcrossARestart) {
  ASSERT_TRUE(Postgres().ok()) << Postgres().error();
  Fleet a(Postgres().NewDatabase(), milliseconds(100));
  ASSERT_TRUE(a.Open().ok());
  for (const auto how : {molt::test::PostgresServer::Stopping::kFast,
                         molt::test::PostgresServer::Stopping::kImmediate}) {
    Postgres().Restart(how);
    std::vector<ServerReport> all;
    const auto until = std::chrono::steady_clock::now() + milliseconds(10000);
    for (std::uint64_t n = 100; std::chrono::steady_clock::now() < until; ++n) {
      a.Beat(Report("eu-1", "prod", n));
      std::this_thread::sleep_for(milliseconds(50));
      std::promise<Result<std::vector<ServerReport>>> p;  // a read may meet the broken connection
      a.List("", [&p](Result<std::vector<ServerReport>> r) { p.set_value(std::move(r)); });
      Result<std::vector<ServerReport>> r = p.get_future().get();
      if (!r.ok()) {
        EXPECT_EQ(r.status().code(), Status::Code::kIoError) << r.status().ToString();
        continue;
      }
      all = *r;
      if (all.size() == 1 && all[0].sessions == n) {
        break;
      }
    }
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].state, "live");
  }
}

// Each heartbeat carries its server's lease owner; the owners of the lost servers, this server
// left out, are the leases another server may take over.
TEST(FleetTest, TheLostServersLeaseOwnersAreTheOnesToTakeOver) {
  ASSERT_TRUE(Postgres().ok()) << Postgres().error();
  Fleet a(Postgres().NewDatabase(), milliseconds(100));
  ASSERT_TRUE(a.Open().ok());
  ServerReport r = Report("eu-1", "prod", 1);
  r.lease_owner = "vm:42:1700";
  a.Beat(r);
  std::vector<ServerReport> all;
  for (int i = 0; i < 100 && all.empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    all = ListNow(a);
  }
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].lease_owner, "vm:42:1700");

  auto server = [](std::string id, std::string state, std::string owner) {
    ServerReport s;
    s.id = std::move(id);
    s.state = std::move(state);
    s.lease_owner = std::move(owner);
    return s;
  };
  const std::vector<ServerReport> fleet = {
      server("a", "lost", "vm:1:1"), server("b", "live", "vm:2:2"),
      server("c", "draining", "vm:3:3"), server("d", "lost", ""),  // an older build's
      server("self", "lost", "vm:9:9")};
  EXPECT_EQ(LostLeaseOwners(fleet, "self"), std::set<std::string>{"vm:1:1"});
}

TEST(FleetTest, AServerWithoutAFleetDatabaseIsAFleetOfOne) {
  Fleet alone("", std::chrono::seconds(2));
  ASSERT_TRUE(alone.Open().ok());
  EXPECT_FALSE(alone.shared());
  EXPECT_TRUE(ListNow(alone).empty()) << "nothing reported yet";
  alone.Beat(Report("solo", "prod", 1));
  const std::vector<ServerReport> list = ListNow(alone);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].id, "solo");
  EXPECT_EQ(list[0].state, "live");
  EXPECT_TRUE(ListNow(alone, "dev").empty());
}

TEST(FleetTest, ALateHeartbeatReadsAsLostAfterThreeIntervals) {
  ServerReport r;
  r.interval_ms = 2000;
  r.last_seen_ms = 10'000;
  r.state = "live";
  EXPECT_EQ(Fleet::StateAt(r, 10'000 + 6000), "live");
  EXPECT_EQ(Fleet::StateAt(r, 10'000 + 6001), "lost");
  r.state = "draining";
  EXPECT_EQ(Fleet::StateAt(r, 11'000), "draining");
}

TEST(FleetTest, TablesOfANewerReleaseAreRefusedByName) {
  ASSERT_TRUE(Postgres().ok()) << Postgres().error();
  const std::string url = Postgres().NewDatabase();
  const std::string db = url.substr(url.rfind("dbname=") + 7);
  ASSERT_TRUE(Fleet(url, std::chrono::seconds(2)).Open().ok());
  Postgres().Psql("UPDATE molt_schema SET version = 99 WHERE name = 'servers'", db);
  const Status s = Fleet(url, std::chrono::seconds(2)).Open();
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("the fleet's tables in host="), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("have layout 99, newer than this build's (1): run the Molt release"),
            std::string::npos)
      << s.message();
}

TEST(FleetTest, ADrainAskedThroughTheFleetIsHeardOnceByItsServer) {
  ASSERT_TRUE(Postgres().ok()) << Postgres().error();
  const std::string url = Postgres().NewDatabase();
  const std::string db = url.substr(url.rfind("dbname=") + 7);
  Fleet a(url, milliseconds(100));
  Fleet b(url, milliseconds(100));
  ASSERT_TRUE(a.Open().ok());
  ASSERT_TRUE(b.Open().ok());
  auto ask = [&](const std::string& id, double deadline) {
    std::promise<Status> p;
    b.RequestDrain(id, deadline, [&p](Status s) { p.set_value(s); });
    return p.get_future().get();
  };
  // Asked while no process with that id listened (it was down): dropped when it starts, never
  // run later by surprise.
  ASSERT_TRUE(ask("eu-1", 5).ok());
  std::this_thread::sleep_for(milliseconds(5));
  std::mutex mu;
  std::vector<double> heard;
  a.WatchDrains("eu-1", [&](double deadline) {
    std::lock_guard lock(mu);
    heard.push_back(deadline);
  });
  auto heard_now = [&] {
    std::lock_guard lock(mu);
    return heard;
  };
  std::this_thread::sleep_for(milliseconds(400));  // four polls
  EXPECT_TRUE(heard_now().empty());
  EXPECT_EQ(Postgres().Psql("SELECT count(*) FROM molt_drains", db), "0\n") << "taken and dropped";
  // Asked now: heard once, with its deadline; a drain of another server is not this one's.
  ASSERT_TRUE(ask("eu-2", 1).ok());
  ASSERT_TRUE(ask("eu-1", 30).ok());
  for (int i = 0; i < 100 && heard_now().empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  std::this_thread::sleep_for(milliseconds(300));  // more polls and wakes: still once
  EXPECT_EQ(heard_now(), std::vector<double>{30});
  // A row written without NOTIFY (by hand) is found by the next poll.
  Postgres().Psql(
      "INSERT INTO molt_drains VALUES ('eu-1', 0, (extract(epoch FROM now()) * 1000)::bigint)", db);
  for (int i = 0; i < 100 && heard_now().size() < 2; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(heard_now(), (std::vector<double>{30, 0}));
  // The heartbeat carries the WebSocket address.
  ServerReport r = Report("eu-1", "prod", 1);
  r.websocket_address = "127.0.0.1:7780";
  a.Beat(r);
  std::vector<ServerReport> list;
  for (int i = 0; i < 100 && list.empty(); ++i) {
    list = ListNow(b, "prod");
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].websocket_address, "127.0.0.1:7780");
}

TEST(FleetTest, AServerAloneCannotAskAnotherToDrain) {
  Fleet alone("", std::chrono::seconds(2));
  ASSERT_TRUE(alone.Open().ok());
  std::promise<Status> p;
  alone.RequestDrain("eu-2", 0, [&p](Status s) { p.set_value(s); });
  const Status s = p.get_future().get();
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "this server keeps no fleet database: only it can drain (molt drain with its own id)");
}

TEST(FleetTest, AFleetDatabaseThatCannotBeReachedIsNamed) {
  Fleet f("host=/nonexistent port=1 user=molt dbname=x", std::chrono::seconds(2));
  const Status s = f.Open();
  EXPECT_EQ(s.code(), Status::Code::kIoError);
  EXPECT_NE(s.message().find("cannot reach the fleet database host=/nonexistent"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace molt::kernel::fleet
