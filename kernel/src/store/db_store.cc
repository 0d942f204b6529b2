// SPDX-License-Identifier: Apache-2.0
// DbStore: one thread owns the database (a ProfileDb: the connection and the SQL) and runs the
// queued operations in order; results go back through the deliver function. Loads next to each
// other in the queue share a transaction; the counters and latencies of stats() are kept here,
// around the database's calls.
#include "kernel/src/store/db_store.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/core/threads.h"

namespace molt::kernel::store {

// A load waiting for the store's thread.
struct LoadRequest {
  ProfileDb::LoadArgs args;
  Callback<void(LoadResult)> done;
  std::chrono::steady_clock::time_point called{};
};

// StoreLatency, kept by the store's thread and read from any: atomics.
struct LatencyCounters {
  std::array<std::atomic<std::uint64_t>, kStoreLatencyBounds.size() + 1> counts{};
  std::atomic<std::uint64_t> sum_ns{0};

  void Observe(std::chrono::steady_clock::time_point since) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - since)
                        .count();
    const double seconds = static_cast<double>(ns) / 1e9;
    std::size_t i = 0;
    while (i < kStoreLatencyBounds.size() && seconds > kStoreLatencyBounds[i]) {
      ++i;
    }
    ++counts[i];
    sum_ns += static_cast<std::uint64_t>(ns);
  }
  StoreLatency Read() const {
    StoreLatency l;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      l.counts[i] = counts[i];
    }
    l.sum_seconds = static_cast<double>(sum_ns.load()) / 1e9;
    return l;
  }
};

// The store's thread and its queue.
class DbStore::Worker {
 public:
  using Job = Callback<void(ProfileDb&)>;
  // Most loads one transaction takes (a burst of joins).
  static constexpr std::size_t kMaxLoadsPerTransaction = 512;

  Worker(std::unique_ptr<ProfileDb> db, ProfileStore::Deliver deliver)
      : db_(std::move(db)), deliver_(std::move(deliver)) {
    thread_ = QuietThread([this] { Run(); });
  }
  ~Worker() { Stop(); }

  // Runs everything queued, then ends the thread. Idempotent.
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) {
      thread_.join();
    }
  }

  void Push(Job job) { Enqueue(std::move(job)); }
  void PushLoad(LoadRequest load) { Enqueue(std::move(load)); }
  // Runs `fn` on the store's thread and waits for it (Open and tests: never the kernel's calls).
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
  void Post(std::function<void()> fn) { deliver_(std::move(fn)); }

  std::atomic<std::uint64_t> loads{0}, busy{0}, batches{0}, writes{0}, stale{0}, failures{0};
  LatencyCounters load_latency, write_latency;
  std::size_t queued() const {
    std::lock_guard lock(mu_);
    return queued_;
  }

 private:
  using Item = std::variant<Job, LoadRequest>;

  void Enqueue(Item item) {
    {
      std::lock_guard lock(mu_);
      items_.push_back(std::move(item));
      ++queued_;
    }
    wake_.notify_one();
  }

  void Run() {
    std::vector<Item> taken;  // what the thread took from the queue in one go, run in order
    std::size_t next = 0;
    for (;;) {
      if (next == taken.size()) {
        taken.clear();
        next = 0;
        std::unique_lock lock(mu_);
        // Quiet for a while: the moment for a checkpoint, which then never delays a request.
        if (!wake_.wait_for(lock, kQuiet, [&] { return stopping_ || !items_.empty(); })) {
          lock.unlock();
          db_->Checkpoint(/*idle=*/true);
          continue;
        }
        if (items_.empty()) {
          break;  // stopping, and everything queued ran
        }
        // The whole queue in one swap: a push from the kernel thread waits at most for the swap,
        // never while this thread sorts a burst into transactions (and the kernel thread gets
        // the last swap's capacity back).
        taken.swap(items_);
      }
      // Loads next to each other in the queue share a transaction; the order of the queue
      // is kept (a load never overtakes a write queued before it).
      Job job;
      std::vector<LoadRequest> loads;
      std::size_t run = 0;  // the loads at the front, up to a transaction's worth
      while (next + run < taken.size() && run < kMaxLoadsPerTransaction &&
             std::holds_alternative<LoadRequest>(taken[next + run])) {
        ++run;
      }
      loads.reserve(run);
      for (std::size_t i = 0; i < run; ++i) {
        loads.push_back(std::move(std::get<LoadRequest>(taken[next++])));
      }
      if (loads.empty()) {
        job = std::move(std::get<Job>(taken[next++]));
      }
      const std::size_t ran = loads.empty() ? 1 : loads.size();
      if (loads.empty()) {
        job(*db_);
      } else {
        RunLoads(loads);
      }
      {
        std::lock_guard lock(mu_);
        queued_ -= ran;
      }
      db_->Checkpoint(/*idle=*/false);  // only when the WAL grew past the busy threshold
    }
    db_.reset();  // closes the file on this thread (its last checkpoint)
  }

  // How long the queue stays empty before the store thread checkpoints.
  static constexpr std::chrono::milliseconds kQuiet{100};

  void RunLoads(std::vector<LoadRequest>& requests) {
    std::vector<ProfileDb::LoadArgs> args;
    args.reserve(requests.size());
    for (LoadRequest& r : requests) {
      args.push_back(std::move(r.args));
    }
    std::vector<LoadResult> results = db_->LoadMany(args);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      ++loads;
      load_latency.Observe(requests[i].called);
      if (results[i].busy()) {
        ++busy;
      } else if (!results[i].status.ok()) {
        ++failures;
      }
    }
    // The batch's completions travel together: one hand-off to the kernel thread (one wake-up)
    // for a burst of joins, not one each.
    auto batch = std::make_shared<std::pair<std::vector<LoadRequest>, std::vector<LoadResult>>>(
        std::move(requests), std::move(results));
    deliver_([batch] {
      auto& [done, loaded] = *batch;
      for (std::size_t i = 0; i < done.size(); ++i) {
        done[i].done(std::move(loaded[i]));
      }
    });
  }

  std::unique_ptr<ProfileDb> db_;
  ProfileStore::Deliver deliver_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Item> items_;
  std::size_t queued_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

