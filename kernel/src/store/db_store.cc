// SPDX-License-Identifier: Apache-2.0
// DbStore: each ProfileStore call queued for the store's thread (DbWorker, db_worker.h), which
// owns the database (a ProfileDb: the connection and the SQL) and runs them in order; results go
// back through the deliver function. The writes' counters and latencies are kept here, around the
// database's calls; the loads' by the worker, which runs them in bursts.
#include "kernel/src/store/db_store.h"

#include <utility>
#include <vector>

#include "kernel/src/store/db_worker.h"

namespace molt::kernel::store {

DbStore::DbStore() = default;

Status DbStore::Start(std::unique_ptr<ProfileDb> db, Deliver deliver) {
  worker_ = std::make_unique<DbWorker>(std::move(db), std::move(deliver));
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
    worker_->counters().write_latency.Observe(called);
    if (s->ok()) {
      ++worker_->counters().batches;
      for (const WriteResult& w : *results) {
        ++(w.status.ok() ? worker_->counters().writes : worker_->counters().stale);
      }
    } else {
      ++worker_->counters().failures;
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
    worker_->counters().write_latency.Observe(called);
    if (s->ok()) {
      ++worker_->counters().batches;
      worker_->counters().writes += ops->size();
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
  const DbCounters& c = worker_->counters();
  StoreStats s;
  s.loads = c.loads;
  s.busy = c.busy;
  s.batches = c.batches;
  s.writes = c.writes;
  s.stale = c.stale;
  s.failures = c.failures;
  s.queued = worker_->queued();
  s.load_latency = c.load_latency.Read();
  s.write_latency = c.write_latency.Read();
  return s;
}

}  // namespace molt::kernel::store
