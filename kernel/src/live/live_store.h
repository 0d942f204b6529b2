// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/live/live_store.h
//
// LiveStore: the live values' overrides and their history in <data>/live.db (SQLite, WAL,
// synchronous=FULL): what an operator set, who and when, and a stamp of the last time a server
// was online, so overrides expire only after `ttl` with no server running (spec: LiveConfig,
// 7 days).
//
//   MOLT_ASSIGN_OR_RETURN(auto store, OpenLiveStore("data/live.db"));  // open_live_store.h
//   MOLT_ASSIGN_OR_RETURN(std::size_t expired, store->ExpireIfIdle(now_ms, ttl_ms));
//   MOLT_ASSIGN_OR_RETURN(LiveChange c, store->Write("shop.price", "12", "ada", now_ms));
//
// On a fleet's PostgreSQL (moltd --database) the same tables are shared by every server: a change
// is announced with NOTIFY molt_live, and each server reads the changes it has not seen (Since).
// Every call is synchronous and commits before it returns. Two stores keep that promise:
// SqliteLiveStore (sqlite_live_store.h) and PgLiveStore (pg_live_store.h); OpenLiveStore()
// (open_live_store.h) picks one.
// Only live_values.cc, those two and the tests include this header. Thread safety: one thread
// at a time (the live values' store thread).
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
  // The notification a shared store sends with each change (its seq).
  static constexpr const char* kChannel = "molt_live";

  virtual ~LiveStore() = default;

  // When no server was online in the `ttl_ms` before `now_ms` (the stamp is older, or none was
  // ever written), drops every override, each recorded as "expired"; returns how many. Then
  // stamps `now_ms`.
  virtual Result<std::size_t> ExpireIfIdle(std::int64_t now_ms, std::int64_t ttl_ms) = 0;
  // A server is online at `now_ms` (refreshed while one runs).
  virtual Status Stamp(std::int64_t now_ms) = 0;
  virtual Result<std::vector<StoredValue>> Overrides() = 0;
  // A set (`value`, JSON text) or an unset (nullopt) and its history entry, in one transaction;
  // the change's seq is newer than every one committed before (on a shared store, in the order
  // they commit).
  virtual Result<LiveChange> Write(const std::string& key, const std::optional<std::string>& value,
                                   const std::string& by, std::int64_t at_ms) = 0;
  // Newest first; `key` "": every key.
  virtual Result<std::vector<LiveChange>> History(std::string_view key, std::size_t limit) = 0;
  // The changes newer than `seq`, oldest first, at most `limit`: what the other servers of a
  // shared store wrote.
  virtual Result<std::vector<LiveChange>> Since(std::int64_t seq, std::size_t limit) = 0;
  // The database the other servers share (kChannel announces their changes); "" when this
  // server's alone.
  virtual std::string shared_url() const { return ""; }
};

}  // namespace molt::kernel::live

#endif  // MOLT_KERNEL_LIVE_LIVE_STORE_H_
