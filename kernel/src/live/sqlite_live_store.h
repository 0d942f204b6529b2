// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/live/sqlite_live_store.h
//
// SqliteLiveStore: the live values' store of a server alone (live_store.h), the file
// <data>/live.db (SQLite, WAL, synchronous=FULL): the overrides, their history (seqs from
// SQLite's AUTOINCREMENT, the newest LiveStore::kHistoryKept kept) and the online stamp in a
// meta table beside the layout. Every call is one transaction, committed before it returns.
//
//   MOLT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteLiveStore> store,
//                         SqliteLiveStore::Open("data/live.db"));
//   MOLT_ASSIGN_OR_RETURN(LiveChange c, store->Write("shop.price", "12", "ada", now_ms));
//
// Only open_live_store.cc (OpenLiveStore) and the tests include it. Thread safety: one thread at a
// time (the live values' store thread).
#ifndef MOLT_KERNEL_LIVE_SQLITE_LIVE_STORE_H_
#define MOLT_KERNEL_LIVE_SQLITE_LIVE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/live/live_store.h"

struct sqlite3;

namespace molt::kernel::store {
class SqliteStatement;
}  // namespace molt::kernel::store

namespace molt::kernel::live {

class SqliteLiveStore final : public LiveStore {
 public:
  // Opens (creating) the file at `path` and its tables; refuses a layout newer than this
  // build's, naming it. An error names the file, the cause and the fix.
  static Result<std::unique_ptr<SqliteLiveStore>> Open(const std::string& path);
  ~SqliteLiveStore() override;
  SqliteLiveStore(const SqliteLiveStore&) = delete;
  SqliteLiveStore& operator=(const SqliteLiveStore&) = delete;

  Result<std::size_t> ExpireIfIdle(std::int64_t now_ms, std::int64_t ttl_ms) override;
  Status Stamp(std::int64_t now_ms) override;
  Result<std::vector<StoredValue>> Overrides() override;
  Result<LiveChange> Write(const std::string& key, const std::optional<std::string>& value,
                           const std::string& by, std::int64_t at_ms) override;
  Result<std::vector<LiveChange>> History(std::string_view key, std::size_t limit) override;
  Result<std::vector<LiveChange>> Since(std::int64_t seq, std::size_t limit) override;

 private:
  SqliteLiveStore(std::string path, sqlite3* db);
  Status Exec(const char* sql) const;
  // A statement that failed: kIoError naming the file, `what` and SQLite's reason.
  Status Failed(const char* what) const;
  // The override's row and the change, without a transaction of its own.
  Result<LiveChange> Record(const std::string& key, const std::optional<std::string>& value,
                            const std::string& by, const char* action, std::int64_t at_ms);
  // The changes a select of the history's columns reads.
  Result<std::vector<LiveChange>> Changes(store::SqliteStatement& st);

  const std::string path_;
  sqlite3* db_;
};

}  // namespace molt::kernel::live

#endif  // MOLT_KERNEL_LIVE_SQLITE_LIVE_STORE_H_
