// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/pg_db.h
//
// PgDb: the fleet's ProfileDb (profile_db.h), one libpq connection to a PostgreSQL database that
// many servers share. The same promises as SQLite's, kept by the database across servers:
//   - a lease is taken by one statement that only succeeds when nobody holds an unexpired one
//     (INSERT ... ON CONFLICT DO UPDATE ... WHERE expired), so two servers loading one player at
//     once never both get it, and its fencing token grows at every acquisition;
//   - every write names its token (UPDATE ... WHERE lease_token = $token): a server that lost the
//     lease can never overwrite the new owner's document;
//   - a batch is one transaction; a profile transaction records its id in the same transaction
//     (a replay is refused by the primary key).
// Tables (created and versioned in molt_schema by the first server, under an advisory lock):
//   molt_profiles(key, data, schema_version, revision, lease_owner, lease_token,
//                 lease_expires_ms, updated_ms, backup_at_ms)
//   molt_profile_backups(key, slot, data, schema_version, revision, taken_ms)
//   molt_profile_transactions(id, keys, taken_ms)
// A connection lost mid-run fails the call in hand (kIoError, the callers retry it) and is made
// again at the next call, its statements prepared again.
//
// The connection is a PgConnection (pg_connection.h). Only pg_store.cc (and the tests) include
// this header; libpq stays out of it.
// Thread safety: one thread at a time (the store's own).
#ifndef MOLT_KERNEL_STORE_PG_DB_H_
#define MOLT_KERNEL_STORE_PG_DB_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernel/src/store/pg_connection.h"
#include "kernel/src/store/profile_db.h"
#include "kernel/src/store/profile_store.h"

namespace molt::kernel::store {

struct PgOptions {
  // The wall clock leases are read against (tests move it).
  std::function<WallMillis()> now = WallNow;
  // How long a connection attempt may take (libpq's connect_timeout), in seconds.
  int connect_timeout_seconds = 5;
};

class PgDb final : public ProfileDb {
 public:
  // `url`: a libpq connection string, postgresql://... or key=value. Nothing connects until
  // Open().
  PgDb(std::string url, PgOptions options);
  ~PgDb() override;
  PgDb(const PgDb&) = delete;
  PgDb& operator=(const PgDb&) = delete;

  // Connects, creates or upgrades the tables (refusing a layout newer than this build's), and
  // prepares the statements. Fails naming the database (its password hidden), the cause and
  // the fix: unreachable, a role without the right to create tables, a newer layout.
  Status Open() override;
  std::vector<LoadResult> LoadMany(const std::vector<LoadArgs>& loads) override;
  Status Write(const std::vector<store::Write>& batch, std::vector<WriteResult>& results) override;
  Status Transact(const std::string& id, const std::vector<store::Write>& batch,
                  std::vector<WriteResult>& results) override;
  Result<std::vector<Backup>> Backups(const std::string& key) override;
  Result<Record> Read(const std::string& key) override;
  Result<std::vector<std::pair<std::string, std::size_t>>> ReleaseAbandoned(
      const ProfileStore::Abandoned& abandoned) override;

  // `url` with its password (in a URI or a password= pair) replaced by "***": what the logs and
  // the errors show.
  static std::string Redacted(const std::string& url);

 private:
  // The statements prepared on every connection.
  static std::vector<std::pair<std::string, std::string>> Statements();
  // The leases of `loads` (unique keys, one owner and lease time) in one statement.
  Status AcquireChunk(const std::vector<const LoadArgs*>& loads, WallMillis now,
                      std::vector<LoadResult*>& out);
  Status WriteOne(const store::Write& w, WallMillis now, WriteResult& result);
  Status PutBackup(const store::Write& w, int slot, std::uint64_t revision, WallMillis now);

  PgConnection db_;
  PgOptions options_;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PG_DB_H_
