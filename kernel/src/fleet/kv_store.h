// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/fleet/kv_store.h
//
// KvStore: a key-value store with expiry, shared by the servers of a fleet (the spec's
// MemoryDriver, §9.7; docs/fleet.md, "Key-value store"): values with get, set, compare-and-set,
// delete and increment, and sorted sets with range reads by score, what a matchmaking queue, a
// party or a global leaderboard needs. On the fleet's PostgreSQL it is molt_kv and
// molt_kv_sorted; a server alone keeps one in memory (as the spec's memory store, it is not a
// database: nothing of it survives the server). Expiry is enforced on every read and swept every
// kSweepEvery.
//
//   KvStore kv(url, post_to_kernel, wall_ms);
//   MOLT_RETURN_IF_ERROR(kv.Open());
//   kv.Call(op, [](KvResult r) { ... });          // the kernel thread; `done` there too
//
// The calls run one at a time on a thread of their own, in the order made; the kernel thread
// never waits for them.
//
// Thread safety: Call and stats on the kernel thread.
#ifndef MOLT_KERNEL_FLEET_KV_STORE_H_
#define MOLT_KERNEL_FLEET_KV_STORE_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernel/src/core/serial_thread.h"

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

struct KvStats {
  std::uint64_t calls = 0;
  std::uint64_t failed = 0;   // answered with an error the store gave (not a refusal of the op)
  std::uint64_t refused = 0;  // over kMaxPending
  std::size_t pending = 0;
  bool shared = false;
};

// Where the data is: memory (alone) or PostgreSQL (kv_store.cc).
class KvBackend {
 public:
  virtual ~KvBackend() = default;
  virtual KvResult Run(const KvOp& op, std::int64_t now_ms) = 0;
  virtual Status Sweep(std::int64_t now_ms) = 0;
};

class KvStore {
 public:
  static constexpr std::size_t kMaxKeyBytes = 256;
  static constexpr std::size_t kMaxValueBytes = 64 * 1024;
  static constexpr std::chrono::seconds kDefaultTtl{300};
  static constexpr std::chrono::hours kMaxTtl{24 * 30};
  static constexpr std::uint32_t kDefaultLimit = 100;
  static constexpr std::uint32_t kMaxLimit = 1000;
  static constexpr std::size_t kMaxPending = 1000;
  static constexpr std::chrono::seconds kSweepEvery{30};

  using Post = std::function<void(std::function<void()>)>;

  // `url`: the fleet's database ("" : this server alone, in memory); `post` runs a task on the
  // kernel thread.
  KvStore(std::string url, Post post, std::function<std::int64_t()> wall_ms);
  ~KvStore();
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;

  // Connects and creates the tables (PostgreSQL), starts the thread. An error names the database.
  Status Open();
  // Checks `op` (InvalidArgument naming what is wrong), then runs it; `done` hears the result
  // once, on the kernel thread. RateLimited when kMaxPending calls wait.
  Status Call(KvOp op, std::function<void(KvResult)> done);
  KvStats stats() const { return stats_; }

  // What is wrong with `op` ("" when nothing).
  static std::string Problem(const KvOp& op);

 private:
  void Sweep();  // the store's thread, then again in kSweepEvery

  const std::string url_;
  const Post post_;
  const std::function<std::int64_t()> wall_ms_;
  std::unique_ptr<KvBackend> backend_;  // the store's thread, once open
  KvStats stats_;                       // the kernel thread
  SerialThread thread_;
  std::shared_ptr<KvStore*> alive_ = std::make_shared<KvStore*>(this);
};

}  // namespace molt::kernel::fleet

#endif  // MOLT_KERNEL_FLEET_KV_STORE_H_
