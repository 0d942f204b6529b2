// SPDX-License-Identifier: Apache-2.0
// The ProfileStore contract (profile_store.h), one suite run against both engines: SQLite files
// (SqliteStore) and a real PostgreSQL 15 started by the test (PgStore). Leases fenced by their
// token, batches each write on its own lease, transactions all or nothing and refused as a
// replay, rotating backups, abandoned leases ended, a burst of loads, two servers on one
// database. What only one engine has (a lost PostgreSQL connection, a role without rights, a
// corrupt SQLite file) follows the suite.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernel/src/store/pg_connection.h"
#include "kernel/src/store/pg_store.h"
#include "kernel/src/store/sqlite_store.h"
#include "tests/kernel/store/store_calls.h"
#include "tests/support/postgres.h"

namespace molt::kernel::store {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

using test::BackupsNow;
using test::kInline;
using test::LoadNow;
using test::ReadNow;
using test::TransactNow;
using test::WriteNow;

// One PostgreSQL for the test program, stopped and removed at its exit; each test takes a
// database of its own.
molt::test::PostgresServer& Postgres() {
  static molt::test::PostgresServer server;
  return server;
}

class ProfileStoreTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (postgres()) {
      ASSERT_TRUE(Postgres().ok()) << Postgres().error();
      where_ = Postgres().NewDatabase();
    } else {
      dir_ = ::testing::TempDir() + "molt_profile_store_" + std::to_string(::getpid());
      fs::remove_all(dir_);
      fs::create_directories(dir_);
      where_ = dir_ + "/profiles.db";
    }
  }
  void TearDown() override {
    if (!dir_.empty()) {
      fs::remove_all(dir_);
    }
  }
  bool postgres() const { return std::string(GetParam()) == "postgres"; }

  // A store on this test's database, as one server opens it, reading the test's clock.
  std::unique_ptr<ProfileStore> Open() {
    auto now = [this] { return now_.load(); };
    if (postgres()) {
      PgOptions o;
      o.now = now;
      auto s = PgStore::Open(where_, kInline, o);
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      return s.ok() ? std::move(s).value() : nullptr;
    }
    SqliteOptions o;
    o.now = now;
    auto s = SqliteStore::Open(where_, kInline, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::string dir_;
  std::string where_;
  std::atomic<WallMillis> now_{1'800'000'000'000};
};

INSTANTIATE_TEST_SUITE_P(Engines, ProfileStoreTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return std::string(info.param); });

TEST_P(ProfileStoreTest, ALoadTakesTheLeaseAndANewKeyComesBackEmpty) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const LoadResult r = LoadNow(*store, "scores/ada", "host-a", seconds(60));
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_FALSE(r.busy());
  EXPECT_EQ(r.record.key, "scores/ada");
  EXPECT_FALSE(r.record.data.has_value());
  EXPECT_EQ(r.record.revision, 0u);
  EXPECT_EQ(r.record.lease.owner, "host-a");
  EXPECT_EQ(r.record.lease.token, 1u);
  EXPECT_EQ(r.record.lease.expires, now_ + 60'000);
  EXPECT_EQ(store->stats().loads, 1u);
}

TEST_P(ProfileStoreTest, ALeaseHeldElsewhereIsBusyUntilItExpires) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(LoadNow(*store, "scores/ada", "host-a", seconds(60)).status.ok());
  LoadResult busy = LoadNow(*store, "scores/ada", "host-b");
  EXPECT_TRUE(busy.busy());
  EXPECT_EQ(busy.status.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(busy.holder.owner, "host-a");
  EXPECT_EQ(busy.holder.token, 1u);
  EXPECT_NE(busy.status.message().find("profile \"scores/ada\" is leased by host-a until "),
            std::string::npos)
      << busy.status.message();
  EXPECT_NE(busy.status.message().find("(lease token 1): wait for its release or expiry"),
            std::string::npos);
  EXPECT_EQ(store->stats().busy, 1u);
  now_ += 60'000;  // expired: anyone may take it, with the next token
  const LoadResult taken = LoadNow(*store, "scores/ada", "host-b");
  ASSERT_TRUE(taken.status.ok()) << taken.status.ToString();
  EXPECT_EQ(taken.record.lease.owner, "host-b");
  EXPECT_EQ(taken.record.lease.token, 2u);
}

