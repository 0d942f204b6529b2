// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_db.h
//
// ProfileDb: one database engine under the profile store, as DbStore (db_store.h) drives it from
// its own thread: the SQL of every ProfileStore operation, run synchronously, each in its own
// transaction, with the same promises on every engine (profile_store.h): fenced leases, batched
// writes each on its own lease, all-or-nothing transactions recorded against replay, rotating
// backups. SqliteDb (sqlite_db.h) is the embedded engine, PgDb (pg_db.h) the fleet's.
//
// Thread safety: one thread at a time (the store's own).
#ifndef MOLT_KERNEL_STORE_PROFILE_DB_H_
#define MOLT_KERNEL_STORE_PROFILE_DB_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernel/src/store/profile_store.h"

namespace molt::kernel::store {

class ProfileDb {
 public:
  // One load of LoadMany(): the key, the owner that takes its lease, and for how long.
  struct LoadArgs {
    std::string key;
    std::string owner;
    std::chrono::milliseconds ttl{};
  };

  virtual ~ProfileDb() = default;

  // Opens (creating or upgrading the layout) and prepares; fails naming the database, the cause
  // and the fix.
  virtual Status Open() = 0;
  // The store's queue is quiet (`idle`), or has been busy a while: housekeeping that must never
  // delay a request runs here (SQLite's WAL checkpoint). Nothing by default.
  virtual void Checkpoint(bool /*idle*/) {}
  // Loads that queued up together, one result each, in order, each as ProfileStore::Load gives
  // it: the lease taken unless an unexpired one is held (by anyone).
  virtual std::vector<LoadResult> LoadMany(const std::vector<LoadArgs>& loads) = 0;
  // `batch` in one transaction, each write on its own lease (ProfileStore::Write); `results`
  // gets one per write. A failed batch fails every result with its status.
  virtual Status Write(const std::vector<store::Write>& batch,
                       std::vector<WriteResult>& results) = 0;
  // Write() as one all-or-nothing transaction recorded under `id` (ProfileStore::Transact).
  virtual Status Transact(const std::string& id, const std::vector<store::Write>& batch,
                          std::vector<WriteResult>& results) = 0;
  // The backups of `key`, newest first (ProfileStore::ListBackups).
  virtual Result<std::vector<Backup>> Backups(const std::string& key) = 0;
  // The row of `key`, without a lease; kNotFound when there is none (ProfileStore::Read).
  virtual Result<Record> Read(const std::string& key) = 0;
  // Ends the unexpired leases of every owner `abandoned` says is gone, in one transaction
  // (ProfileStore::ReleaseAbandoned).
  virtual Result<std::vector<std::pair<std::string, std::size_t>>> ReleaseAbandoned(
      const ProfileStore::Abandoned& abandoned) = 0;
};

// What every engine says the same way.
// `lease` is someone's and has not expired at `now`.
bool Held(const Lease& lease, WallMillis now);
// The busy result of a load of `key`, whose lease `holder` holds.
LoadResult LeasedElsewhere(const std::string& key, const Lease& holder);
// A write of `key` under `token`, which no longer holds its lease (kStale).
Status LeaseLost(const std::string& key, std::uint64_t token);
// `s` for every result when it failed (a failed transaction stored nothing); `s` either way.
Status FailAll(Status s, std::vector<WriteResult>& results);

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_DB_H_
