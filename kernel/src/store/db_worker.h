// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/db_worker.h
//
// DbWorker: the profile store's thread (DbStore, db_store.h) and its queue. One thread owns the
// database engine (a ProfileDb, profile_db.h) and runs the queued work in order: jobs (a write, a
// read, a transaction) one at a time, and loads that queue up next to each other (a burst of
// joins) together, up to kMaxLoadsPerTransaction in one LoadMany, their completions handed to
// the deliver function in one call. A load never overtakes a job queued before it. When the
// queue has been quiet for kQuiet the engine may checkpoint (ProfileDb::Checkpoint), so that
// never delays a request. The counters DbStore reports (StoreStats) are kept here, atomic.
//
//   DbWorker worker(std::move(db), [&loop](std::function<void()> fn) { loop.Post(fn); });
//   Status opened = worker.Call([](ProfileDb& db) { return db.Open(); });   // waits
//   worker.PushLoad({{"PlayerData/ada", "host-a", ttl}, std::move(done), Now()});
//
// Only db_store.cc and its test include it. Thread safety: Push, PushLoad, Call and counters()
// from any thread; the engine only on the worker's thread. The destructor (or Stop) runs what is
// queued, then ends the thread and closes the engine there.
#ifndef MOLT_KERNEL_STORE_DB_WORKER_H_
#define MOLT_KERNEL_STORE_DB_WORKER_H_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/store/profile_db.h"
#include "kernel/src/store/profile_store.h"

namespace molt::kernel::store {

// A load waiting for the store's thread.
struct LoadRequest {
  ProfileDb::LoadArgs args;
  Callback<void(LoadResult)> done;
  std::chrono::steady_clock::time_point called{};
};

// A StoreLatency histogram, kept by the store's thread and read from any: atomics.
class LatencyCounters {
 public:
  // One operation called at `since`, done now.
  void Observe(std::chrono::steady_clock::time_point since);
  StoreLatency Read() const;

 private:
  std::array<std::atomic<std::uint64_t>, kStoreLatencyBounds.size() + 1> counts_{};
  std::atomic<std::uint64_t> sum_ns_{0};
};

// What StoreStats counts, as the store's thread keeps it.
struct DbCounters {
  std::atomic<std::uint64_t> loads{0}, busy{0}, batches{0}, writes{0}, stale{0}, failures{0};
  LatencyCounters load_latency, write_latency;
};

class DbWorker {
 public:
  using Job = Callback<void(ProfileDb&)>;
  // Most loads one transaction takes (a burst of joins).
  static constexpr std::size_t kMaxLoadsPerTransaction = 512;
  // How long the queue stays empty before the engine may checkpoint.
  static constexpr std::chrono::milliseconds kQuiet{100};

  // Starts the thread; `db` is used on it only (not opened here: Call() its Open).
  DbWorker(std::unique_ptr<ProfileDb> db, ProfileStore::Deliver deliver);
  ~DbWorker();
  DbWorker(const DbWorker&) = delete;
  DbWorker& operator=(const DbWorker&) = delete;

  // Runs everything queued, then ends the thread (the engine is closed on it). Idempotent.
  void Stop();

  void Push(Job job) { Enqueue(std::move(job)); }
  void PushLoad(LoadRequest load) { Enqueue(std::move(load)); }
  // Runs `fn(db)` on the store's thread after what is queued, waits for it, and returns what it
  // returned (opening, tests: never the kernel's calls).
  template <class F>
  auto Call(F&& fn) {
    using R = decltype(fn(std::declval<ProfileDb&>()));
    std::mutex m;
    std::condition_variable cv;
    std::optional<R> out;
    Push([&](ProfileDb& db) {
      R r = fn(db);
      std::lock_guard lock(m);
      out.emplace(std::move(r));
      cv.notify_one();
    });
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return out.has_value(); });
    return std::move(*out);
  }
  // Hands `fn` to the deliver function (a job's completion, from the store's thread).
  void Post(std::function<void()> fn) { deliver_(std::move(fn)); }

  DbCounters& counters() { return counters_; }
  const DbCounters& counters() const { return counters_; }
  // Operations queued and not finished.
  std::size_t queued() const;

 private:
  using Item = std::variant<Job, LoadRequest>;

  void Enqueue(Item item);
  // The thread: swaps the whole queue out, runs it in order, checkpoints when quiet.
  void Run();
  // Waits for work: false once stopping with nothing queued. A quiet kQuiet checkpoints.
  bool Take(std::vector<Item>& taken);
  // Runs the item at `taken[next]`, with the loads right after it when it is a load; how many
  // items that was.
  std::size_t RunNext(std::vector<Item>& taken, std::size_t next);
  // One LoadMany for `requests`, counted, their completions delivered in one call.
  void RunLoads(std::vector<LoadRequest>& requests);

  std::unique_ptr<ProfileDb> db_;
  ProfileStore::Deliver deliver_;
  DbCounters counters_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Item> items_;  // GUARDED_BY(mu_)
  std::size_t queued_ = 0;   // GUARDED_BY(mu_)
  bool stopping_ = false;    // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_DB_WORKER_H_
