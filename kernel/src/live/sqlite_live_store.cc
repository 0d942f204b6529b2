// SPDX-License-Identifier: Apache-2.0
// SqliteLiveStore: the live values of a server alone in live.db (sqlite_live_store.h).
#include "kernel/src/live/sqlite_live_store.h"

#include <sqlite3.h>

#include <utility>

#include "kernel/src/store/sqlite_statement.h"

namespace molt::kernel::live {
namespace {

using Statement = store::SqliteStatement;

constexpr std::int64_t kLayout = 1;

constexpr const char* kLiveSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS overrides(
  key TEXT PRIMARY KEY, value TEXT NOT NULL, by TEXT NOT NULL, at_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS changes(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, value TEXT, by TEXT NOT NULL,
  action TEXT NOT NULL, at_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS changes_by_key ON changes(key, seq);
)sql";

// Rolls back unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) {
    ok_ = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~Transaction() {
    if (ok_) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
  }
  bool begun() const { return ok_; }
  bool Commit() {
    const bool done = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK;
    ok_ = !done;
    return done;
  }

 private:
  sqlite3* db_;
  bool ok_ = false;
};

}  // namespace

Result<std::unique_ptr<SqliteLiveStore>> SqliteLiveStore::Open(const std::string& path) {
  MOLT_ASSIGN_OR_RETURN(sqlite3 * db, store::OpenSqliteFile(path, "live values"));
  std::unique_ptr<SqliteLiveStore> s(new SqliteLiveStore(path, db));
  MOLT_RETURN_IF_ERROR(s->Exec(kLiveSchema));
  Statement layout(db, "SELECT value FROM meta WHERE key = 'layout'");
  if (layout.Step() == SQLITE_ROW && layout.Int(0) > kLayout) {
    return Status::FailedPrecondition("live values \"" + path + "\" have layout " +
                                      std::to_string(layout.Int(0)) + ", newer than this moltd's " +
                                      std::to_string(kLayout) + ": run a newer moltd");
  }
  MOLT_RETURN_IF_ERROR(s->Exec("INSERT OR REPLACE INTO meta(key, value) VALUES('layout', 1)"));
  return s;
}

SqliteLiveStore::SqliteLiveStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}

SqliteLiveStore::~SqliteLiveStore() { sqlite3_close(db_); }

Status SqliteLiveStore::Exec(const char* sql) const {
  return store::ExecSql(db_, sql, "live values", path_);
}

Status SqliteLiveStore::Failed(const char* what) const {
  return Status::IoError("live values \"" + path_ + "\": " + what + ": " + sqlite3_errmsg(db_) +
                         " (check the data directory's free space)");
}

Result<std::size_t> SqliteLiveStore::ExpireIfIdle(std::int64_t now_ms, std::int64_t ttl_ms) {
  Transaction tx(db_);
  if (!tx.begun()) {
    return Failed("cannot begin");
  }
  Statement stamp(db_, "SELECT value FROM meta WHERE key = 'online_ms'");
  const bool idle = stamp.Step() != SQLITE_ROW || now_ms - stamp.Int(0) > ttl_ms;
  std::size_t expired = 0;
  if (idle) {
    Result<std::vector<StoredValue>> all = Overrides();
    if (!all.ok()) {
      return all.status();
    }
    for (const StoredValue& v : *all) {
      MOLT_RETURN_IF_ERROR(Record(v.key, std::nullopt, "moltd", "expired", now_ms).status());
      ++expired;
    }
  }
  MOLT_RETURN_IF_ERROR(Stamp(now_ms));
  if (!tx.Commit()) {
    return Failed("cannot commit");
  }
  return expired;
}

Status SqliteLiveStore::Stamp(std::int64_t now_ms) {
  Statement st(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('online_ms', ?1)");
  st.Bind(1, now_ms);
  return st.Step() == SQLITE_DONE ? Status::Ok() : Failed("cannot stamp the time");
}

Result<std::vector<StoredValue>> SqliteLiveStore::Overrides() {
  Statement st(db_, "SELECT key, value, by, at_ms FROM overrides ORDER BY key");
  std::vector<StoredValue> out;
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    out.push_back({st.Text(0), st.Text(1), st.Text(2), st.Int(3)});
  }
  if (rc != SQLITE_DONE) {
    return Failed("cannot read the overrides");
  }
  return out;
}

