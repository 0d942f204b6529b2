// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/sqlite_db.h
//
// SqliteDb: the embedded ProfileDb (profile_db.h): the SQL of each operation SqliteStore
// (sqlite_store.h) runs for its callers, as statements prepared once on the profile database's
// file (SqliteProfileFile, sqlite_profile_file.h: the connection, the layout, the transactions).
// Every call is synchronous and runs its own transaction (BEGIN IMMEDIATE: the write lock is
// taken up front, so two processes on one file never deadlock upgrading a read, they wait for each
// other up to busy_timeout).
//
//   SqliteDb db("data/profiles.db", SqliteOptions{});
//   if (Status s = db.Open(); !s.ok()) { ... s names the file, the cause and the fix ... }
//   LoadResult r = db.Load("user:42", "host-a", std::chrono::seconds(180));
//   std::vector<WriteResult> each;
//   Status batch = db.Write({{.key = "user:42", .token = r.record.lease.token, .data = "{}"}},
//   each);
//
// Only sqlite_store.cc (and the tests) include this header; the server includes sqlite_store.h,
// which keeps SQLite out. Thread safety: one thread at a time (SqliteStore's own).
#ifndef MOLT_KERNEL_STORE_SQLITE_DB_H_
#define MOLT_KERNEL_STORE_SQLITE_DB_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernel/src/store/profile_db.h"
#include "kernel/src/store/profile_store.h"
#include "kernel/src/store/sqlite_options.h"
#include "kernel/src/store/sqlite_profile_file.h"

namespace molt::kernel::store {

class SqlitePrepared;

class SqliteDb final : public ProfileDb {
 public:
  // Nothing is opened until Open().
  SqliteDb(std::string path, SqliteOptions options);
  // Closes the file (SQLite's last checkpoint runs here).
  ~SqliteDb() override;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Opens the file (SqliteProfileFile::Open) and prepares the statements. Fails naming the file,
  // the cause and the fix: a directory that does not exist, a file that is not a database, a
  // layout newer than this build's, no WAL.
  Status Open() override;
  // The WAL copied back into the database when it has grown (SqliteProfileFile::Checkpoint).
  void Checkpoint(bool idle) override;
  // Caps the file at `pages` (0 lifts the cap): how tests fill a "disk".
  void SetMaxPageCount(std::uint32_t pages);

  // Takes the lease on `key` for `owner` in one transaction (ProfileStore::Load).
  LoadResult Load(const std::string& key, const std::string& owner, std::chrono::milliseconds ttl);
  // Loads that queued up together, in one transaction (a burst of joins commits once), one result
  // each, in order, each as Load() would give it. The keys are read and leased kChunk at a time,
  // a statement each. Should the transaction fail, each load is tried in one of its own.
  std::vector<LoadResult> LoadMany(const std::vector<LoadArgs>& loads) override;
  // `batch` in one transaction, each write on its own lease (ProfileStore::Write); `results` gets
  // one per write. A failed batch fails every result with its status.
  Status Write(const std::vector<store::Write>& batch, std::vector<WriteResult>& results) override;
  // Write() as one all-or-nothing transaction recorded under `id` (ProfileStore::Transact).
  Status Transact(const std::string& id, const std::vector<store::Write>& batch,
                  std::vector<WriteResult>& results) override;
  // The backups of `key`, newest first (ProfileStore::ListBackups).
  Result<std::vector<Backup>> Backups(const std::string& key) override;
  // The row of `key`, without a lease; kNotFound when there is none (ProfileStore::Read).
  Result<Record> Read(const std::string& key) override;
  // Ends the unexpired leases of every owner `abandoned` says is gone, in one transaction: the
  // owners and how many leases each held (ProfileStore::ReleaseAbandoned).
  Result<std::vector<std::pair<std::string, std::size_t>>> ReleaseAbandoned(
      const ProfileStore::Abandoned& abandoned) override;

 private:
  // One write inside the open transaction: `result` is OK (with the revision) or kStale; an
  // error return is the database's (the transaction must roll back).
  Status WriteOne(const store::Write& w, WallMillis now, WriteResult& result);
  // The slot the next backup of `key` goes to: an empty one, else the oldest.
  int OldestSlot(const std::string& key);
  Status PutBackup(const store::Write& w, int slot, std::uint64_t revision, WallMillis now);
  // Keys one statement of a burst takes (LoadMany).
  static constexpr std::size_t kChunk = 32;
  // The row columns a select reads before the key (ReadRow).
  static constexpr int kRowColumns = 7;
  static void ReadRow(const SqlitePrepared& st, Record& rec);
  // Takes the leases of `loads` (at most kChunk) inside the open transaction into out[0..): with
  // one select and at most one update and one insert when they share owner and lease time. An
  // error return is the database's (the transaction must roll back).
  Status AcquireChunk(std::span<const LoadArgs> loads, WallMillis now, LoadResult* out);
  // Takes the lease on `key` inside the open transaction (see Load); busy leaves it unchanged.
  LoadResult Acquire(const std::string& key, const std::string& owner,
                     std::chrono::milliseconds ttl, WallMillis now);
  // The row of `key`: nullopt when there is none.
  Result<std::optional<Record>> Select(const std::string& key);
  // Prepares every statement on the open file.
  Status Prepare();

  // The file before the statements: they are finalized before it closes.
  SqliteProfileFile file_;
  std::unique_ptr<SqlitePrepared> select_, select_many_, acquire_many_, insert_many_;
  std::unique_ptr<SqlitePrepared> acquire_, insert_, write_;
  std::unique_ptr<SqlitePrepared> backup_slots_, backup_put_, backup_at_, backups_, txn_;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_SQLITE_DB_H_
