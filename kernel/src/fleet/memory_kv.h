// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/fleet/memory_kv.h
//
// MemoryKv: the key-value store's backend for a server alone (kv_backend.h): values and sorted
// sets in two maps, each with its expiry, read as absent once expired and dropped by Sweep. As
// the spec's memory store it is not a database: nothing of it survives the server.
//
//   MemoryKv kv;
//   KvResult r = kv.Run(op, now_ms);
//
// Only the store (kv_store.cc) and its test include it. Thread safety: one thread at a time (the
// store's).
#ifndef MOLT_KERNEL_FLEET_MEMORY_KV_H_
#define MOLT_KERNEL_FLEET_MEMORY_KV_H_

#include <cstdint>
#include <map>
#include <string>

#include "kernel/src/fleet/kv_backend.h"

namespace molt::kernel::fleet {

class MemoryKv final : public KvBackend {
 public:
  KvResult Run(const KvOp& op, std::int64_t now_ms) override;
  Status Sweep(std::int64_t now_ms) override;

 private:
  struct Value {
    std::string data;
    std::int64_t expires = 0;
  };
  struct Sorted {
    std::map<std::string, double> members;
    std::int64_t expires = 0;
  };
  // The value at `key` unless it expired by `now`.
  Value* Live(const std::string& key, std::int64_t now);
  KvResult Increment(const KvOp& op, std::int64_t now);
  KvResult Range(const KvOp& op, std::int64_t now) const;

  std::map<std::string, Value> values_;
  std::map<std::string, Sorted> sorted_;
};

}  // namespace molt::kernel::fleet

#endif  // MOLT_KERNEL_FLEET_MEMORY_KV_H_
