// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/fleet/kv_store.h
//
// KvStore: a key-value store with expiry, shared by the servers of a fleet (the spec's
// MemoryDriver, §9.7; docs/fleet.md, "Key-value store"): values with get, set, compare-and-set,
// delete and increment, and sorted sets with range reads by score, what a matchmaking queue, a
// party or a global leaderboard needs. On the fleet's PostgreSQL it is molt_kv and
// molt_kv_sorted; a server alone keeps one in memory (as the spec's memory store, it is not a
// database: nothing of it survives the server). Expiry is enforced on every read and swept every
// kSweepEvery. The data is a KvBackend's (kv_backend.h): MemoryKv (memory_kv.h) alone, PgKv
// (pg_kv.h) on the fleet's database.
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
#include "kernel/src/fleet/kv_backend.h"

namespace molt::kernel::fleet {

struct KvStats {
  std::uint64_t calls = 0;
  std::uint64_t failed = 0;   // answered with an error the store gave (not a refusal of the op)
  std::uint64_t refused = 0;  // over kMaxPending
  std::size_t pending = 0;
  bool shared = false;
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
