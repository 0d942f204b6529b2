// SPDX-License-Identifier: Apache-2.0
// SqlitePrepared (kernel/src/store/sqlite_prepared.h): one statement prepared for the life of a
// connection to a database in memory: values bound in place and rebound on each use, fewer values
// than parameters clearing the rest, keys bound in a run with NULL after them, columns read.
#include "kernel/src/store/sqlite_prepared.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <optional>
#include <string>
#include <vector>

namespace molt::kernel::store {
namespace {

class SqlitePreparedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_,
                           "CREATE TABLE t (k TEXT, n INTEGER, v TEXT); INSERT INTO t VALUES "
                           "('a', 1, 'x'), ('b', 2, NULL), ('c', 3, 'z');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
  }
  void TearDown() override {
    select_.reset();
    keys_.reset();
    sqlite3_close(db_);
  }
  sqlite3* db_ = nullptr;
  std::unique_ptr<SqlitePrepared> select_ = std::make_unique<SqlitePrepared>();
  std::unique_ptr<SqlitePrepared> keys_ = std::make_unique<SqlitePrepared>();
};

TEST_F(SqlitePreparedTest, EachUseRebindsAndReadsItsRow) {
  ASSERT_EQ(select_->Prepare(db_, "SELECT n, v FROM t WHERE k = ?1 OR n = ?2"), SQLITE_OK);
  ASSERT_EQ(select_->Bind(std::string("a"), 0).Step(), SQLITE_ROW);
  EXPECT_EQ(select_->Int(0), 1);
  EXPECT_EQ(select_->Text(1), "x");
  EXPECT_EQ(select_->TextView(1), "x");
  select_->Reset();
  ASSERT_EQ(select_->Bind(std::optional<std::string>(), 2).Step(), SQLITE_ROW);
  EXPECT_EQ(select_->Int(0), 2);
  EXPECT_TRUE(select_->Null(1));
  select_->Reset();
  // One value for two parameters: the second is cleared (NULL), so only k = 'c' matches.
  ASSERT_EQ(select_->Bind(std::string("c")).Step(), SQLITE_ROW);
  EXPECT_EQ(select_->Int(0), 3);
  EXPECT_EQ(select_->Step(), SQLITE_DONE);
  select_->Reset();
}

TEST_F(SqlitePreparedTest, KeysAreBoundInARunWithNullAfterThem) {
  ASSERT_EQ(keys_->Prepare(db_, "SELECT count(*) FROM t WHERE n > ?1 AND k IN (?2, ?3, ?4)"),
            SQLITE_OK);
  const std::string a = "a", c = "c";
  ASSERT_EQ(keys_->Bind(0).BindKeys(2, {&a, &c}).Step(), SQLITE_ROW);
  EXPECT_EQ(keys_->Int(0), 2) << "?4 is NULL and matches nothing";
  keys_->Reset();
}

}  // namespace
}  // namespace molt::kernel::store
