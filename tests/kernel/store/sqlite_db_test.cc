// SPDX-License-Identifier: Apache-2.0
// SqliteDb (kernel/src/store/sqlite_db.h) on real database files, called directly on the test's
// thread: leases and their fencing, batches, renewals and releases, a full "disk" (a page cap),
// files that are not databases and layouts (newer, older), two connections on one file, the leases
// of a server that is gone, backups, transactions, and the sqlite3 command-line tool reading the
// data. What SqliteStore adds (its thread, deliver, the counters) is sqlite_store_test.cc's.
#include "kernel/src/store/sqlite_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/child_process.h"

namespace molt::kernel::store {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

class SqliteDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_sqlite_db_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ + "/profiles.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The database at path_, open, on the test's clock (now_).
  std::unique_ptr<SqliteDb> Open(SqliteOptions o = {}) {
    o.now = [this] { return now_.load(); };
    auto db = std::make_unique<SqliteDb>(path_, std::move(o));
    const Status s = db->Open();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return s.ok() ? std::move(db) : nullptr;
  }
  // How opening `path` ends.
  static Status OpenStatus(const std::string& path) {
    SqliteDb db(path, SqliteOptions{});
    return db.Open();
  }

  // The calls in the shape the store's tests use (SqliteDb's are synchronous already).
  static LoadResult LoadNow(SqliteDb& db, const std::string& key, const std::string& owner,
                            milliseconds ttl = seconds(180)) {
    return db.Load(key, owner, ttl);
  }
  static std::pair<Status, std::vector<WriteResult>> WriteNow(SqliteDb& db,
                                                              std::vector<Write> batch) {
    std::vector<WriteResult> each;
    Status s = db.Write(batch, each);
    return {std::move(s), std::move(each)};
  }
  static Result<Record> ReadNow(SqliteDb& db, const std::string& key) { return db.Read(key); }
  static std::vector<Backup> BackupsNow(SqliteDb& db, const std::string& key) {
    Result<std::vector<Backup>> r = db.Backups(key);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<Backup>{};
  }
  static std::pair<Status, std::vector<WriteResult>> TransactNow(SqliteDb& db,
                                                                 const std::string& id,
                                                                 std::vector<Write> batch) {
    std::vector<WriteResult> each;
    Status s = db.Transact(id, batch, each);
    return {std::move(s), std::move(each)};
  }

  std::string dir_;
  std::string path_;
  std::atomic<WallMillis> now_{1'780'000'000'000};  // 2026-05-28
};

using molt::test::Shell;

