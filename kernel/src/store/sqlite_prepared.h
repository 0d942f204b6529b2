// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/sqlite_prepared.h
//
// SqlitePrepared: one statement of the profile database, prepared once for the life of its
// connection (SQLITE_PREPARE_PERSISTENT) and reset after each use, its text bound in place, not
// copied (SqliteStatement, sqlite_statement.h, is the small files' kind: prepared per use, text
// copied). What SqliteDb (sqlite_db.h) runs every load and save with.
//
//   SqlitePrepared select;
//   if (select.Prepare(db, "SELECT data FROM profiles WHERE key = ?1") != SQLITE_OK) { ... }
//   if (select.Bind(key).Step() == SQLITE_ROW) { ... select.Text(0) ... }
//   select.Reset();
//
// Only .cc files of the profile database include it: it brings sqlite3.h. Thread safety: that
// of its connection (one thread at a time).
#ifndef MOLT_KERNEL_STORE_SQLITE_PREPARED_H_
#define MOLT_KERNEL_STORE_SQLITE_PREPARED_H_

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace molt::kernel::store {

class SqlitePrepared {
 public:
  SqlitePrepared() = default;
  SqlitePrepared(const SqlitePrepared&) = delete;
  SqlitePrepared& operator=(const SqlitePrepared&) = delete;
  // Finalizes the statement: before its connection closes.
  ~SqlitePrepared() { sqlite3_finalize(stmt_); }

  // Prepares `sql` on `db` for the connection's lifetime; SQLite's result code.
  int Prepare(sqlite3* db, const char* sql) {
    return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  }
  // Resets and binds: text for strings, integers for integers, NULL for nullopt. Text is bound
  // in place (SQLITE_STATIC), not copied: REQUIRES the arguments to outlive the Step()s that
  // follow, as they do in every caller (Bind(...).Step() in one expression, or arguments that
  // are the caller's parameters). Bindings are cleared only when fewer values than parameters
  // are given: every parameter is rebound otherwise.
  template <class... A>
  SqlitePrepared& Bind(const A&... args) {
    sqlite3_reset(stmt_);
    if (static_cast<int>(sizeof...(A)) < sqlite3_bind_parameter_count(stmt_)) {
      sqlite3_clear_bindings(stmt_);
    }
    int i = 0;
    (BindOne(++i, args), ...);
    return *this;
  }
  // Binds `keys` to ?first, ?first+1, ... and NULL to the parameters after them (a key that is
  // NULL matches no row). Same lifetime rule as Bind().
  SqlitePrepared& BindKeys(int first, const std::vector<const std::string*>& keys) {
    sqlite3_reset(stmt_);
    const int count = sqlite3_bind_parameter_count(stmt_);
    int i = first;
    for (const std::string* k : keys) {
      BindOne(i++, *k);
    }
    for (; i <= count; ++i) {
      sqlite3_bind_null(stmt_, i);
    }
    return *this;
  }
  int Step() { return sqlite3_step(stmt_); }
  void Reset() { sqlite3_reset(stmt_); }
  std::int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool Null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  // The column's text in place: valid until the next Step() or Reset().
  std::string_view TextView(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p == nullptr
               ? std::string_view()
               : std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
  }
  std::string Text(int col) const { return std::string(TextView(col)); }

 private:
  void BindOne(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void BindOne(int i, const std::optional<std::string>& v) {
    if (v) {
      BindOne(i, *v);
    } else {
      sqlite3_bind_null(stmt_, i);
    }
  }
  template <class I>
    requires std::is_integral_v<I>
  void BindOne(int i, I v) {
    sqlite3_bind_int64(stmt_, i, static_cast<sqlite3_int64>(v));
  }
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_SQLITE_PREPARED_H_