DbStore::DbStore() = default;

Status DbStore::Start(std::unique_ptr<ProfileDb> db, Deliver deliver) {
  worker_ = std::make_unique<Worker>(std::move(db), std::move(deliver));
  return worker_->Call([](ProfileDb& d) { return d.Open(); });
}

void DbStore::CallAndWait(Callback<void(ProfileDb&)> fn) {
  worker_->Call([&fn](ProfileDb& db) {
    fn(db);
    return true;
  });
}

DbStore::~DbStore() {
  // What is still queued runs before the thread ends, and its jobs reach the counters and the
  // deliver function through worker_: so the thread is stopped while worker_ still points at
  // it (resetting the pointer first left the jobs a null worker_).
  if (worker_) {
    worker_->Stop();
  }
}

void DbStore::Load(std::string key, std::string owner, std::chrono::milliseconds ttl,
                   Callback<void(LoadResult)> done) {
  worker_->PushLoad(LoadRequest{
      {std::move(key), std::move(owner), ttl}, std::move(done), std::chrono::steady_clock::now()});
}

void DbStore::Write(std::vector<store::Write> batch,
                    Callback<void(Status, std::vector<WriteResult>)> done) {
  auto cb = std::make_shared<Callback<void(Status, std::vector<WriteResult>)>>(std::move(done));
  auto ops = std::make_shared<std::vector<store::Write>>(std::move(batch));
  worker_->Push([this, ops, cb, called = std::chrono::steady_clock::now()](ProfileDb& db) {
    auto results = std::make_shared<std::vector<WriteResult>>();
    auto s = std::make_shared<Status>(db.Write(*ops, *results));
    worker_->write_latency.Observe(called);
    if (s->ok()) {
      ++worker_->batches;
      for (const WriteResult& w : *results) {
        ++(w.status.ok() ? worker_->writes : worker_->stale);
      }
    } else {
      ++worker_->failures;
    }
    worker_->Post([cb, s, results] { (*cb)(std::move(*s), std::move(*results)); });
  });
}

void DbStore::Read(std::string key, Callback<void(Result<Record>)> done) {
  auto cb = std::make_shared<Callback<void(Result<Record>)>>(std::move(done));
  worker_->Push([this, key = std::move(key), cb](ProfileDb& db) {
    auto r = std::make_shared<Result<Record>>(db.Read(key));
    worker_->Post([cb, r] { (*cb)(std::move(*r)); });
  });
}

void DbStore::ListBackups(std::string key, Callback<void(Result<std::vector<Backup>>)> done) {
  auto cb = std::make_shared<Callback<void(Result<std::vector<Backup>>)>>(std::move(done));
  worker_->Push([this, key = std::move(key), cb](ProfileDb& db) {
    auto r = std::make_shared<Result<std::vector<Backup>>>(db.Backups(key));
    worker_->Post([cb, r] { (*cb)(std::move(*r)); });
  });
}

void DbStore::Transact(std::string id, std::vector<store::Write> batch,
                       Callback<void(Status, std::vector<WriteResult>)> done) {
  auto cb = std::make_shared<Callback<void(Status, std::vector<WriteResult>)>>(std::move(done));
  auto ops = std::make_shared<std::vector<store::Write>>(std::move(batch));
  worker_->Push([this, id = std::move(id), ops, cb,
                 called = std::chrono::steady_clock::now()](ProfileDb& db) {
    auto results = std::make_shared<std::vector<WriteResult>>();
    auto s = std::make_shared<Status>(db.Transact(id, *ops, *results));
    worker_->write_latency.Observe(called);
    if (s->ok()) {
      ++worker_->batches;
      worker_->writes += ops->size();
    }
    worker_->Post([cb, s, results] { (*cb)(std::move(*s), std::move(*results)); });
  });
}

void DbStore::ReleaseAbandoned(
    Abandoned abandoned,
    Callback<void(Result<std::vector<std::pair<std::string, std::size_t>>>)> done) {
  using Ended = Result<std::vector<std::pair<std::string, std::size_t>>>;
  auto cb = std::make_shared<Callback<void(Ended)>>(std::move(done));
  worker_->Push([this, abandoned = std::move(abandoned), cb](ProfileDb& db) {
    auto r = std::make_shared<Ended>(db.ReleaseAbandoned(abandoned));
    worker_->Post([cb, r] { (*cb)(std::move(*r)); });
  });
}

StoreStats DbStore::stats() const {
  StoreStats s;
  s.loads = worker_->loads;
  s.busy = worker_->busy;
  s.batches = worker_->batches;
  s.writes = worker_->writes;
  s.stale = worker_->stale;
  s.failures = worker_->failures;
  s.queued = worker_->queued();
  s.load_latency = worker_->load_latency.Read();
  s.write_latency = worker_->write_latency.Read();
  return s;
}

}  // namespace molt::kernel::store