TEST_P(ProfileStoreTest, AWriteOfALostLeaseNeverOverwritesTheNewOwner) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const std::uint64_t a = LoadNow(*store, "k", "host-a", seconds(1)).record.lease.token;
  auto w = WriteNow(*store, {{.key = "k",
                              .token = a,
                              .data = R"({"gold":1})",
                              .schema_version = 2,
                              .renew_until = now_ + 1000}});
  ASSERT_TRUE(w.first.ok()) << w.first.ToString();
  EXPECT_TRUE(w.second[0].status.ok());
  EXPECT_EQ(w.second[0].revision, 1u);
  now_ += 5000;  // host-a stalled past its lease; host-b takes over and saves
  const LoadResult b = LoadNow(*store, "k", "host-b");
  ASSERT_TRUE(b.status.ok());
  EXPECT_EQ(b.record.data, R"({"gold":1})");
  EXPECT_EQ(b.record.schema_version, 2u);
  ASSERT_TRUE(
      WriteNow(*store, {{.key = "k", .token = b.record.lease.token, .data = R"({"gold":2})"}})
          .first.ok());
  // host-a wakes up and saves its old copy: refused, by its token.
  w = WriteNow(*store, {{.key = "k", .token = a, .data = R"({"gold":99})"}});
  ASSERT_TRUE(w.first.ok()) << "a stale write fails alone, never the batch";
  EXPECT_EQ(w.second[0].status.code(), Status::Code::kStale);
  EXPECT_EQ(w.second[0].status.message(),
            "profile \"k\": the lease (token 1) is no longer this host's (another host took it "
            "over, or it was released): this copy is not saved");
  Result<Record> now = ReadNow(*store, "k");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->data, R"({"gold":2})");
  EXPECT_EQ(now->revision, 2u);
  EXPECT_EQ(store->stats().stale, 1u);
}

TEST_P(ProfileStoreTest, ABatchWritesEachOnItsOwnLeaseAndAReleaseFreesTheKeyAtOnce) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const std::uint64_t a = LoadNow(*store, "a", "host-a").record.lease.token;
  const std::uint64_t b = LoadNow(*store, "b", "host-a").record.lease.token;
  auto w = WriteNow(*store, {{.key = "a", .token = a, .data = "1"},
                             {.key = "b", .token = b + 7, .data = "2"},
                             {.key = "a", .token = a, .release = true}});
  ASSERT_TRUE(w.first.ok()) << w.first.ToString();
  ASSERT_EQ(w.second.size(), 3u);
  EXPECT_TRUE(w.second[0].status.ok());
  EXPECT_EQ(w.second[1].status.code(), Status::Code::kStale);
  EXPECT_TRUE(w.second[2].status.ok());
  EXPECT_EQ(w.second[2].revision, 1u) << "a release without data is not a save";
  const LoadResult again = LoadNow(*store, "a", "host-b");
  ASSERT_TRUE(again.status.ok()) << "released: taken at once, not after the expiry";
  EXPECT_EQ(again.record.lease.token, a + 1);
  EXPECT_EQ(again.record.data, "1");
  EXPECT_EQ(store->stats().batches, 1u);
}