TEST_F(SqliteDbTest, ALoadTakesTheLeaseAndANewKeyComesBackWithNoDocument) {
  auto db = Open();
  LoadResult r = LoadNow(*db, "user:1", "host-a", seconds(180));
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_FALSE(r.busy());
  EXPECT_EQ(r.record.key, "user:1");
  EXPECT_FALSE(r.record.data.has_value());
  EXPECT_EQ(r.record.revision, 0u);
  EXPECT_EQ(r.record.lease.owner, "host-a");
  EXPECT_EQ(r.record.lease.token, 1u);
  EXPECT_EQ(r.record.lease.expires, now_ + 180'000);
}

TEST_F(SqliteDbTest, SavesBumpTheRevisionAndAReloadSeesTheDocument) {
  auto db = Open();
  const std::uint64_t token = LoadNow(*db, "user:1", "host-a").record.lease.token;
  for (int i = 1; i <= 3; ++i) {
    auto [s, each] = WriteNow(*db, {{.key = "user:1",
                                     .token = token,
                                     .data = "{\"coins\":" + std::to_string(i) + "}",
                                     .schema_version = 2}});
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(each[0].status.ok()) << each[0].status.ToString();
    EXPECT_EQ(each[0].revision, static_cast<std::uint64_t>(i));
  }
  ASSERT_TRUE(WriteNow(*db, {{.key = "user:1", .token = token, .release = true}}).first.ok());
  LoadResult again = LoadNow(*db, "user:1", "host-a");
  ASSERT_TRUE(again.status.ok());
  EXPECT_EQ(again.record.data, "{\"coins\":3}");
  EXPECT_EQ(again.record.schema_version, 2u);
  EXPECT_EQ(again.record.revision, 3u);
  EXPECT_EQ(again.record.lease.token, 2u);  // every acquisition is a new token
}

TEST_F(SqliteDbTest, AnUnexpiredLeaseIsBusyNamingTheHolderAndUntilWhen) {
  auto db = Open();
  ASSERT_TRUE(LoadNow(*db, "user:1", "host-a", seconds(60)).status.ok());
  LoadResult b = LoadNow(*db, "user:1", "host-b");
  EXPECT_TRUE(b.busy());
  EXPECT_EQ(b.status.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(b.holder.owner, "host-a");
  EXPECT_EQ(b.holder.token, 1u);
  EXPECT_EQ(b.status.message(),
            "profile \"user:1\" is leased by host-a until 2026-05-28T20:27:40.000Z (lease token "
            "1): wait for its release or expiry, then load it again");
  // The same owner too: a rejoin waits for its own final save.
  EXPECT_TRUE(LoadNow(*db, "user:1", "host-a").busy());
  now_ += 60'000;  // expired: taken over
  LoadResult later = LoadNow(*db, "user:1", "host-b");
  ASSERT_TRUE(later.status.ok()) << later.status.ToString();
  EXPECT_EQ(later.record.lease.token, 2u);
}

// Fencing: once another host took the lease over, the old holder can never write again.
TEST_F(SqliteDbTest, AHostThatLostItsLeaseCanNeverOverwriteTheNewOwner) {
  auto db = Open();
  const std::uint64_t a = LoadNow(*db, "user:1", "host-a", seconds(10)).record.lease.token;
  ASSERT_TRUE(WriteNow(*db, {{.key = "user:1", .token = a, .data = "{\"v\":\"a1\"}"}}).first.ok());
  now_ += 10'001;
  LoadResult b = LoadNow(*db, "user:1", "host-b", seconds(180));
  ASSERT_TRUE(b.status.ok());
  EXPECT_EQ(b.record.data, "{\"v\":\"a1\"}");
  ASSERT_TRUE(
      WriteNow(*db, {{.key = "user:1", .token = b.record.lease.token, .data = "{\"v\":\"b1\"}"}})
          .first.ok());
  // host-a wakes up: its save and its renewal are refused, and say why.
  auto [batch, each] = WriteNow(*db, {{.key = "user:1", .token = a, .data = "{\"v\":\"a2\"}"},
                                      {.key = "user:1", .token = a, .renew_until = now_ + 1}});
  EXPECT_TRUE(batch.ok());
  ASSERT_EQ(each.size(), 2u);
  EXPECT_EQ(each[0].status.code(), Status::Code::kStale);
  EXPECT_EQ(each[0].status.message(),
            "profile \"user:1\": the lease (token 1) is no longer this host's (another host took "
            "it over, or it was released): this copy is not saved");
  EXPECT_EQ(each[1].status.code(), Status::Code::kStale);
  Result<Record> now = ReadNow(*db, "user:1");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->data, "{\"v\":\"b1\"}");
  EXPECT_EQ(now->revision, 2u);
  EXPECT_EQ(now->lease.owner, "host-b");
}

TEST_F(SqliteDbTest, ABatchCommitsTogetherEachWriteOnItsOwnLease) {
  auto db = Open();
  const std::uint64_t t1 = LoadNow(*db, "k1", "h").record.lease.token;
  const std::uint64_t t2 = LoadNow(*db, "k2", "h").record.lease.token;
  auto [batch, each] = WriteNow(*db, {{.key = "k1", .token = t1, .data = "{}"},
                                      {.key = "k2", .token = t2 + 5, .data = "{}"},
                                      {.key = "k3", .token = 1, .data = "{}"},
                                      {.key = "k2", .token = t2, .data = "[1]"}});
  ASSERT_TRUE(batch.ok()) << batch.ToString();
  ASSERT_EQ(each.size(), 4u);
  EXPECT_TRUE(each[0].status.ok());
  EXPECT_EQ(each[1].status.code(), Status::Code::kStale);
  EXPECT_EQ(each[2].status.code(), Status::Code::kStale);  // never loaded: no lease
  EXPECT_TRUE(each[3].status.ok());
  EXPECT_EQ(ReadNow(*db, "k2")->data, "[1]");
  EXPECT_EQ(ReadNow(*db, "k3").status().code(), Status::Code::kNotFound);
}

TEST_F(SqliteDbTest, RenewalsExtendTheLeaseAndAReleaseEndsIt) {
  auto db = Open();
  const std::uint64_t t = LoadNow(*db, "k", "h", seconds(10)).record.lease.token;
  ASSERT_TRUE(WriteNow(*db, {{.key = "k", .token = t, .renew_until = now_ + 100'000}})
                  .second[0]
                  .status.ok());
  now_ += 50'000;  // past the first expiry, within the renewal
  EXPECT_TRUE(LoadNow(*db, "k", "other").busy());
  Result<Record> r = ReadNow(*db, "k");
  EXPECT_EQ(r->revision, 0u);  // a renewal is not a save
  ASSERT_TRUE(WriteNow(*db, {{.key = "k", .token = t, .release = true}}).second[0].status.ok());
  EXPECT_EQ(ReadNow(*db, "k")->lease.owner, "");
  // Released is released: the old token writes nothing more.
  EXPECT_EQ(WriteNow(*db, {{.key = "k", .token = t, .data = "{}"}}).second[0].status.code(),
            Status::Code::kStale);
  EXPECT_TRUE(LoadNow(*db, "k", "other").status.ok());
}

// A full disk (here a page cap on the file) fails the whole batch with a clear error; what was
// stored before is intact, and the same writes succeed once there is room again.
TEST_F(SqliteDbTest, AFullDiskFailsTheBatchClearlyAndLosesNothingStored) {
  auto db = Open();
  const std::uint64_t t = LoadNow(*db, "k", "h").record.lease.token;
  ASSERT_TRUE(WriteNow(*db, {{.key = "k", .token = t, .data = "{\"v\":1}"}}).first.ok());
  const std::string big = "{\"blob\":\"" + std::string(256 * 1024, 'x') + "\"}";
  db->SetMaxPageCount(40);  // far below what the blob needs
  auto [batch, each] = WriteNow(*db, {{.key = "k", .token = t, .data = big}});
  EXPECT_EQ(batch.code(), Status::Code::kIoError);
  EXPECT_NE(batch.message().find("database or disk is full"), std::string::npos) << batch.message();
  EXPECT_NE(batch.message().find("free space on the profile database's disk"), std::string::npos);
  ASSERT_EQ(each.size(), 1u);
  EXPECT_EQ(each[0].status.code(), Status::Code::kIoError);
  EXPECT_EQ(ReadNow(*db, "k")->data, "{\"v\":1}");
  db->SetMaxPageCount(0);
  auto retry = WriteNow(*db, {{.key = "k", .token = t, .data = big}});
  ASSERT_TRUE(retry.first.ok()) << retry.first.ToString();
  EXPECT_EQ(retry.second[0].revision, 2u);
}

// A burst of loads (LoadMany) takes its keys a chunk per statement; every result, and every row it
// leaves, is what one Load() per key gives on a copy of the same database: new keys, free ones
// with a document, leases unexpired (busy) and expired (taken over), keys that need quoting, a
// key twice and a second owner (taken one by one), across the chunks' boundaries.
TEST_F(SqliteDbTest, ABurstOfLoadsEndsAsOneLoadPerKeyWould) {
  // The burst's clock is read once per LoadMany that commits, once per load when it falls back
  // to a transaction each: how the test knows the burst was not quietly retried load by load.
  std::atomic<int> clock_reads{0};
  auto burst = std::make_unique<SqliteDb>(path_, SqliteOptions{.now = [&] {
                                            ++clock_reads;
                                            return now_.load();
                                          }});
  ASSERT_TRUE(burst->Open().ok());
  auto single = std::make_unique<SqliteDb>(dir_ + "/single.db",
                                           SqliteOptions{.now = [this] { return now_.load(); }});
  ASSERT_TRUE(single->Open().ok());
  for (SqliteDb* db : {burst.get(), single.get()}) {
    const std::uint64_t t = LoadNow(*db, "back", "host-a").record.lease.token;
    ASSERT_TRUE(WriteNow(*db, {{.key = "back", .token = t, .data = "{\"coins\":7}"}}).first.ok());
    ASSERT_TRUE(WriteNow(*db, {{.key = "back", .token = t, .release = true}}).first.ok());
    ASSERT_TRUE(LoadNow(*db, "held", "host-b", seconds(600)).status.ok());
    ASSERT_TRUE(LoadNow(*db, "expired", "host-c", seconds(1)).status.ok());
  }
  now_ += 2'000;

  std::vector<SqliteDb::LoadArgs> loads;
  for (int i = 0; i < 70; ++i) {
    loads.push_back({"new:" + std::to_string(i), "host-a", seconds(180)});
  }
  loads[31].key = "back";  // the last of the first chunk
  loads[32].key = "held";  // the first of the second
  loads[65].key = "expired";
  loads[66].key = "it's \"quoted\", 'twice' ?1";
  // A key twice (one owner): taken one by one, the second busy. A second owner: the same.
  const std::vector<SqliteDb::LoadArgs> twice = {{"dup", "host-a", seconds(180)},
                                                 {"dup", "host-a", seconds(180)}};
  const std::vector<SqliteDb::LoadArgs> mixed = {{"one", "host-a", seconds(180)},
                                                 {"other", "host-d", seconds(30)}};
  for (const auto& batch : {loads, twice, mixed}) {
    clock_reads = 0;
    const std::vector<LoadResult> got = burst->LoadMany(batch);
    EXPECT_EQ(clock_reads.load(), 1) << "the burst fell back to a transaction per load";
    ASSERT_EQ(got.size(), batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      SCOPED_TRACE(batch[i].key);
      const LoadResult want = single->Load(batch[i].key, batch[i].owner, batch[i].ttl);
      EXPECT_EQ(got[i].status.code(), want.status.code());
      EXPECT_EQ(got[i].status.message(), want.status.message());
      EXPECT_EQ(got[i].holder.owner, want.holder.owner);
      EXPECT_EQ(got[i].holder.token, want.holder.token);
      EXPECT_EQ(got[i].record.key, want.record.key);
      EXPECT_EQ(got[i].record.data, want.record.data);
      EXPECT_EQ(got[i].record.revision, want.record.revision);
      EXPECT_EQ(got[i].record.lease.owner, want.record.lease.owner);
      EXPECT_EQ(got[i].record.lease.token, want.record.lease.token);
      EXPECT_EQ(got[i].record.lease.expires, want.record.lease.expires);
      EXPECT_EQ(got[i].record.updated, want.record.updated);
      Result<Record> row = ReadNow(*burst, batch[i].key);
      Result<Record> want_row = ReadNow(*single, batch[i].key);
      ASSERT_TRUE(row.ok() && want_row.ok());
      EXPECT_EQ(row->data, want_row->data);
      EXPECT_EQ(row->lease.owner, want_row->lease.owner);
      EXPECT_EQ(row->lease.token, want_row->lease.token);
      EXPECT_EQ(row->lease.expires, want_row->lease.expires);
    }
  }
  // What those are, spelled out once.
  Result<Record> back = ReadNow(*burst, "back");
  EXPECT_EQ(back->data, "{\"coins\":7}");
  EXPECT_EQ(back->lease.owner, "host-a");
  EXPECT_EQ(back->lease.token, 2u);
  EXPECT_EQ(ReadNow(*burst, "held")->lease.owner, "host-b");
  EXPECT_EQ(ReadNow(*burst, "expired")->lease.token, 2u);
  EXPECT_EQ(ReadNow(*burst, "new:69")->lease.token, 1u);
  EXPECT_EQ(ReadNow(*burst, "dup")->lease.token, 1u);
  EXPECT_EQ(ReadNow(*burst, "other")->lease.owner, "host-d");
}

// A burst the disk cannot hold is tried again one load at a time: each load says why it failed,
// and the ones that fit are taken, whole.
TEST_F(SqliteDbTest, ABurstOnAFullDiskFailsEachLoadClearlyAndKeepsWhatFits) {
  auto db = Open();
  // A cap below the file's size holds it at its size (SQLite never shrinks a file to a cap): the
  // layout's pages and the few free ones, room for a handful of these keys.
  db->SetMaxPageCount(3);
  std::vector<SqliteDb::LoadArgs> loads;
  for (int i = 0; i < 40; ++i) {
    loads.push_back({"user:" + std::string(300, 'k') + std::to_string(i), "host-a", seconds(180)});
  }
  const std::vector<LoadResult> got = db->LoadMany(loads);
  ASSERT_EQ(got.size(), loads.size());
  std::size_t failed = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i].status.ok()) {
      EXPECT_EQ(ReadNow(*db, loads[i].key)->lease.owner, "host-a");
      continue;
    }
    ++failed;
    EXPECT_EQ(got[i].status.code(), Status::Code::kIoError);
    EXPECT_NE(got[i].status.message().find("profile \"" + loads[i].key +
                                           "\": taking the lease: database or disk is full"),
              std::string::npos)
        << got[i].status.message();
    EXPECT_NE(got[i].status.message().find("free space on the profile database's disk"),
              std::string::npos);
    EXPECT_EQ(ReadNow(*db, loads[i].key).status().code(), Status::Code::kNotFound);
  }
  EXPECT_GT(failed, 0u);
  EXPECT_LT(failed, loads.size());
  db->SetMaxPageCount(0);
  for (const LoadResult& r : db->LoadMany(loads)) {
    EXPECT_TRUE(r.status.ok() || r.busy()) << r.status.ToString();
  }
}

TEST_F(SqliteDbTest, AFileThatIsNotADatabaseIsRefusedNamingItAndTheFix) {
  std::ofstream(path_) << std::string(8192, 'z');
  const Status s = OpenStatus(path_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(
      s.message(),
      "the profile database \"" + path_ +
          "\" cannot be read: file is not a database: move it aside (restore a backup of "
          "it, or let Molt create a new one) or point profiles.database or --data at another file");
}

TEST_F(SqliteDbTest, AMissingDirectoryOrANewerLayoutIsRefusedWithTheFix) {
  const Status missing = OpenStatus(dir_ + "/nope/profiles.db");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.message(), "cannot open the profile database \"" + dir_ +
                                   "/nope/profiles.db\": the directory " + dir_ +
                                   "/nope does not exist (create it, or point "
                                   "profiles.database or --data at one that does)");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=7", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const Status newer = OpenStatus(path_);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.message().find("has layout 7, newer than this build's (2)"), std::string::npos)
      << newer.message();
}

// Two stores on one file (two hosts, or two moltd processes on one disk), each with its own
// connection, share the leases.
TEST_F(SqliteDbTest, TwoStoresOnOneFileShareTheLeases) {
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

TEST_F(SqliteDbTest, TheLeasesOfAServerThatIsGoneAreEndedAtOnce) {
  auto db = Open();
  const std::uint64_t dead =
      LoadNow(*db, "user:1", "host-a:111:1").record.lease.token;  // a killed server's
  (void)LoadNow(*db, "user:2", "host-a:111:1");
  (void)LoadNow(*db, "user:3", "host-b:222:1");  // alive
  auto ended =
      db->ReleaseAbandoned([](const std::string& owner) { return owner == "host-a:111:1"; });
  ASSERT_TRUE(ended.ok()) << ended.status().ToString();
  ASSERT_EQ(ended->size(), 1u);
  EXPECT_EQ((*ended)[0], std::make_pair(std::string("host-a:111:1"), std::size_t{2}));
  LoadResult again = LoadNow(*db, "user:1", "host-c");
  ASSERT_TRUE(again.status.ok()) << again.status.ToString();  // no wait for the expiry
  EXPECT_GT(again.record.lease.token, dead);
  EXPECT_TRUE(LoadNow(*db, "user:3", "host-c").busy());
  // The ended holder is fenced: its writes are refused.
  auto stale = WriteNow(*db, {{.key = "user:1", .token = dead, .data = "{}"}});
  ASSERT_TRUE(stale.first.ok());
  EXPECT_EQ(stale.second[0].status.code(), Status::Code::kStale);
}

TEST_F(SqliteDbTest, BackupsRotateThroughThreeSlotsOnTheScheduleInTheRow) {
  auto db = Open();
  const std::uint64_t t = LoadNow(*db, "user:1", "host-a").record.lease.token;
  auto save = [&](const char* doc, bool now = false) {
    auto r = WriteNow(*db, {{.key = "user:1",
                             .token = t,
                             .data = doc,
                             .schema_version = 2,
                             .backup_every = 1000,
                             .backup_now = now}});
    ASSERT_TRUE(r.first.ok()) << r.first.ToString();
  };
  save(R"({"v":1})");  // never backed up: due
  save(R"({"v":2})");  // the next is due in 1 s
  ASSERT_EQ(BackupsNow(*db, "user:1").size(), 1u);
  now_ += 1000;
  save(R"({"v":3})");
  now_ += 1000;
  save(R"({"v":4})");
  now_ += 1000;
  save(R"({"v":5})");  // the oldest slot (v1's) is reused
  std::vector<Backup> b = BackupsNow(*db, "user:1");
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].data, R"({"v":5})");
  EXPECT_EQ(b[0].revision, 5u);
  EXPECT_EQ(b[0].schema_version, 2u);
  EXPECT_EQ(b[1].data, R"({"v":4})");
  EXPECT_EQ(b[2].data, R"({"v":3})");
  EXPECT_EQ(b[0].slot, 0);
  save(R"({"v":6})", /*now=*/true);  // backupNow: not due, taken anyway
  EXPECT_EQ(BackupsNow(*db, "user:1")[0].data, R"({"v":6})");
  // Without backup_every nothing is copied; a mirror copies every save to its own slot.
  ASSERT_TRUE(WriteNow(*db, {{.key = "user:1", .token = t, .data = R"({"v":7})", .mirror = true}})
                  .first.ok());
  b = BackupsNow(*db, "user:1");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].slot, kMirrorSlot);
  EXPECT_EQ(b[0].data, R"({"v":7})");
  EXPECT_EQ(b[1].data, R"({"v":6})");
  EXPECT_TRUE(BackupsNow(*db, "user:2").empty());
}

