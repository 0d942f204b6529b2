// SPDX-License-Identifier: Apache-2.0
// SqliteStore (kernel/src/store/sqlite_store.h) on real database files: leases and their fencing,
// batches, a full "disk" (a page cap), files that are not databases, two stores on one file,
// the sqlite3 command-line tool reading the data, and a child process killed with SIGKILL in the
// middle of its saves.
#include "kernel/src/store/sqlite_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <thread>

#include "kernel/src/store/profile_registry.h"
#include "tests/support/child_process.h"

namespace molt::kernel::store {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Completions run on the store's thread; each helper waits for its own.
const ProfileStore::Deliver kInline = [](std::function<void()> fn) { fn(); };

LoadResult LoadNow(ProfileStore& s, const std::string& key, const std::string& owner,
                   milliseconds ttl = seconds(180)) {
  std::promise<LoadResult> p;
  s.Load(key, owner, ttl, [&p](LoadResult r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

std::pair<Status, std::vector<WriteResult>> WriteNow(ProfileStore& s, std::vector<Write> batch) {
  std::promise<std::pair<Status, std::vector<WriteResult>>> p;
  s.Write(std::move(batch), [&p](Status st, std::vector<WriteResult> r) {
    p.set_value({std::move(st), std::move(r)});
  });
  return p.get_future().get();
}

Result<Record> ReadNow(ProfileStore& s, const std::string& key) {
  std::promise<Result<Record>> p;
  s.Read(key, [&p](Result<Record> r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

std::vector<Backup> BackupsNow(ProfileStore& s, const std::string& key) {
  std::promise<Result<std::vector<Backup>>> p;
  s.ListBackups(key, [&p](Result<std::vector<Backup>> r) { p.set_value(std::move(r)); });
  Result<std::vector<Backup>> r = p.get_future().get();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<Backup>{};
}

std::pair<Status, std::vector<WriteResult>> TransactNow(ProfileStore& s, const std::string& id,
                                                        std::vector<Write> batch) {
  std::promise<std::pair<Status, std::vector<WriteResult>>> p;
  s.Transact(id, std::move(batch), [&p](Status st, std::vector<WriteResult> r) {
    p.set_value({std::move(st), std::move(r)});
  });
  return p.get_future().get();
}

using molt::test::Shell;

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_store_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ + "/profiles.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<SqliteStore> Open(SqliteOptions o = {}) {
    o.now = [this] { return now_.load(); };
    auto s = SqliteStore::Open(path_, kInline, std::move(o));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::string dir_;
  std::string path_;
  std::atomic<WallMillis> now_{1'780'000'000'000};  // 2026-05-28
};

TEST_F(SqliteStoreTest, ALoadTakesTheLeaseAndANewKeyComesBackWithNoDocument) {
  auto store = Open();
  LoadResult r = LoadNow(*store, "user:1", "host-a", seconds(180));
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_FALSE(r.busy());
  EXPECT_EQ(r.record.key, "user:1");
  EXPECT_FALSE(r.record.data.has_value());
  EXPECT_EQ(r.record.revision, 0u);
  EXPECT_EQ(r.record.lease.owner, "host-a");
  EXPECT_EQ(r.record.lease.token, 1u);
  EXPECT_EQ(r.record.lease.expires, now_ + 180'000);
  EXPECT_EQ(store->stats().loads, 1u);
}

TEST_F(SqliteStoreTest, SavesBumpTheRevisionAndAReloadSeesTheDocument) {
  auto store = Open();
  const std::uint64_t token = LoadNow(*store, "user:1", "host-a").record.lease.token;
  for (int i = 1; i <= 3; ++i) {
    auto [s, each] = WriteNow(*store, {{.key = "user:1",
                                        .token = token,
                                        .data = "{\"coins\":" + std::to_string(i) + "}",
                                        .schema_version = 2}});
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(each[0].status.ok()) << each[0].status.ToString();
    EXPECT_EQ(each[0].revision, static_cast<std::uint64_t>(i));
  }
  ASSERT_TRUE(WriteNow(*store, {{.key = "user:1", .token = token, .release = true}}).first.ok());
  LoadResult again = LoadNow(*store, "user:1", "host-a");
  ASSERT_TRUE(again.status.ok());
  EXPECT_EQ(again.record.data, "{\"coins\":3}");
  EXPECT_EQ(again.record.schema_version, 2u);
  EXPECT_EQ(again.record.revision, 3u);
  EXPECT_EQ(again.record.lease.token, 2u);  // every acquisition is a new token
}

TEST_F(SqliteStoreTest, AnUnexpiredLeaseIsBusyNamingTheHolderAndUntilWhen) {
  auto store = Open();
  ASSERT_TRUE(LoadNow(*store, "user:1", "host-a", seconds(60)).status.ok());
  LoadResult b = LoadNow(*store, "user:1", "host-b");
  EXPECT_TRUE(b.busy());
  EXPECT_EQ(b.status.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(b.holder.owner, "host-a");
  EXPECT_EQ(b.holder.token, 1u);
  EXPECT_EQ(b.status.message(),
            "profile \"user:1\" is leased by host-a until 2026-05-28T20:27:40.000Z (lease token "
            "1): wait for its release or expiry, then load it again");
  // The same owner too: a rejoin waits for its own final save.
  EXPECT_TRUE(LoadNow(*store, "user:1", "host-a").busy());
  EXPECT_EQ(store->stats().busy, 2u);
  now_ += 60'000;  // expired: taken over
  LoadResult later = LoadNow(*store, "user:1", "host-b");
  ASSERT_TRUE(later.status.ok()) << later.status.ToString();
  EXPECT_EQ(later.record.lease.token, 2u);
}

// Fencing: once another host took the lease over, the old holder can never write again.
TEST_F(SqliteStoreTest, AHostThatLostItsLeaseCanNeverOverwriteTheNewOwner) {
  auto store = Open();
  const std::uint64_t a = LoadNow(*store, "user:1", "host-a", seconds(10)).record.lease.token;
  ASSERT_TRUE(
      WriteNow(*store, {{.key = "user:1", .token = a, .data = "{\"v\":\"a1\"}"}}).first.ok());
  now_ += 10'001;
  LoadResult b = LoadNow(*store, "user:1", "host-b", seconds(180));
  ASSERT_TRUE(b.status.ok());
  EXPECT_EQ(b.record.data, "{\"v\":\"a1\"}");
  ASSERT_TRUE(
      WriteNow(*store, {{.key = "user:1", .token = b.record.lease.token, .data = "{\"v\":\"b1\"}"}})
          .first.ok());
  // host-a wakes up: its save and its renewal are refused, and say why.
  auto [batch, each] = WriteNow(*store, {{.key = "user:1", .token = a, .data = "{\"v\":\"a2\"}"},
                                         {.key = "user:1", .token = a, .renew_until = now_ + 1}});
  EXPECT_TRUE(batch.ok());
  ASSERT_EQ(each.size(), 2u);
  EXPECT_EQ(each[0].status.code(), Status::Code::kStale);
  EXPECT_EQ(each[0].status.message(),
            "profile \"user:1\": the lease (token 1) is no longer this host's (another host took "
            "it over, or it was released): this copy is not saved");
  EXPECT_EQ(each[1].status.code(), Status::Code::kStale);
  Result<Record> now = ReadNow(*store, "user:1");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->data, "{\"v\":\"b1\"}");
  EXPECT_EQ(now->revision, 2u);
  EXPECT_EQ(now->lease.owner, "host-b");
  EXPECT_EQ(store->stats().stale, 2u);
}

TEST_F(SqliteStoreTest, ABatchCommitsTogetherEachWriteOnItsOwnLease) {
  auto store = Open();
  const std::uint64_t t1 = LoadNow(*store, "k1", "h").record.lease.token;
  const std::uint64_t t2 = LoadNow(*store, "k2", "h").record.lease.token;
  auto [batch, each] = WriteNow(*store, {{.key = "k1", .token = t1, .data = "{}"},
                                         {.key = "k2", .token = t2 + 5, .data = "{}"},
                                         {.key = "k3", .token = 1, .data = "{}"},
                                         {.key = "k2", .token = t2, .data = "[1]"}});
  ASSERT_TRUE(batch.ok()) << batch.ToString();
  ASSERT_EQ(each.size(), 4u);
  EXPECT_TRUE(each[0].status.ok());
  EXPECT_EQ(each[1].status.code(), Status::Code::kStale);
  EXPECT_EQ(each[2].status.code(), Status::Code::kStale);  // never loaded: no lease
  EXPECT_TRUE(each[3].status.ok());
  EXPECT_EQ(ReadNow(*store, "k2")->data, "[1]");
  EXPECT_EQ(ReadNow(*store, "k3").status().code(), Status::Code::kNotFound);
  EXPECT_EQ(store->stats().batches, 1u);
  EXPECT_EQ(store->stats().writes, 2u);
  // Every load and batch lands in one latency bucket, the sum is their time.
  auto total = [](const StoreLatency& l) {
    std::uint64_t n = 0;
    for (std::uint64_t c : l.counts) {
      n += c;
    }
    return n;
  };
  const StoreStats st = store->stats();
  EXPECT_EQ(total(st.load_latency), 2u);
  EXPECT_EQ(total(st.write_latency), 1u);
  EXPECT_GT(st.load_latency.sum_seconds, 0);
  EXPECT_GT(st.write_latency.sum_seconds, 0);
}

TEST_F(SqliteStoreTest, RenewalsExtendTheLeaseAndAReleaseEndsIt) {
  auto store = Open();
  const std::uint64_t t = LoadNow(*store, "k", "h", seconds(10)).record.lease.token;
  ASSERT_TRUE(WriteNow(*store, {{.key = "k", .token = t, .renew_until = now_ + 100'000}})
                  .second[0]
                  .status.ok());
  now_ += 50'000;  // past the first expiry, within the renewal
  EXPECT_TRUE(LoadNow(*store, "k", "other").busy());
  Result<Record> r = ReadNow(*store, "k");
  EXPECT_EQ(r->revision, 0u);  // a renewal is not a save
  ASSERT_TRUE(WriteNow(*store, {{.key = "k", .token = t, .release = true}}).second[0].status.ok());
  EXPECT_EQ(ReadNow(*store, "k")->lease.owner, "");
  // Released is released: the old token writes nothing more.
  EXPECT_EQ(WriteNow(*store, {{.key = "k", .token = t, .data = "{}"}}).second[0].status.code(),
            Status::Code::kStale);
  EXPECT_TRUE(LoadNow(*store, "k", "other").status.ok());
}

// A full disk (here a page cap on the file) fails the whole batch with a clear error; what was
// stored before is intact, and the same writes succeed once there is room again.
TEST_F(SqliteStoreTest, AFullDiskFailsTheBatchClearlyAndLosesNothingStored) {
  auto store = Open();
  const std::uint64_t t = LoadNow(*store, "k", "h").record.lease.token;
  ASSERT_TRUE(WriteNow(*store, {{.key = "k", .token = t, .data = "{\"v\":1}"}}).first.ok());
  const std::string big = "{\"blob\":\"" + std::string(256 * 1024, 'x') + "\"}";
  store->SetMaxPageCount(40);  // far below what the blob needs
  auto [batch, each] = WriteNow(*store, {{.key = "k", .token = t, .data = big}});
  EXPECT_EQ(batch.code(), Status::Code::kIoError);
  EXPECT_NE(batch.message().find("database or disk is full"), std::string::npos) << batch.message();
  EXPECT_NE(batch.message().find("free space on the profile database's disk"), std::string::npos);
  ASSERT_EQ(each.size(), 1u);
  EXPECT_EQ(each[0].status.code(), Status::Code::kIoError);
  EXPECT_EQ(ReadNow(*store, "k")->data, "{\"v\":1}");
  EXPECT_EQ(store->stats().failures, 1u);
  store->SetMaxPageCount(0);
  auto retry = WriteNow(*store, {{.key = "k", .token = t, .data = big}});
  ASSERT_TRUE(retry.first.ok()) << retry.first.ToString();
  EXPECT_EQ(retry.second[0].revision, 2u);
}

TEST_F(SqliteStoreTest, AFileThatIsNotADatabaseIsRefusedNamingItAndTheFix) {
  std::ofstream(path_) << std::string(8192, 'z');
  auto s = SqliteStore::Open(path_, kInline);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(
      s.status().message(),
      "the profile database \"" + path_ +
          "\" cannot be read: file is not a database: move it aside (restore a backup of "
          "it, or let Molt create a new one) or point profiles.database or --data at another file");
}

TEST_F(SqliteStoreTest, AMissingDirectoryOrANewerLayoutIsRefusedWithTheFix) {
  auto missing = SqliteStore::Open(dir_ + "/nope/profiles.db", kInline);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "cannot open the profile database \"" + dir_ +
                                            "/nope/profiles.db\": the directory " + dir_ +
                                            "/nope does not exist (create it, or point "
                                            "profiles.database or --data at one that does)");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=7", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto newer = SqliteStore::Open(path_, kInline);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.status().message().find("has layout 7, newer than this build's (2)"),
            std::string::npos)
      << newer.status().message();
}

// Two stores on one file (two hosts, or two moltd processes on one disk) share the leases.
TEST_F(SqliteStoreTest, TwoStoresOnOneFileShareTheLeases) {
  auto a = Open();
  auto b = Open();
  const std::uint64_t t = LoadNow(*a, "user:1", "host-a", seconds(30)).record.lease.token;
  ASSERT_TRUE(WriteNow(*a, {{.key = "user:1", .token = t, .data = "{\"from\":\"a\"}"}}).first.ok());
  LoadResult busy = LoadNow(*b, "user:1", "host-b");
  EXPECT_TRUE(busy.busy());
  EXPECT_EQ(busy.holder.owner, "host-a");
  ASSERT_TRUE(WriteNow(*a, {{.key = "user:1", .token = t, .release = true}}).first.ok());
  LoadResult taken = LoadNow(*b, "user:1", "host-b");
  ASSERT_TRUE(taken.status.ok());
  EXPECT_EQ(taken.record.data, "{\"from\":\"a\"}");
}

TEST_F(SqliteStoreTest, TheLeasesOfAServerThatIsGoneAreEndedAtOnce) {
  auto store = Open();
  const std::uint64_t dead =
      LoadNow(*store, "user:1", "host-a:111:1").record.lease.token;  // a killed server's
  (void)LoadNow(*store, "user:2", "host-a:111:1");
  (void)LoadNow(*store, "user:3", "host-b:222:1");  // alive
  std::promise<Result<std::vector<std::pair<std::string, std::size_t>>>> p;
  store->ReleaseAbandoned([](const std::string& owner) { return owner == "host-a:111:1"; },
                          [&p](auto r) { p.set_value(std::move(r)); });
  auto ended = p.get_future().get();
  ASSERT_TRUE(ended.ok()) << ended.status().ToString();
  ASSERT_EQ(ended->size(), 1u);
  EXPECT_EQ((*ended)[0], std::make_pair(std::string("host-a:111:1"), std::size_t{2}));
  LoadResult again = LoadNow(*store, "user:1", "host-c");
  ASSERT_TRUE(again.status.ok()) << again.status.ToString();  // no wait for the expiry
  EXPECT_GT(again.record.lease.token, dead);
  EXPECT_TRUE(LoadNow(*store, "user:3", "host-c").busy());
  // The ended holder is fenced: its writes are refused.
  auto stale = WriteNow(*store, {{.key = "user:1", .token = dead, .data = "{}"}});
  ASSERT_TRUE(stale.first.ok());
  EXPECT_EQ(stale.second[0].status.code(), Status::Code::kStale);
}

TEST(HostIdTest, NamesThisProcessAndTellsAServerOfThisHostThatIsGone) {
  const std::string me = HostId();
  EXPECT_EQ(me.substr(me.find(':') + 1, std::to_string(::getpid()).size() + 1),
            std::to_string(::getpid()) + ":");
  EXPECT_FALSE(GoneFromThisHost(me)) << "this process is alive";
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);  // reaped: the pid no longer exists
  const std::string host = me.substr(0, me.find(':'));
  EXPECT_TRUE(GoneFromThisHost(host + ":" + std::to_string(child) + ":1"));
  EXPECT_FALSE(GoneFromThisHost("elsewhere:" + std::to_string(child) + ":1"));
  EXPECT_FALSE(GoneFromThisHost(host + ":1:1")) << "init is alive";
  EXPECT_FALSE(GoneFromThisHost("not an owner"));
}

TEST_F(SqliteStoreTest, BackupsRotateThroughThreeSlotsOnTheScheduleInTheRow) {
  auto store = Open();
  const std::uint64_t t = LoadNow(*store, "user:1", "host-a").record.lease.token;
  auto save = [&](const char* doc, bool now = false) {
    auto r = WriteNow(*store, {{.key = "user:1",
                                .token = t,
                                .data = doc,
                                .schema_version = 2,
                                .backup_every = 1000,
                                .backup_now = now}});
    ASSERT_TRUE(r.first.ok()) << r.first.ToString();
  };
  save(R"({"v":1})");  // never backed up: due
  save(R"({"v":2})");  // the next is due in 1 s
  ASSERT_EQ(BackupsNow(*store, "user:1").size(), 1u);
  now_ += 1000;
  save(R"({"v":3})");
  now_ += 1000;
  save(R"({"v":4})");
  now_ += 1000;
  save(R"({"v":5})");  // the oldest slot (v1's) is reused
  std::vector<Backup> b = BackupsNow(*store, "user:1");
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].data, R"({"v":5})");
  EXPECT_EQ(b[0].revision, 5u);
  EXPECT_EQ(b[0].schema_version, 2u);
  EXPECT_EQ(b[1].data, R"({"v":4})");
  EXPECT_EQ(b[2].data, R"({"v":3})");
  EXPECT_EQ(b[0].slot, 0);
  save(R"({"v":6})", /*now=*/true);  // backupNow: not due, taken anyway
  EXPECT_EQ(BackupsNow(*store, "user:1")[0].data, R"({"v":6})");
  // Without backup_every nothing is copied; a mirror copies every save to its own slot.
  ASSERT_TRUE(
      WriteNow(*store, {{.key = "user:1", .token = t, .data = R"({"v":7})", .mirror = true}})
          .first.ok());
  b = BackupsNow(*store, "user:1");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].slot, kMirrorSlot);
  EXPECT_EQ(b[0].data, R"({"v":7})");
  EXPECT_EQ(b[1].data, R"({"v":6})");
  EXPECT_TRUE(BackupsNow(*store, "user:2").empty());
}

TEST_F(SqliteStoreTest, ATransactionCommitsBothOrNeitherAndRefusesAReplay) {
  auto store = Open();
  const std::uint64_t a = LoadNow(*store, "user:a", "host-a").record.lease.token;
  const std::uint64_t b = LoadNow(*store, "user:b", "host-a").record.lease.token;
  auto both = [&](const char* da, const char* db, std::uint64_t tb) {
    return std::vector<Write>{{.key = "user:a", .token = a, .data = da},
                              {.key = "user:b", .token = tb, .data = db}};
  };
  auto r = TransactNow(*store, "trade-1", both(R"({"gold":5})", R"({"gold":15})", b));
  ASSERT_TRUE(r.first.ok()) << r.first.ToString();
  EXPECT_EQ(ReadNow(*store, "user:b")->data, R"({"gold":15})");
  r = TransactNow(*store, "trade-1", both(R"({"gold":0})", R"({"gold":20})", b));
  EXPECT_EQ(r.first.code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(r.first.message(),
            "transaction \"trade-1\" was already committed: a replay is refused");
  // B's lease lost: A's write is rolled back with it.
  r = TransactNow(*store, "trade-2", both(R"({"gold":1})", R"({"gold":19})", b + 7));
  EXPECT_EQ(r.first.code(), Status::Code::kStale);
  EXPECT_NE(r.first.message().find("profile \"user:b\""), std::string::npos) << r.first.message();
  EXPECT_EQ(ReadNow(*store, "user:a")->data, R"({"gold":5})");
  EXPECT_EQ(ReadNow(*store, "user:a")->revision, 1u);
  // A refused transaction's id is not recorded: it can be tried again.
  r = TransactNow(*store, "trade-2", both(R"({"gold":1})", R"({"gold":19})", b));
  EXPECT_TRUE(r.first.ok()) << r.first.ToString();
}

TEST_F(SqliteStoreTest, ADatabaseOfLayoutOneIsUpgradedInPlace) {
  ASSERT_EQ(Shell("sqlite3 " + path_ +
                  " \"CREATE TABLE profiles (key TEXT PRIMARY KEY NOT NULL, data TEXT, "
                  "schema_version INTEGER NOT NULL DEFAULT 0, revision INTEGER NOT NULL DEFAULT 0, "
                  "lease_owner TEXT, lease_token INTEGER NOT NULL DEFAULT 0, lease_expires_ms "
                  "INTEGER NOT NULL DEFAULT 0, updated_ms INTEGER NOT NULL DEFAULT 0); INSERT INTO "
                  "profiles (key, data, revision) VALUES ('user:1', '{}', 4); PRAGMA "
                  "user_version=1;\" 2>&1"),
            "");
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const LoadResult r = LoadNow(*store, "user:1", "host-a");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.record.revision, 4u);
  ASSERT_TRUE(
      WriteNow(
          *store,
          {{.key = "user:1", .token = r.record.lease.token, .data = "{}", .backup_every = 1000}})
          .first.ok());
  EXPECT_EQ(BackupsNow(*store, "user:1").size(), 1u);
  EXPECT_EQ(Shell("sqlite3 " + path_ + " 'PRAGMA user_version'"), "2\n");
}

// The documents are plain JSON text: an operator reads them with the sqlite3 tool.
TEST_F(SqliteStoreTest, TheDataIsReadableWithTheSqliteCommandLineTool) {
  auto store = Open();
  const std::uint64_t t = LoadNow(*store, "user:7", "host-a").record.lease.token;
  ASSERT_TRUE(WriteNow(*store, {{.key = "user:7",
                                 .token = t,
                                 .data = "{\"coins\":42,\"name\":\"ada\"}",
                                 .schema_version = 3}})
                  .first.ok());
  EXPECT_EQ(Shell("sqlite3 " + path_ +
                  " \"SELECT key, json_extract(data, '$.coins'), schema_version, revision, "
                  "lease_owner FROM profiles\""),
            "user:7|42|3|1|host-a\n");
}

// Completions never run inside the call, and the SQLite work is on the store's own thread.
TEST_F(SqliteStoreTest, CompletionsComeThroughDeliverAndTheWorkRunsOffTheCallingThread) {
  std::mutex mu;
  std::vector<std::function<void()>> delivered;
  std::atomic<bool> clock_on_caller{false};
  const std::thread::id caller = std::this_thread::get_id();
  SqliteOptions o;
  o.now = [&] {
    if (std::this_thread::get_id() == caller) {
      clock_on_caller = true;
    }
    return now_.load();
  };
  auto s = SqliteStore::Open(
      path_,
      [&](std::function<void()> fn) {
        std::lock_guard lock(mu);
        delivered.push_back(std::move(fn));
      },
      o);
  ASSERT_TRUE(s.ok());
  bool done = false;
  (*s)->Load("k", "h", seconds(1), [&](LoadResult r) { done = r.status.ok(); });
  EXPECT_FALSE(done);
  for (int i = 0; i < 500; ++i) {
    std::lock_guard lock(mu);
    if (!delivered.empty()) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  std::vector<std::function<void()>> run;
  {
    std::lock_guard lock(mu);
    run.swap(delivered);
  }
  ASSERT_EQ(run.size(), 1u);
  EXPECT_FALSE(done);
  run[0]();
  EXPECT_TRUE(done);
  EXPECT_FALSE(clock_on_caller);
}

// kill -9 in the middle of save bursts, repeatedly: the file opens clean and every batch the
// child saw acknowledged is stored at (at least) its revision.
TEST_F(SqliteStoreTest, AKillDashNineMidSaveLosesNoAcknowledgedWrite) {
  std::mt19937 rng(12345);
  std::uint64_t previous = 0;
  for (int round = 0; round < 8; ++round) {
    const int batch = round % 2 == 0 ? 1 : 50;
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      ::execl(MOLT_STORE_CRASH_CHILD, MOLT_STORE_CRASH_CHILD, path_.c_str(),
              std::to_string(batch).c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    FILE* from = ::fdopen(out[0], "r");
    char line[64];
    ASSERT_NE(std::fgets(line, sizeof line, from), nullptr);
    ASSERT_STREQ(line, "ready\n");
    ASSERT_NE(std::fgets(line, sizeof line, from), nullptr);  // saving: the first batch is in
    ASSERT_STREQ(line, "ack 1\n");
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(5, 100)(rng)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    unsigned long long acked = 1;
    while (std::fgets(line, sizeof line, from) != nullptr) {
      std::sscanf(line, "ack %llu", &acked);
    }
    std::fclose(from);
    ASSERT_GT(acked, 0u) << "round " << round << ": the child acknowledged nothing";

    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string check;
    sqlite3_exec(
        db, "PRAGMA integrity_check",
        [](void* ud, int, char** v, char**) {
          *static_cast<std::string*>(ud) += v[0];
          return 0;
        },
        &check, nullptr);
    sqlite3_close(db);
    EXPECT_EQ(check, "ok") << "round " << round;

    auto store = SqliteStore::Open(path_, kInline);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (int k = 0; k < batch; ++k) {
      Result<Record> r = ReadNow(**store, "crash:" + std::to_string(k));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const std::string& data = *r->data;
      const unsigned long long n = std::stoull(data.substr(5, data.find(',') - 5));
      EXPECT_GE(n, acked) << "round " << round << " key " << k;
      if (k == 0) {
        EXPECT_GE(r->revision, previous + acked);
        previous = r->revision;
      }
    }
    // The next round's child takes the leases over (the killed one never released them).
    sqlite3_open(path_.c_str(), &db);
    sqlite3_exec(db, "UPDATE profiles SET lease_owner = NULL", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
}

}  // namespace
}  // namespace molt::kernel::store