TEST_P(ProfileStoreTest, ATransactionIsAllOrNothingAndItsIdRefusesAReplay) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const std::uint64_t a = LoadNow(*store, "shop/ada", "host-a").record.lease.token;
  const std::uint64_t s = LoadNow(*store, "shop/#sales", "host-a").record.lease.token;
  const std::vector<Write> grant = {{.key = "shop/ada", .token = a, .data = R"({"gem":1})"},
                                    {.key = "shop/#sales", .token = s, .data = R"({"gem":1})"}};
  auto t = TransactNow(*store, "shop/ada/r1", grant);
  ASSERT_TRUE(t.first.ok()) << t.first.ToString();
  EXPECT_EQ(t.second[0].revision, 1u);
  t = TransactNow(*store, "shop/ada/r1", grant);
  EXPECT_EQ(t.first.code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(t.first.message(),
            "transaction \"shop/ada/r1\" was already committed: a replay is refused");
  EXPECT_EQ(ReadNow(*store, "shop/ada")->revision, 1u) << "the replay wrote nothing";
  // One lease lost refuses the whole transaction, naming the key; nothing of it is stored.
  t = TransactNow(*store, "shop/ada/r2",
                  {{.key = "shop/ada", .token = a, .data = R"({"gem":2})"},
                   {.key = "shop/#sales", .token = s + 9, .data = R"({"gem":2})"}});
  EXPECT_EQ(t.first.code(), Status::Code::kStale);
  EXPECT_NE(t.first.message().find("profile \"shop/#sales\""), std::string::npos);
  EXPECT_EQ(ReadNow(*store, "shop/ada")->data, R"({"gem":1})");
  // ... and its id was not recorded: sent again with the right leases, it commits.
  t = TransactNow(*store, "shop/ada/r2",
                  {{.key = "shop/ada", .token = a, .data = R"({"gem":2})"},
                   {.key = "shop/#sales", .token = s, .data = R"({"gem":2})"}});
  EXPECT_TRUE(t.first.ok()) << t.first.ToString();
}

TEST_P(ProfileStoreTest, BackupsRotateThroughThreeSlotsNewestFirstBesideTheMirror) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const std::uint64_t a = LoadNow(*store, "k", "host-a").record.lease.token;
  for (int i = 1; i <= 4; ++i) {
    now_ += 1000;
    ASSERT_TRUE(WriteNow(*store, {{.key = "k",
                                   .token = a,
                                   .data = std::to_string(i),
                                   .backup_every = 60'000,
                                   .backup_now = true,
                                   .mirror = i == 4}})
                    .first.ok());
  }
  const std::vector<Backup> b = BackupsNow(*store, "k");
  ASSERT_EQ(b.size(), 4u);  // three rotating slots and the mirror
  EXPECT_EQ(b[0].data, "4");
  EXPECT_EQ(b[1].data, "4");
  EXPECT_EQ(b[2].data, "3");
  EXPECT_EQ(b[3].data, "2") << "the oldest (1) was overwritten";
  EXPECT_TRUE(b[0].slot == kMirrorSlot || b[1].slot == kMirrorSlot);
  // Not due and not asked for: no new backup.
  ASSERT_TRUE(
      WriteNow(*store, {{.key = "k", .token = a, .data = "5", .backup_every = 60'000}}).first.ok());
  EXPECT_EQ(BackupsNow(*store, "k")[0].data, "4");
  EXPECT_TRUE(BackupsNow(*store, "none").empty());
}

TEST_P(ProfileStoreTest, AReadNeedsNoLeaseAndNamesAMissingKey) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const Result<Record> none = ReadNow(*store, "scores/nobody");
  EXPECT_EQ(none.status().code(), Status::Code::kNotFound);
  EXPECT_NE(none.status().message().find("no profile \"scores/nobody\" in "), std::string::npos);
  const std::uint64_t a = LoadNow(*store, "scores/ada", "host-a").record.lease.token;
  ASSERT_TRUE(WriteNow(*store, {{.key = "scores/ada", .token = a, .data = "{}"}}).first.ok());
  Result<Record> r = ReadNow(*store, "scores/ada");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->lease.owner, "host-a") << "a read takes nothing";
}

TEST_P(ProfileStoreTest, TheLeasesOfServersThatAreGoneEndAtOnce) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(LoadNow(*store, "a", "dead:1").status.ok());
  ASSERT_TRUE(LoadNow(*store, "b", "dead:1").status.ok());
  ASSERT_TRUE(LoadNow(*store, "c", "alive:2").status.ok());
  std::promise<Result<std::vector<std::pair<std::string, std::size_t>>>> p;
  store->ReleaseAbandoned([](const std::string& owner) { return owner == "dead:1"; },
                          [&p](auto ended) { p.set_value(std::move(ended)); });
  auto ended = p.get_future().get();
  ASSERT_TRUE(ended.ok()) << ended.status().ToString();
  ASSERT_EQ(ended->size(), 1u);
  EXPECT_EQ((*ended)[0], std::make_pair(std::string("dead:1"), std::size_t{2}));
  EXPECT_TRUE(LoadNow(*store, "a", "alive:2").status.ok());
  EXPECT_TRUE(LoadNow(*store, "c", "other:3").busy());
}

