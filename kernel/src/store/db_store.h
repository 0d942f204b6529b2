// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/db_store.h
//
// DbStore: the ProfileStore over one database engine (a ProfileDb, profile_db.h) used by one
// dedicated thread: no database call runs on the caller's thread, opening included (it waits for
// the store's thread to open it). Every call queues its work and returns; the result comes back
// through the deliver function (the kernel's loop.Post). Loads that queue up next to each other
// (a burst of joins) go to the engine together, in queue order; a load never overtakes a write
// queued before it (the thread and its queue are DbWorker's, db_worker.h). SqliteStore
// (sqlite_store.h) and PgStore (pg_store.h) are its two engines' stores: the kernel holds either
// as a ProfileStore.
//
// Thread safety: the ProfileStore calls are safe from any thread. The destructor finishes what
// was queued, delivers its results, and closes the database.
#ifndef MOLT_KERNEL_STORE_DB_STORE_H_
#define MOLT_KERNEL_STORE_DB_STORE_H_

#include <molt/kernel/status.h>

#include <memory>
#include <string>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/store/profile_db.h"
#include "kernel/src/store/profile_store.h"

namespace molt::kernel::store {

class DbWorker;

class DbStore : public ProfileStore {
 public:
  ~DbStore() override;
  DbStore(const DbStore&) = delete;
  DbStore& operator=(const DbStore&) = delete;

  void Load(std::string key, std::string owner, std::chrono::milliseconds ttl,
            Callback<void(LoadResult)> done) override;
  void Write(std::vector<store::Write> batch,
             Callback<void(Status, std::vector<WriteResult>)> done) override;
  void Read(std::string key, Callback<void(Result<Record>)> done) override;
  void ListBackups(std::string key, Callback<void(Result<std::vector<Backup>>)> done) override;
  void Transact(std::string id, std::vector<store::Write> batch,
                Callback<void(Status, std::vector<WriteResult>)> done) override;
  void ReleaseAbandoned(
      Abandoned abandoned,
      Callback<void(Result<std::vector<std::pair<std::string, std::size_t>>>)> done) override;
  StoreStats stats() const override;

 protected:
  DbStore();
  // Starts the store's thread with `db` and opens it there; the open's status.
  Status Start(std::unique_ptr<ProfileDb> db, Deliver deliver);
  // Runs `fn` on the store's thread with the engine, after what is queued, and waits for it
  // (setting up, tests: never the kernel's calls).
  void CallAndWait(Callback<void(ProfileDb&)> fn);

 private:
  std::unique_ptr<DbWorker> worker_;  // the store's thread and its queue
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_DB_STORE_H_
