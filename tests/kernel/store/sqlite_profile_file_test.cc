// SPDX-License-Identifier: Apache-2.0
// SqliteProfileFile (kernel/src/store/sqlite_profile_file.h): the profile database's file on real
// files in a temporary directory: opened in WAL mode with this build's layout, a layout 1 file
// upgraded in place, transactions that commit or roll back, and a full disk reported as an I/O
// error that says what to do. The refusals at opening are sqlite_db_test.cc's (through SqliteDb).
#include "kernel/src/store/sqlite_profile_file.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "kernel/src/store/sqlite_prepared.h"

namespace molt::kernel::store {
namespace {

namespace fs = std::filesystem;

class SqliteProfileFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_sqlite_file_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ + "/profiles.db";
  }
  void TearDown() override { fs::remove_all(dir_); }
  // The first column of the first row of `sql`, read on a connection of the test's own.
  std::string Query(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    std::string out = "<error>";
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK) {
      out = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != nullptr
                ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0))
                : "";
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  }
  std::string dir_;
  std::string path_;
};

TEST_F(SqliteProfileFileTest, ItOpensInWalModeWithThisBuildsLayout) {
  SqliteProfileFile file(path_, SqliteOptions{});
  ASSERT_TRUE(file.Open().ok());
  EXPECT_EQ(file.path(), path_);
  EXPECT_EQ(Query("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(Query("PRAGMA user_version"), std::to_string(SqliteProfileFile::kLayout));
  EXPECT_EQ(Query("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                  "('profiles', 'profile_backups', 'profile_transactions')"),
            "3");
}

TEST_F(SqliteProfileFileTest, AFileOfLayoutOneIsUpgradedInPlace) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE profiles (key TEXT PRIMARY KEY NOT NULL, data TEXT); "
                         "INSERT INTO profiles (key, data) VALUES ('user:1', '{}'); "
                         "PRAGMA user_version=1;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  SqliteProfileFile file(path_, SqliteOptions{});
  ASSERT_TRUE(file.Open().ok());
  EXPECT_EQ(Query("PRAGMA user_version"), "2");
  EXPECT_EQ(Query("SELECT data || ' ' || backup_at_ms FROM profiles WHERE key = 'user:1'"), "{} 0")
      << "the row kept, the new column added";
}

TEST_F(SqliteProfileFileTest, ATransactionCommitsOrRollsBackWithItsReason) {
  SqliteProfileFile file(path_, SqliteOptions{});
  ASSERT_TRUE(file.Open().ok());
  std::unique_ptr<SqlitePrepared> insert;
  ASSERT_TRUE(file.Prepare(&insert, "INSERT INTO profiles (key) VALUES (?1)").ok());

  ASSERT_TRUE(file.Begin().ok());
  ASSERT_EQ(insert->Bind(std::string("gone")).Step(), SQLITE_DONE);
  insert->Reset();
  const Status why = file.Rollback(Status::Rejected("changed my mind"));
  EXPECT_EQ(why.message(), "changed my mind");
  EXPECT_EQ(Query("SELECT count(*) FROM profiles"), "0");

  ASSERT_TRUE(file.Begin().ok());
  ASSERT_EQ(insert->Bind(std::string("kept")).Step(), SQLITE_DONE);
  insert->Reset();
  EXPECT_EQ(file.changes(), 1);
  ASSERT_TRUE(file.Commit("keeping").ok());
  EXPECT_EQ(Query("SELECT key FROM profiles"), "kept");
  EXPECT_TRUE(file.Rollback(Status::Ok()).ok()) << "nothing open: nothing rolled back";

  std::unique_ptr<SqlitePrepared> bad;
  const Status refused = file.Prepare(&bad, "SELECT nothing FROM nowhere");
  EXPECT_EQ(refused.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(refused.message().rfind("the profile database \"" + path_ + "\" cannot be used: ", 0),
            0u)
      << refused.message();
}

TEST_F(SqliteProfileFileTest, AFullDiskIsAnIoErrorThatSaysWhatToDo) {
  SqliteProfileFile file(path_, SqliteOptions{});
  ASSERT_TRUE(file.Open().ok());
  file.SetMaxPageCount(8);
  std::unique_ptr<SqlitePrepared> insert;
  ASSERT_TRUE(file.Prepare(&insert, "INSERT INTO profiles (key, data) VALUES (?1, ?2)").ok());
  ASSERT_TRUE(file.Begin().ok());
  const std::string blob(100'000, 'y');
  const int rc = insert->Bind(std::string("big"), blob).Step();
  insert->Reset();
  ASSERT_EQ(rc & 0xff, SQLITE_FULL);
  const Status full = file.Rollback(file.Failure(rc, "saving profiles"));
  EXPECT_EQ(full.code(), Status::Code::kIoError);
  EXPECT_EQ(full.message(),
            "saving profiles: database or disk is full (free space on the profile database's "
            "disk: the profiles stay in memory and are saved again)");
  file.SetMaxPageCount(0);
  ASSERT_TRUE(file.Begin().ok());
  ASSERT_EQ(insert->Bind(std::string("big"), blob).Step(), SQLITE_DONE) << "the cap lifted";
  insert->Reset();
  EXPECT_TRUE(file.Commit("saving").ok());
}

TEST_F(SqliteProfileFileTest, AFileInMemoryNeedsNoWal) {
  SqliteProfileFile file(std::string(kInMemory), SqliteOptions{});
  ASSERT_TRUE(file.Open().ok());
  ASSERT_TRUE(file.Begin().ok());
  EXPECT_TRUE(file.Commit("nothing").ok());
}

}  // namespace
}  // namespace molt::kernel::store