TEST_F(SqliteDbTest, ATransactionCommitsBothOrNeitherAndRefusesAReplay) {
  auto db = Open();
  const std::uint64_t a = LoadNow(*db, "user:a", "host-a").record.lease.token;
  const std::uint64_t b = LoadNow(*db, "user:b", "host-a").record.lease.token;
  auto both = [&](const char* da, const char* db, std::uint64_t tb) {
    return std::vector<Write>{{.key = "user:a", .token = a, .data = da},
                              {.key = "user:b", .token = tb, .data = db}};
  };
  auto r = TransactNow(*db, "trade-1", both(R"({"gold":5})", R"({"gold":15})", b));
  ASSERT_TRUE(r.first.ok()) << r.first.ToString();
  EXPECT_EQ(ReadNow(*db, "user:b")->data, R"({"gold":15})");
  r = TransactNow(*db, "trade-1", both(R"({"gold":0})", R"({"gold":20})", b));
  EXPECT_EQ(r.first.code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(r.first.message(),
            "transaction \"trade-1\" was already committed: a replay is refused");
  // B's lease lost: A's write is rolled back with it.
  r = TransactNow(*db, "trade-2", both(R"({"gold":1})", R"({"gold":19})", b + 7));
  EXPECT_EQ(r.first.code(), Status::Code::kStale);
  EXPECT_NE(r.first.message().find("profile \"user:b\""), std::string::npos) << r.first.message();
  EXPECT_EQ(ReadNow(*db, "user:a")->data, R"({"gold":5})");
  EXPECT_EQ(ReadNow(*db, "user:a")->revision, 1u);
  // A refused transaction's id is not recorded: it can be tried again.
  r = TransactNow(*db, "trade-2", both(R"({"gold":1})", R"({"gold":19})", b));
  EXPECT_TRUE(r.first.ok()) << r.first.ToString();
}

TEST_F(SqliteDbTest, ADatabaseOfLayoutOneIsUpgradedInPlace) {
  ASSERT_EQ(Shell("sqlite3 " + path_ +
                  " \"CREATE TABLE profiles (key TEXT PRIMARY KEY NOT NULL, data TEXT, "
                  "schema_version INTEGER NOT NULL DEFAULT 0, revision INTEGER NOT NULL DEFAULT 0, "
                  "lease_owner TEXT, lease_token INTEGER NOT NULL DEFAULT 0, lease_expires_ms "
                  "INTEGER NOT NULL DEFAULT 0, updated_ms INTEGER NOT NULL DEFAULT 0); INSERT INTO "
                  "profiles (key, data, revision) VALUES ('user:1', '{}', 4); PRAGMA "
                  "user_version=1;\" 2>&1"),
            "");
  auto db = Open();
  ASSERT_NE(db, nullptr);
  const LoadResult r = LoadNow(*db, "user:1", "host-a");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.record.revision, 4u);
  ASSERT_TRUE(
      WriteNow(
          *db,
          {{.key = "user:1", .token = r.record.lease.token, .data = "{}", .backup_every = 1000}})
          .first.ok());
  EXPECT_EQ(BackupsNow(*db, "user:1").size(), 1u);
  EXPECT_EQ(Shell("sqlite3 " + path_ + " 'PRAGMA user_version'"), "2\n");
}

// The documents are plain JSON text: an operator reads them with the sqlite3 tool.
TEST_F(SqliteDbTest, TheDataIsReadableWithTheSqliteCommandLineTool) {
  auto db = Open();
  const std::uint64_t t = LoadNow(*db, "user:7", "host-a").record.lease.token;
  ASSERT_TRUE(WriteNow(*db, {{.key = "user:7",
                              .token = t,
                              .data = "{\"coins\":42,\"name\":\"ada\"}",
                              .schema_version = 3}})
                  .first.ok());
  EXPECT_EQ(Shell("sqlite3 " + path_ +
                  " \"SELECT key, json_extract(data, '$.coins'), schema_version, revision, "
                  "lease_owner FROM profiles\""),
            "user:7|42|3|1|host-a\n");
}

}  // namespace
}  // namespace molt::kernel::store
