// SPDX-License-Identifier: Apache-2.0
// DbWorker: the profile store's thread and its queue (db_worker.h). The kernel thread pushes
// under the mutex; the store's thread takes the whole queue in one swap and runs it in order.
#include "kernel/src/store/db_worker.h"

#include "kernel/src/core/threads.h"

namespace molt::kernel::store {

void LatencyCounters::Observe(std::chrono::steady_clock::time_point since) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since)
          .count();
  const double seconds = static_cast<double>(ns) / 1e9;
  std::size_t i = 0;
  while (i < kStoreLatencyBounds.size() && seconds > kStoreLatencyBounds[i]) {
    ++i;
  }
  ++counts_[i];
  sum_ns_ += static_cast<std::uint64_t>(ns);
}

StoreLatency LatencyCounters::Read() const {
  StoreLatency l;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    l.counts[i] = counts_[i];
  }
  l.sum_seconds = static_cast<double>(sum_ns_.load()) / 1e9;
  return l;
}

DbWorker::DbWorker(std::unique_ptr<ProfileDb> db, ProfileStore::Deliver deliver)
    : db_(std::move(db)), deliver_(std::move(deliver)) {
  thread_ = QuietThread([this] { Run(); });
}

DbWorker::~DbWorker() { Stop(); }

void DbWorker::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) {
    thread_.join();
  }
}

std::size_t DbWorker::queued() const {
  std::lock_guard lock(mu_);
  return queued_;
}

void DbWorker::Enqueue(Item item) {
  {
    std::lock_guard lock(mu_);
    items_.push_back(std::move(item));
    ++queued_;
  }
  wake_.notify_one();
}

void DbWorker::Run() {
  std::vector<Item> taken;  // what the thread took from the queue in one go, run in order
  std::size_t next = 0;
  for (;;) {
    if (next == taken.size()) {
      taken.clear();
      next = 0;
      if (!Take(taken)) {
        break;  // stopping, and everything queued ran
      }
    }
    const std::size_t ran = RunNext(taken, next);
    next += ran;
    {
      std::lock_guard lock(mu_);
      queued_ -= ran;
    }
    db_->Checkpoint(/*idle=*/false);  // only when the WAL grew past the busy threshold
  }
  db_.reset();  // closes the file on this thread (its last checkpoint)
}

bool DbWorker::Take(std::vector<Item>& taken) {
  for (;;) {
    std::unique_lock lock(mu_);
    // Quiet for a while: the moment for a checkpoint, which then never delays a request.
    if (!wake_.wait_for(lock, kQuiet, [&] { return stopping_ || !items_.empty(); })) {
      lock.unlock();
      db_->Checkpoint(/*idle=*/true);
      continue;
    }
    if (items_.empty()) {
      return false;
    }
    // The whole queue in one swap: a push from the kernel thread waits at most for the swap,
    // never while this thread sorts a burst into transactions (and the kernel thread gets the
    // last swap's capacity back).
    taken.swap(items_);
    return true;
  }
}

std::size_t DbWorker::RunNext(std::vector<Item>& taken, std::size_t next) {
  // Loads next to each other in the queue share a transaction; the order of the queue is kept
  // (a load never overtakes a write queued before it).
  std::size_t run = 0;  // the loads at the front, up to a transaction's worth
  while (next + run < taken.size() && run < kMaxLoadsPerTransaction &&
         std::holds_alternative<LoadRequest>(taken[next + run])) {
    ++run;
  }
  if (run == 0) {
    Job job = std::move(std::get<Job>(taken[next]));
    job(*db_);
    return 1;
  }
  std::vector<LoadRequest> loads;
  loads.reserve(run);
  for (std::size_t i = 0; i < run; ++i) {
    loads.push_back(std::move(std::get<LoadRequest>(taken[next + i])));
  }
  RunLoads(loads);
  return run;
}

void DbWorker::RunLoads(std::vector<LoadRequest>& requests) {
  std::vector<ProfileDb::LoadArgs> args;
  args.reserve(requests.size());
  for (LoadRequest& r : requests) {
    args.push_back(std::move(r.args));
  }
  std::vector<LoadResult> results = db_->LoadMany(args);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    ++counters_.loads;
    counters_.load_latency.Observe(requests[i].called);
    if (results[i].busy()) {
      ++counters_.busy;
    } else if (!results[i].status.ok()) {
      ++counters_.failures;
    }
  }
  // The batch's completions travel together: one hand-off to the kernel thread (one wake-up) for
  // a burst of joins, not one each.
  auto batch = std::make_shared<std::pair<std::vector<LoadRequest>, std::vector<LoadResult>>>(
      std::move(requests), std::move(results));
  deliver_([batch] {
    auto& [done, loaded] = *batch;
    for (std::size_t i = 0; i < done.size(); ++i) {
      done[i].done(std::move(loaded[i]));
    }
  });
}

}  // namespace molt::kernel::store