// A server the fleet lost may only have been cut off (a partition, a frozen process): once its
// leases were taken over, its late writes are refused by their old token, and nothing it writes
// reaches the profile another server now holds.
TEST_P(ProfileStoreTest, TheLateWritesOfAServerWhoseLeasesWereTakenOverAreRefused) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const LoadResult a = LoadNow(*store, "k", "lost:1");
  ASSERT_TRUE(a.status.ok());
  ASSERT_TRUE(
      WriteNow(*store, {{.key = "k", .token = a.record.lease.token, .data = "1"}}).first.ok());
  std::promise<Result<std::vector<std::pair<std::string, std::size_t>>>> p;
  store->ReleaseAbandoned([](const std::string& owner) { return owner == "lost:1"; },
                          [&p](auto ended) { p.set_value(std::move(ended)); });
  ASSERT_TRUE(p.get_future().get().ok());
  const LoadResult b = LoadNow(*store, "k", "taker:2");
  ASSERT_TRUE(b.status.ok()) << b.status.ToString();
  EXPECT_GT(b.record.lease.token, a.record.lease.token);
  ASSERT_TRUE(
      WriteNow(*store, {{.key = "k", .token = b.record.lease.token, .data = "2"}}).first.ok());
  // The cut-off server comes back and saves (and releases) with the token it had.
  const auto late = WriteNow(
      *store, {{.key = "k", .token = a.record.lease.token, .data = "stale", .release = true}});
  ASSERT_EQ(late.second.size(), 1u);
  EXPECT_EQ(late.second[0].status.code(), Status::Code::kStale) << late.second[0].status.ToString();
  Result<Record> now = ReadNow(*store, "k");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->data, "2");
  EXPECT_EQ(now->lease.owner, "taker:2");
}

TEST_P(ProfileStoreTest, ABurstOfLoadsTakesEachLeaseOnceInOrder) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(LoadNow(*store, "p/held", "someone").status.ok());
  // 600 loads queued at once: they reach the engine together.
  std::vector<std::promise<LoadResult>> done(600);
  for (std::size_t i = 0; i < done.size(); ++i) {
    const std::string key = i == 300 ? "p/held" : i == 301 ? "p/7" : "p/" + std::to_string(i);
    store->Load(key, "host-a", seconds(60),
                [&done, i](LoadResult r) { done[i].set_value(std::move(r)); });
  }
  for (std::size_t i = 0; i < done.size(); ++i) {
    const LoadResult r = done[i].get_future().get();
    if (i == 300) {
      EXPECT_TRUE(r.busy()) << "held by someone";
    } else if (i == 301) {
      EXPECT_TRUE(r.busy()) << "p/7 was taken by this burst already: one lease at a time";
    } else {
      ASSERT_TRUE(r.status.ok()) << i << ": " << r.status.ToString();
      EXPECT_EQ(r.record.lease.token, 1u);
    }
  }
  EXPECT_EQ(store->stats().loads, 601u);
}

TEST_P(ProfileStoreTest, TwoServersOnOneDatabaseNeverBothTakeAPlayer) {
  auto one = Open();
  auto two = Open();
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  for (int round = 0; round < 20; ++round) {
    const std::string key = "scores/p" + std::to_string(round);
    std::promise<LoadResult> a, b;
    one->Load(key, "server-1", seconds(60), [&a](LoadResult r) { a.set_value(std::move(r)); });
    two->Load(key, "server-2", seconds(60), [&b](LoadResult r) { b.set_value(std::move(r)); });
    const LoadResult ra = a.get_future().get();
    const LoadResult rb = b.get_future().get();
    EXPECT_NE(ra.status.ok(), rb.status.ok()) << key << ": exactly one server takes it";
    EXPECT_TRUE(ra.status.ok() || ra.busy());
    EXPECT_TRUE(rb.status.ok() || rb.busy());
  }
  // What one saves, the other loads once it is released.
  const std::uint64_t t = LoadNow(*one, "scores/moving", "server-1").record.lease.token;
  ASSERT_TRUE(
      WriteNow(*one,
               {{.key = "scores/moving", .token = t, .data = R"({"points":7})", .release = true}})
          .first.ok());
  const LoadResult moved = LoadNow(*two, "scores/moving", "server-2");
  ASSERT_TRUE(moved.status.ok()) << moved.status.ToString();
  EXPECT_EQ(moved.record.data, R"({"points":7})");
  EXPECT_EQ(moved.record.lease.token, t + 1);
}

