// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/live/live_store.h
//
// LiveStore: the live values' overrides and their history in <data>/live.db (SQLite, WAL,
// synchronous=FULL): what an operator set, who and when, and a stamp of the last time a server
// was online, so overrides expire only after `ttl` with no server running (spec: LiveConfig,
// 7 days).
//
//   MOLT_ASSIGN_OR_RETURN(auto store, LiveStore::Open("data/live.db"));
//   MOLT_ASSIGN_OR_RETURN(std::size_t expired, store->ExpireIfIdle(now_ms, ttl_ms));
//   MOLT_ASSIGN_OR_RETURN(LiveChange c, store->Write("shop.price", "12", "ada", now_ms));
//
// Every call is synchronous and commits before it returns. Only live_values.cc (and the tests)
// include this header. Thread safety: one thread at a time (the live values' store thread).
#ifndef MOLT_KERNEL_LIVE_LIVE_STORE_H_
#define MOLT_KERNEL_LIVE_LIVE_STORE_H_

#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace molt::kernel::live {

// A stored override: the value (JSON text), who set it and when (ms since the epoch).
struct StoredValue {
  std::string key;
  std::string value;
  std::string by;
  std::int64_t at_ms = 0;
};

// One entry of the history: a set (value), an unset or an expiry (no value).
struct LiveChange {
  std::int64_t seq = 0;
  std::string key;
  std::optional<std::string> value;
  std::string by;
  std::string action;  // "set", "unset" or "expired"
  std::int64_t at_ms = 0;
};

class LiveStore {
 public:
  // The newest changes kept in the history; older ones are trimmed as new ones come.
  static constexpr std::size_t kHistoryKept = 10000;

  // Opens (creating) the file; an error names the file, the cause and the fix.
  static Result<std::unique_ptr<LiveStore>> Open(const std::string& path);
  ~LiveStore();
  LiveStore(const LiveStore&) = delete;
  LiveStore& operator=(const LiveStore&) = delete;

  // When no server was online in the `ttl_ms` before `now_ms` (the stamp is older, or none was
  // ever written), drops every override, each recorded as "expired"; returns how many. Then
  // stamps `now_ms`.
  Result<std::size_t> ExpireIfIdle(std::int64_t now_ms, std::int64_t ttl_ms);
  // A server is online at `now_ms` (refreshed while one runs).
  Status Stamp(std::int64_t now_ms);
  Result<std::vector<StoredValue>> Overrides() const;
  // A set (`value`, JSON text) or an unset (nullopt) and its history entry, in one transaction.
  Result<LiveChange> Write(const std::string& key, const std::optional<std::string>& value,
                           const std::string& by, std::int64_t at_ms);
  // Newest first; `key` "": every key.
  Result<std::vector<LiveChange>> History(std::string_view key, std::size_t limit) const;

 private:
  LiveStore(std::string path, sqlite3* db);
  Status Exec(const char* sql) const;
  Status Failed(const char* what) const;
  Result<LiveChange> Record(const std::string& key, const std::optional<std::string>& value,
                            const std::string& by, const char* action, std::int64_t at_ms);

  const std::string path_;
  sqlite3* db_;
};

}  // namespace molt::kernel::live

#endif  // MOLT_KERNEL_LIVE_LIVE_STORE_H_
