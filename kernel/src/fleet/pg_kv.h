// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/fleet/pg_kv.h
//
// PgKv: the key-value store's backend on the fleet's PostgreSQL (kv_backend.h), shared by every
// server of the fleet: values in molt_kv, sorted sets in molt_kv_sorted, each row with its expiry
// (read as absent once past it, deleted by Sweep). A compare-and-set or an increment locks its
// row, so two servers deciding on one key take turns; a call with the database away answers its
// error, and the connection is made again on the next call (store::PgConnection).
//
//   PgKv kv(url);
//   MOLT_RETURN_IF_ERROR(kv.Open());      // connects, creates the tables, prepares
//   KvResult r = kv.Run(op, now_ms);
//
// Only the store (kv_store.cc) and its test include it. Thread safety: one thread at a time (the
// store's).
#ifndef MOLT_KERNEL_FLEET_PG_KV_H_
#define MOLT_KERNEL_FLEET_PG_KV_H_

#include <cstdint>
#include <string>

#include "kernel/src/fleet/kv_backend.h"
#include "kernel/src/store/pg_connection.h"

namespace molt::kernel::fleet {

class PgKv final : public KvBackend {
 public:
  // Nothing is connected until Open().
  explicit PgKv(const std::string& url);

  // Connects, creates the tables (layout 1 of "kv" in molt_schema) and prepares the statements.
  // An error names the database.
  Status Open();
  KvResult Run(const KvOp& op, std::int64_t now_ms) override;
  Status Sweep(std::int64_t now_ms) override;

 private:
  // Run() on a live connection: the result's fields filled in `r`, its status returned.
  Status RunConnected(const KvOp& op, std::int64_t now, KvResult& r);
  // Compare-and-set and increment: the row locked, read, decided here, written. An absent key
  // gets an expired row first (it reads as absent), so that two servers deciding on the same
  // absent key take turns too.
  Status Locked(const KvOp& op, std::int64_t now, std::int64_t until, const std::string& what,
                KvResult& r);

  store::PgConnection db_;
};

}  // namespace molt::kernel::fleet

#endif  // MOLT_KERNEL_FLEET_PG_KV_H_
