// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/sqlite_store.h
//
// SqliteStore: the embedded ProfileStore, one SQLite database file (by default
// `<data dir>/profiles.db`) in WAL mode, used by one dedicated thread (DbStore, db_store.h): no
// SQLite call runs on the caller's thread, Open() included. The table is readable with the
// sqlite3 command-line tool (docs/profiles.md):
//
//   profiles(key TEXT PRIMARY KEY, data TEXT (JSON, NULL until saved), schema_version INTEGER,
//            revision INTEGER, lease_owner TEXT, lease_token INTEGER, lease_expires_ms INTEGER,
//            updated_ms INTEGER)
//
// Several processes may share the file (the leases are in it; SQLite's own locking serializes
// the transactions, waiting up to `busy_timeout` for one another). A `kill -9` at any moment
// leaves a file that opens clean, every acknowledged write at its revision: a write's `done`
// runs only after its transaction committed (with synchronous=NORMAL in WAL mode a power cut, not
// a crash, may lose the last transactions; `synchronous_full` closes that too).
//
// Loads that queue up next to each other (a burst of joins) share one transaction, in queue
// order. The connection and the SQL are SqliteDb's (sqlite_db.h, included by sqlite_store.cc
// only: this header keeps SQLite out of the server's). Thread safety: the ProfileStore calls are
// safe from any thread. The destructor finishes what was queued, delivers its results, and closes
// the file.
#ifndef MOLT_KERNEL_STORE_SQLITE_STORE_H_
#define MOLT_KERNEL_STORE_SQLITE_STORE_H_

#include <memory>
#include <string>
#include <string_view>

#include "kernel/src/store/db_store.h"
#include "kernel/src/store/profile_store.h"
#include "kernel/src/store/sqlite_options.h"

namespace molt::kernel::store {

class SqliteStore final : public DbStore {
 public:
  // Opens (creating) the database at `path` (kInMemory: in memory). Fails naming the file, the
  // cause and the fix (not a database, a newer schema, a directory that does not exist, ...).
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& path, Deliver deliver,
                                                   SqliteOptions options = {});

  // Raises (or lifts, with 0) the page cap of SqliteOptions::max_page_count.
  void SetMaxPageCount(std::uint32_t pages);
  const std::string& path() const { return path_; }

 private:
  explicit SqliteStore(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_SQLITE_STORE_H_