Result<LiveChange> SqliteLiveStore::Record(const std::string& key,
                                           const std::optional<std::string>& value,
                                           const std::string& by, const char* action,
                                           std::int64_t at_ms) {
  if (value) {
    Statement put(db_,
                  "INSERT OR REPLACE INTO overrides(key, value, by, at_ms) VALUES(?1,?2,?3,?4)");
    put.Bind(1, key).Bind(2, *value).Bind(3, by).Bind(4, at_ms);
    if (put.Step() != SQLITE_DONE) {
      return Failed("cannot write the override");
    }
  } else {
    Statement del(db_, "DELETE FROM overrides WHERE key = ?1");
    del.Bind(1, key);
    if (del.Step() != SQLITE_DONE) {
      return Failed("cannot remove the override");
    }
  }
  Statement add(db_, "INSERT INTO changes(key, value, by, action, at_ms) VALUES(?1,?2,?3,?4,?5)");
  add.Bind(1, key);
  if (value) {
    add.Bind(2, *value);
  } else {
    add.BindNull(2);
  }
  add.Bind(3, by).Bind(4, std::string_view(action)).Bind(5, at_ms);
  if (add.Step() != SQLITE_DONE) {
    return Failed("cannot record the change");
  }
  LiveChange c{sqlite3_last_insert_rowid(db_), key, value, by, action, at_ms};
  Statement trim(db_, "DELETE FROM changes WHERE seq <= ?1");
  trim.Bind(1, c.seq - static_cast<std::int64_t>(kHistoryKept));
  if (trim.Step() != SQLITE_DONE) {
    return Failed("cannot trim the history");
  }
  return c;
}

Result<LiveChange> SqliteLiveStore::Write(const std::string& key,
                                          const std::optional<std::string>& value,
                                          const std::string& by, std::int64_t at_ms) {
  Transaction tx(db_);
  if (!tx.begun()) {
    return Failed("cannot begin");
  }
  Result<LiveChange> c = Record(key, value, by, value ? "set" : "unset", at_ms);
  if (!c.ok()) {
    return c;
  }
  if (!tx.Commit()) {
    return Failed("cannot commit");
  }
  return c;
}

Result<std::vector<LiveChange>> SqliteLiveStore::History(std::string_view key, std::size_t limit) {
  Statement st(db_, key.empty() ? "SELECT seq, key, value, by, action, at_ms FROM changes "
                                  "ORDER BY seq DESC LIMIT ?2"
                                : "SELECT seq, key, value, by, action, at_ms FROM changes "
                                  "WHERE key = ?1 ORDER BY seq DESC LIMIT ?2");
  if (!key.empty()) {
    st.Bind(1, key);
  }
  st.Bind(2, static_cast<std::int64_t>(limit));
  return Changes(st);
}

Result<std::vector<LiveChange>> SqliteLiveStore::Since(std::int64_t seq, std::size_t limit) {
  Statement st(db_,
               "SELECT seq, key, value, by, action, at_ms FROM changes WHERE seq > ?1 ORDER BY seq "
               "LIMIT ?2");
  st.Bind(1, seq).Bind(2, static_cast<std::int64_t>(limit));
  return Changes(st);
}

Result<std::vector<LiveChange>> SqliteLiveStore::Changes(Statement& st) {
  std::vector<LiveChange> out;
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    LiveChange c{st.Int(0), st.Text(1), std::nullopt, st.Text(3), st.Text(4), st.Int(5)};
    if (!st.IsNull(2)) {
      c.value = st.Text(2);
    }
    out.push_back(std::move(c));
  }
  if (rc != SQLITE_DONE) {
    return Failed("cannot read the history");
  }
  return out;
}

}  // namespace molt::kernel::live