// --- PostgreSQL alone ---------------------------------------------------------------------------

// Every path of the store finds a connection a restart broke on its first use: pg_ctl -m fast
// (the server tells its clients) or -m immediate (it tells nobody, and libpq still calls the
// connection good). The call in hand fails with an I/O error, which its caller tries again (a
// joining player waits with its profile pending), and the next call makes the connection again.
// After an immediate restart the call failed as an internal error, and joining players were
// kicked ("your tally profile could not be loaded").
class PgRestartTest : public ::testing::TestWithParam<molt::test::PostgresServer::Stopping> {
 protected:
  // `call` after a restart: OK, or an I/O error and OK the second time.
  template <class Call>
  void AfterARestart(const char* what, Call call) {
    Postgres().Restart(GetParam());
    Status first = call();
    if (!first.ok()) {
      EXPECT_EQ(first.code(), Status::Code::kIoError) << what << ": " << first.ToString();
      EXPECT_NE(first.message().find("(the connection is made again at the next call)"),
                std::string::npos)
          << what << ": " << first.ToString();
      const Status second = call();
      EXPECT_TRUE(second.ok()) << what << ": " << second.ToString();
    }
  }
};

TEST_P(PgRestartTest, EveryPathFindsABrokenConnectionAnIoErrorAndTheNextCallWorks) {
  ASSERT_TRUE(Postgres().ok()) << Postgres().error();
  auto store = PgStore::Open(Postgres().NewDatabase(), kInline);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ProfileStore& s = **store;
  const LoadResult r = LoadNow(s, "k", "host-a");
  ASSERT_TRUE(r.status.ok());
  const std::uint64_t token = r.record.lease.token;
  ASSERT_TRUE(WriteNow(s, {{.key = "k", .token = token, .data = "1"}}).first.ok());

  int burst = 0;
  AfterARestart("a burst of loads", [&] {  // three loads queued at once: one statement
    std::vector<std::promise<LoadResult>> done(3);
    for (std::size_t i = 0; i < done.size(); ++i) {
      s.Load("b" + std::to_string(burst++), "host-a", seconds(60),
             [&done, i](LoadResult l) { done[i].set_value(std::move(l)); });
    }
    Status out;
    for (auto& d : done) {
      const LoadResult l = d.get_future().get();
      out = out.ok() ? l.status : out;
    }
    return out;
  });
  AfterARestart("a save",
                [&] { return WriteNow(s, {{.key = "k", .token = token, .data = "2"}}).first; });
  const LoadResult held = LoadNow(s, "r", "host-a");
  ASSERT_TRUE(held.status.ok());
  AfterARestart("a lease released", [&] {
    return WriteNow(s, {{.key = "r", .token = held.record.lease.token, .release = true}}).first;
  });
  EXPECT_TRUE(LoadNow(s, "r", "host-b").status.ok()) << "released: another server takes it";
  AfterARestart("a read", [&] { return ReadNow(s, "k").status(); });
  EXPECT_EQ(ReadNow(s, "k")->data, "2");
}

INSTANTIATE_TEST_SUITE_P(FastOrImmediate, PgRestartTest,
                         ::testing::Values(molt::test::PostgresServer::Stopping::kFast,
                                           molt::test::PostgresServer::Stopping::kImmediate),
                         [](const auto& info) {
                           return info.param == molt::test::PostgresServer::Stopping::kFast
                                      ? "Fast"
                                      : "Immediate";
                         });

