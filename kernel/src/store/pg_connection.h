// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/pg_connection.h
//
// PgConnection: one libpq connection to a PostgreSQL database, for the parts of a fleet that
// keep their state there (the profile store, pg_db.h; the servers' heartbeats, fleet/). It is
// made again when it was lost, with the statements it prepares each time; statements take text
// arguments (PgParams) and give their rows (PgRows); failures come back as kernel statuses: what
// the connection or the server's resources refused (a lost connection, a full disk, a conflict
// with another server's transaction) is kIoError, which callers try again; a missing right is
// kFailedPrecondition naming the role; the rest kInternal. A connection a restart broke is found
// so on its first use, also after an abrupt one (pg_ctl -m immediate), where libpq still calls
// it good: kIoError, and made again at the next call.
//
//   PgConnection db(url, "the profile database");
//   db.set_statements({{"select", "SELECT data FROM molt_profiles WHERE key = $1"}});
//   MOLT_RETURN_IF_ERROR(db.Connected());
//   MOLT_ASSIGN_OR_RETURN(PgRows rows, db.Run("select", PgParams().Text(key), "reading"));
//
// libpq stays out of this header. Thread safety: one thread at a time.
#ifndef MOLT_KERNEL_STORE_PG_CONNECTION_H_
#define MOLT_KERNEL_STORE_PG_CONNECTION_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct pg_conn;
struct pg_result;

namespace molt::kernel::store {

// A statement's arguments, as text (the server casts them: `$1::bigint`).
class PgParams {
 public:
  PgParams& Text(std::string_view v);
  PgParams& Int(std::int64_t v) { return Text(std::to_string(v)); }
  PgParams& Bool(bool v) { return Text(v ? "t" : "f"); }
  // A bytea argument, sent as binary (any bytes, no escaping).
  PgParams& Bytes(std::string_view v);
  PgParams& Optional(const std::optional<std::string>& v);
  // A text[] literal: {"a","b\"c"}.
  PgParams& Array(const std::vector<std::string_view>& items);
  std::vector<const char*> Pointers() const;
  std::vector<int> Lengths() const;
  std::vector<int> Formats() const;  // 0 text, 1 binary
  bool binary() const { return binary_; }
  int size() const { return static_cast<int>(values_.size()); }

 private:
  std::deque<std::string> values_;  // a deque: each string stays where it is
  std::vector<bool> nulls_;
  std::vector<int> formats_;
  bool binary_ = false;
};

// A statement's rows; the result is freed with it.
class PgRows {
 public:
  explicit PgRows(pg_result* r) : r_(r) {}
  PgRows(PgRows&& other) noexcept : r_(std::exchange(other.r_, nullptr)) {}
  PgRows& operator=(PgRows&& other) noexcept {
    std::swap(r_, other.r_);
    return *this;
  }
  PgRows(const PgRows&) = delete;
  PgRows& operator=(const PgRows&) = delete;
  ~PgRows();

  int size() const;
  bool Null(int row, int col) const;
  std::string Text(int row, int col) const;
  std::int64_t Int(int row, int col) const;
  // The rows an INSERT, UPDATE or DELETE touched.
  std::int64_t affected() const;
  // A bytea column's bytes (its text form decoded).
  std::string Bytes(int row, int col) const;

 private:
  friend class PgConnection;
  pg_result* r_;
};

class PgConnection {
 public:
  // `url`: a libpq connection string (postgresql://... or key=value); `what` names the database
  // in errors ("the profile database"). Nothing connects until Connect().
  PgConnection(std::string url, std::string what, int connect_timeout_seconds = 5);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // The statements prepared on every connection: (name, SQL).
  void set_statements(std::vector<std::pair<std::string, std::string>> statements) {
    statements_ = std::move(statements);
  }
  // Connects (and prepares the statements when `prepare`): kIoError naming the database when
  // it cannot.
  Status Connect(bool prepare);
  // The connection, made again (with its statements) when it was lost; within kReconnectGap of
  // a failed try, that failure again without a new try.
  static constexpr std::chrono::milliseconds kReconnectGap{1000};
  Status Connected();
  // Prepares the statements on the connection there is (after Connect(false) and what had to be
  // created before them).
  Status Prepare();
  // Runs the prepared statement `name`; a failure's Status names `what`.
  Result<PgRows> Run(const char* name, const PgParams& params, const std::string& what);
  // Runs `sql` (no arguments; several statements allowed) and gives the last one's rows.
  Result<PgRows> Query(const std::string& sql, const std::string& what);
  Status Exec(const std::string& sql, const std::string& what) { return Query(sql, what).status(); }
  Status Begin(const std::string& what);
  Status Commit(const std::string& what);
  // Rolls back the open transaction (when the connection still has one) and returns `why`.
  Status Rollback(Status why);
  // Creates `tables` (SQL of CREATE ... IF NOT EXISTS statements), the layout `layout` of
  // version `version` in molt_schema, in one transaction under one advisory lock every part of a
  // fleet takes (servers that start together create their tables one at a time). Refuses, naming
  // `what` ("the profile tables") and the fix, a layout newer than `version`.
  Status CreateTables(std::string_view layout, int version, std::string_view tables,
                      std::string_view what);
  // LISTEN on `channel` (a plain identifier); the notifications come from Notifications().
  Status Listen(std::string_view channel);
  // The payloads of the notifications that arrived, waiting at most `timeout_ms` for the first;
  // kIoError when the connection is lost.
  Result<std::vector<std::string>> Notifications(int timeout_ms);

  const std::string& url() const { return url_; }
  // The role connected as ("" before a connection).
  std::string user() const;
  // `url` with its password (in a URI or a password= pair) replaced by "***": what the logs and
  // the errors show.
  static std::string Redacted(const std::string& url);

 private:
  // What a failed statement means (see the top of this file). A failure the server did not
  // report (no SQLSTATE: the connection broke under the call) drops the connection, which
  // libpq may still call good after an abrupt restart: the next call makes it again.
  Status Failure(const pg_result* r, const std::string& what);

  std::string url_;
  std::string what_;
  int connect_timeout_seconds_;
  std::vector<std::pair<std::string, std::string>> statements_;
  pg_conn* conn_ = nullptr;
  bool in_transaction_ = false;
  Status last_failure_;  // of the last try Connected() made
  std::chrono::steady_clock::time_point failed_at_{};
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PG_CONNECTION_H_
