// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/sqlite_profile_file.h
//
// SqliteProfileFile: the profile database's SQLite file and its one connection, under SqliteDb
// (sqlite_db.h), which runs the profile store's SQL on it. Its job is the file itself: opened in
// WAL mode (a directory that does not exist, a file that is not a database, a layout newer than
// this build's, no WAL: each refused naming the file, the cause and the fix), the layout created
// or upgraded in place (PRAGMA user_version), the transactions (BEGIN IMMEDIATE: the write lock up
// front, so two processes on one file wait for each other, never deadlock upgrading a read), the
// WAL checkpointed only when the store's thread says so, and SQLite's failures as kernel statuses
// (a full disk or an I/O error is kIoError, which callers try again).
//
//   SqliteProfileFile file("data/profiles.db", SqliteOptions{});
//   MOLT_RETURN_IF_ERROR(file.Open());
//   std::unique_ptr<SqlitePrepared> select;
//   MOLT_RETURN_IF_ERROR(file.Prepare(&select, "SELECT data FROM profiles WHERE key = ?1"));
//   MOLT_RETURN_IF_ERROR(file.Begin());  ...  MOLT_RETURN_IF_ERROR(file.Commit("saving"));
//
// Only sqlite_db.cc and its tests include it. Thread safety: one thread at a time (the store's).
#ifndef MOLT_KERNEL_STORE_SQLITE_PROFILE_FILE_H_
#define MOLT_KERNEL_STORE_SQLITE_PROFILE_FILE_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <memory>
#include <string>

#include "kernel/src/store/sqlite_options.h"

struct sqlite3;

namespace molt::kernel::store {

class SqlitePrepared;

class SqliteProfileFile {
 public:
  // The database layout this build writes (PRAGMA user_version).
  // 1: profiles; 2: + profiles.backup_at_ms, profile_backups, profile_transactions.
  static constexpr int kLayout = 2;

  // Nothing is opened until Open().
  SqliteProfileFile(std::string path, SqliteOptions options);
  // Closes the file (SQLite's last checkpoint runs here). REQUIRES: the statements prepared
  // through Prepare() are gone first (their owner declares this file before them).
  ~SqliteProfileFile();
  SqliteProfileFile(const SqliteProfileFile&) = delete;
  SqliteProfileFile& operator=(const SqliteProfileFile&) = delete;

  // Opens (creating) the file in WAL mode, creates or upgrades the layout, applies the options.
  Status Open();
  // Prepares `sql` for the life of the connection into `*into`; refused naming the file.
  Status Prepare(std::unique_ptr<SqlitePrepared>* into, const char* sql);

  // BEGIN IMMEDIATE.
  Status Begin();
  // COMMIT; a failed commit rolls back, its status naming `what`.
  Status Commit(const std::string& what);
  // Rolls back the open transaction (if SQLite has not already) and returns `why`.
  Status Rollback(Status why);

  // Copies the WAL back into the database when it has grown (`idle`: nothing is queued) or has
  // grown too much to wait for an idle moment. PASSIVE: never waits for other connections.
  void Checkpoint(bool idle);
  // Caps the file at `pages` (0 lifts the cap): how tests fill a "disk".
  void SetMaxPageCount(std::uint32_t pages);

  // A kernel status for the SQLite failure `rc` of the operation `what`: a full disk (with what
  // to do about it), an I/O error, a busy or locked file is kIoError; the rest (a corrupt file, a
  // misuse) kInternal.
  Status Failure(int rc, const std::string& what) const;

  sqlite3* handle() const { return db_; }
  // The rows the last statement changed.
  int changes() const;
  const std::string& path() const { return path_; }
  // The wall clock leases are read against (SqliteOptions::now).
  WallMillis now() const { return options_.now(); }

 private:
  // Opening or setting up the file failed: the file, `what`, the cause and the fix.
  Status Refused(int rc, const char* what) const;
  Status Pragma(const char* sql, int* out);
  Status PragmaText(const char* sql, std::string* out);
  Status Exec(const char* sql);
  // The layout `version` found brought to kLayout.
  Status Upgrade(int version);

  std::string path_;
  SqliteOptions options_;
  sqlite3* db_ = nullptr;
  // Pages in the WAL after the last commit (the WAL hook's count).
  int wal_pages_ = 0;
  static constexpr int kIdleCheckpointPages = 1000;   // SQLite's own default threshold
  static constexpr int kBusyCheckpointPages = 16000;  // ~64 MB: checkpoint even under load
  std::unique_ptr<SqlitePrepared> begin_, commit_, rollback_;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_SQLITE_PROFILE_FILE_H_
