// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/sqlite_statement.h
//
// SqliteStatement: one prepared statement, finalized with the object; text is bound transiently
// (copied). What the small SQLite files (the deploy registry, the live values) read and write
// with, beside OpenSqliteFile() and ExecSql(), which open them and run their schema; the profile
// database keeps its own (sqlite_db.cc).
//
//   MOLT_ASSIGN_OR_RETURN(sqlite3* db, OpenSqliteFile("data/live.db", "live values"));
//   SqliteStatement st(db, "SELECT value FROM meta WHERE key = ?1");
//   st.Bind(1, "layout");
//   if (st.Step() == SQLITE_ROW) { ... st.Int(0) ... }
//
// Only .cc files include it: it brings sqlite3.h. Thread safety: that of its connection.
#ifndef MOLT_KERNEL_STORE_SQLITE_STATEMENT_H_
#define MOLT_KERNEL_STORE_SQLITE_STATEMENT_H_

#include <molt/kernel/status.h>
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace molt::kernel::store {

// Runs `sql` (one or more statements); an error names `what` and `path`.
inline Status ExecSql(sqlite3* db, const char* sql, const std::string& what,
                      const std::string& path) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err != nullptr ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    return Status::IoError(what + " \"" + path + "\": " + why);
  }
  return Status::Ok();
}

// Opens (creating) `path` in WAL mode with synchronous=FULL and a 5 s busy wait; the caller
// closes it. Fails naming `what`, the file, the cause and the fix.
inline Result<sqlite3*> OpenSqliteFile(const std::string& path, const std::string& what) {
  sqlite3* db = nullptr;
  if (int rc =
          sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
      rc != SQLITE_OK) {
    std::string why = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::IoError(what + " \"" + path + "\" cannot be opened: " + why +
                           " (check the data directory's permissions and free space)");
  }
  sqlite3_busy_timeout(db, 5000);
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL"}) {
    if (Status s = ExecSql(db, pragma, what, path); !s.ok()) {
      sqlite3_close(db);
      return s;
    }
  }
  return db;
}

class SqliteStatement {
 public:
  SqliteStatement(sqlite3* db, const std::string& sql) {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
  }
  ~SqliteStatement() { sqlite3_finalize(stmt_); }
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  SqliteStatement& Bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  SqliteStatement& Bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  SqliteStatement& Bind(int i, std::uint64_t v) { return Bind(i, static_cast<std::int64_t>(v)); }
  SqliteStatement& BindNull(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error.
  int Step() { return ok() ? sqlite3_step(stmt_) : rc_; }
  std::string Text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p == nullptr
               ? std::string()
               : std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
  }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_SQLITE_STATEMENT_H_
