// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/live/pg_live_store.h
//
// PgLiveStore: the live values' store on a fleet's PostgreSQL (live_store.h), shared by every
// server of it: molt_live_overrides, molt_live_changes and molt_live_meta (the last seq, the
// online stamp). A change takes the next seq with the meta row locked, so seqs commit in order
// across servers, and is announced with NOTIFY molt_live (LiveStore::kChannel) at its commit;
// each server reads what it has not seen with Since().
//
//   MOLT_ASSIGN_OR_RETURN(std::unique_ptr<PgLiveStore> store, PgLiveStore::Open(url));
//   MOLT_ASSIGN_OR_RETURN(LiveChange c, store->Write("shop.price", "12", "ada", now_ms));
//
// Only open_live_store.cc (OpenLiveStore) and the tests include it. Thread safety: one thread at a
// time (the live values' store thread).
#ifndef MOLT_KERNEL_LIVE_PG_LIVE_STORE_H_
#define MOLT_KERNEL_LIVE_PG_LIVE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/live/live_store.h"
#include "kernel/src/store/pg_connection.h"

namespace molt::kernel::live {

class PgLiveStore final : public LiveStore {
 public:
  // Connects to `url`, creates the tables (layout 1 of "live" in molt_schema; a newer one is
  // refused naming the fix) and prepares the statements. An error names the database.
  static Result<std::unique_ptr<PgLiveStore>> Open(const std::string& url);
  PgLiveStore(const PgLiveStore&) = delete;
  PgLiveStore& operator=(const PgLiveStore&) = delete;

  Result<std::size_t> ExpireIfIdle(std::int64_t now_ms, std::int64_t ttl_ms) override;
  Status Stamp(std::int64_t now_ms) override;
  Result<std::vector<StoredValue>> Overrides() override;
  Result<LiveChange> Write(const std::string& key, const std::optional<std::string>& value,
                           const std::string& by, std::int64_t at_ms) override;
  Result<std::vector<LiveChange>> History(std::string_view key, std::size_t limit) override;
  Result<std::vector<LiveChange>> Since(std::int64_t seq, std::size_t limit) override;
  std::string shared_url() const override { return url_; }

 private:
  explicit PgLiveStore(std::string url);
  Status Connect();
  // The override's row and the change under the next seq, announced at the commit; inside the
  // caller's transaction (the seq row stays locked until it ends, so seqs commit in order).
  Result<LiveChange> Record(const std::string& key, const std::optional<std::string>& value,
                            const std::string& by, const char* action, std::int64_t at_ms);
  static std::vector<LiveChange> Changes(const store::PgRows& rows);

  const std::string url_;
  store::PgConnection db_;
};

}  // namespace molt::kernel::live

#endif  // MOLT_KERNEL_LIVE_PG_LIVE_STORE_H_