TEST(PgStoreTest, WhatCannotBeOpenedIsNamedWithItsFix) {
  ASSERT_TRUE(Postgres().ok()) << Postgres().error();
  // No server there.
  auto none = PgStore::Open("host=/nonexistent port=1 user=molt dbname=x", kInline);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Status::Code::kIoError);
  EXPECT_NE(none.status().message().find("cannot reach the profile database host=/nonexistent"),
            std::string::npos)
      << none.status().message();
  EXPECT_NE(none.status().message().find("(start PostgreSQL, or correct store.url / --database)"),
            std::string::npos);
  // A role that may not create the tables.
  const std::string url = Postgres().NewDatabase();
  const std::string db = url.substr(url.rfind('=') + 1);
  Postgres().Psql("CREATE ROLE visitor LOGIN");
  auto refused =
      PgStore::Open("host=" + Postgres().dir() + " port=" + std::to_string(Postgres().port()) +
                        " user=visitor dbname=" + db,
                    kInline);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("permission denied"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("the role visitor lacks the right: docs/fleet.md"),
            std::string::npos);
  // Tables of a newer release.
  ASSERT_TRUE(PgStore::Open(url, kInline).ok());
  Postgres().Psql("UPDATE molt_schema SET version = 99 WHERE name = 'profiles'", db);
  auto newer = PgStore::Open(url, kInline);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.status().message().find("have layout 99, newer than this build's (1)"),
            std::string::npos)
      << newer.status().message();
}

TEST(PgStoreTest, APasswordNeverReachesALogOrAnError) {
  EXPECT_EQ(PgDb::Redacted("postgresql://molt:s3cret@db.example/molt"),
            "postgresql://molt:***@db.example/molt");
  EXPECT_EQ(PgDb::Redacted("postgres://molt@db.example/molt"), "postgres://molt@db.example/molt");
  EXPECT_EQ(PgDb::Redacted("host=db user=molt password=s3cret dbname=molt"),
            "host=db user=molt password=*** dbname=molt");
  EXPECT_EQ(PgDb::Redacted("host=db password='a b' dbname=molt"),
            "host=db password=*** dbname=molt");
  EXPECT_EQ(PgDb::Redacted("/var/lib/molt/profiles.db"), "/var/lib/molt/profiles.db");
  EXPECT_TRUE(IsPostgresUrl("postgresql://h/db"));
  EXPECT_TRUE(IsPostgresUrl("host=/run/postgresql dbname=molt"));
  EXPECT_FALSE(IsPostgresUrl("/var/lib/molt/profiles.db"));
  EXPECT_FALSE(IsPostgresUrl(":memory:"));
}

// A server that does not answer is not asked again within PgConnection::kReconnectGap: every
// call in between gets the same failure at once (a server down behind TCP would hold each for
// the connect timeout). The "server" is a Unix socket that hangs up on every connection.
TEST(PgConnectionTest, AFailedConnectIsNotTriedAgainWithinTheGap) {
  const std::string dir = ::testing::TempDir() + "molt_pg_gap_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/.s.PGSQL.5999";
  ::unlink(path.c_str());
  const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 16), 0);
  std::atomic<int> tries{0};
  std::atomic<bool> stop{false};
  std::thread hangs_up([&] {
    while (!stop) {
      pollfd p{listener, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        const int fd = ::accept(listener, nullptr, nullptr);
        ++tries;  // before the hang-up the client sees
        ::close(fd);
      }
    }
  });
  PgConnection db("host=" + dir + " port=5999 dbname=none", "the test database");
  const Status first = db.Connected();
  EXPECT_EQ(first.code(), Status::Code::kIoError);
  EXPECT_EQ(tries.load(), 1);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(db.Connected().message(), first.message());
  }
  EXPECT_EQ(tries.load(), 1) << "no new try within the gap";
  std::this_thread::sleep_for(PgConnection::kReconnectGap + std::chrono::milliseconds(100));
  EXPECT_FALSE(db.Connected().ok());
  EXPECT_EQ(tries.load(), 2) << "a new try after it";
  stop = true;
  hangs_up.join();
  ::close(listener);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace molt::kernel::store
