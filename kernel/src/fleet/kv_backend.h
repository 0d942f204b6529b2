// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/fleet/kv_backend.h
//
// KvBackend: where the fleet's key-value store (kv_store.h) keeps its data, run synchronously on
// the store's own thread: MemoryKv (memory_kv.h) for a server alone, PgKv (pg_kv.h) on the
// fleet's PostgreSQL. Beside it, what a call is (KvOp), what it answers (KvResult), and the
// refusals both backends word the same way. Every backend gives the same answers for the same
// calls (tests/kernel/fleet/kv_store_test.cc runs one contract on both): expiry enforced on
// every read, an absent key read as absent, a compare-and-set refused with the value now.
//
// Included by the store and its backends. Thread safety: a backend is used by one thread at a
// time (the store's).
#ifndef MOLT_KERNEL_FLEET_KV_BACKEND_H_
#define MOLT_KERNEL_FLEET_KV_BACKEND_H_

#include <molt/kernel/status.h>

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace molt::kernel::fleet {

enum class KvKind { kGet = 1, kSet, kCas, kDelete, kIncrement, kZAdd, kZRemove, kZRange };

struct KvOp {
  KvKind kind = KvKind::kGet;
  std::string key;
  std::string value;                    // set, cas: the new value; zadd, zremove: the member
  std::optional<std::string> expected;  // cas: the value it must have (nullopt: absent)
  double number = 0;                    // increment: by; zadd: the score; zrange: the lowest
  double number2 = 0;                   // zrange: the highest
  std::uint32_t limit = 0;              // zrange (0: 100)
  bool descending = false;              // zrange
  std::int64_t ttl_ms = 0;              // 0: kDefaultTtl
};

struct KvEntry {
  std::string member;
  double score = 0;
};

struct KvResult {
  Status status;
  std::optional<std::string> value;  // get, set, cas (also when refused: the value now)
  std::int64_t number = 0;           // increment: the sum; delete, zremove: 1 if it existed
  std::vector<KvEntry> entries;      // zrange
};

// Where the data is. `now_ms` is the wall clock the store reads for each call: a key whose
// expiry is at or before it reads as absent.
class KvBackend {
 public:
  virtual ~KvBackend() = default;
  // Runs one checked call (KvStore::Problem found nothing wrong, the defaults are filled in).
  virtual KvResult Run(const KvOp& op, std::int64_t now_ms) = 0;
  // Drops what expired at or before `now_ms` (reads skip it already).
  virtual Status Sweep(std::int64_t now_ms) = 0;
};

// A whole number written as text (what increment keeps), or nullopt.
inline std::optional<std::int64_t> KvWholeNumber(std::string_view text) {
  std::int64_t n = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), n);
  return r.ec == std::errc() && r.ptr == text.data() + text.size() ? std::optional(n)
                                                                   : std::nullopt;
}

// An increment of `key`, whose value is not a whole number.
inline Status KvNotWhole(const std::string& key) {
  return Status::InvalidArgument("the value at \"" + key +
                                 "\" is not a whole number: increment needs one (or no value)");
}

// An increment of `key` past 64 bits.
inline Status KvOverflow(const std::string& key) {
  return Status::InvalidArgument("incrementing \"" + key + "\" overflows a 64-bit whole number");
}

}  // namespace molt::kernel::fleet

#endif  // MOLT_KERNEL_FLEET_KV_BACKEND_H_
