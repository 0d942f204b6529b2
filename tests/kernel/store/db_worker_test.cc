// SPDX-License-Identifier: Apache-2.0
// DbWorker (kernel/src/store/db_worker.h): the profile store's thread and its queue, over a real
// SQLite database in memory: work runs on its own thread in queue order, loads next to each
// other go to the engine together (at most a transaction's worth) with their completions in one
// hand-off, the counters it keeps, and a stop that runs what is queued.
#include "kernel/src/store/db_worker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernel/src/store/sqlite_db.h"

namespace molt::kernel::store {
namespace {

// A worker over an open in-memory SQLite whose deliver function runs each hand-off at once (on
// the store's thread) and counts them.
class DbWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    worker_ = std::make_unique<DbWorker>(
        std::make_unique<SqliteDb>(std::string(kInMemory), SqliteOptions{}),
        [this](std::function<void()> fn) {
          {
            std::lock_guard lock(mu_);
            ++handoffs_;
          }
          fn();
        });
    ASSERT_TRUE(worker_->Call([](ProfileDb& db) { return db.Open(); }).ok());
    ASSERT_TRUE(Drains());
  }
  // A job that holds the thread until Release(): what is pushed meanwhile is queued together.
  // Returns once the job runs, so the thread took nothing pushed after it (a slow wake-up, under
  // ASan, once took the hold with 515 loads, and the burst went in three hand-offs, not two).
  void Hold() {
    auto running = std::make_shared<std::promise<void>>();
    std::future<void> ran = running->get_future();
    worker_->Push([running, f = released_.get_future().share()](ProfileDb&) {
      running->set_value();
      f.wait();
    });
    ran.wait();
  }
  void Release() { released_.set_value(); }
  LoadRequest Load(const std::string& key, std::vector<std::string>* log) {
    return LoadRequest{{key, "host-a", std::chrono::seconds(60)},
                       [this, key, log](LoadResult r) {
                         std::lock_guard lock(mu_);
                         log->push_back(key + (r.status.ok() ? " loaded" : " failed"));
                       },
                       std::chrono::steady_clock::now()};
  }
  // Whether the queue empties within a few seconds (it counts an item done after it ran, so a
  // Call() may return just before).
  bool Drains() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (worker_->queued() != 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    return worker_->queued() == 0;
  }
  int handoffs() {
    std::lock_guard lock(mu_);
    return handoffs_;
  }

  std::mutex mu_;
  int handoffs_ = 0;
  std::promise<void> released_;
  std::unique_ptr<DbWorker> worker_;
};

TEST_F(DbWorkerTest, CallRunsOnTheStoresThreadAndWaitsForItsResult) {
  const std::thread::id caller = std::this_thread::get_id();
  const std::thread::id ran = worker_->Call([](ProfileDb&) { return std::this_thread::get_id(); });
  EXPECT_NE(ran, caller);
  EXPECT_TRUE(Drains());
}

TEST_F(DbWorkerTest, LoadsNextToEachOtherGoTogetherAndNeverOvertakeAJob) {
  std::vector<std::string> log;
  Hold();
  worker_->Push([this, &log](ProfileDb&) {
    std::lock_guard lock(mu_);
    log.push_back("job 1");
  });
  worker_->PushLoad(Load("a", &log));
  worker_->PushLoad(Load("b", &log));
  worker_->Push([this, &log](ProfileDb&) {
    std::lock_guard lock(mu_);
    log.push_back("job 2");
  });
  EXPECT_EQ(worker_->queued(), 5u);
  Release();
  (void)worker_->Call([](ProfileDb&) { return true; });
  EXPECT_EQ(log, (std::vector<std::string>{"job 1", "a loaded", "b loaded", "job 2"}));
  EXPECT_EQ(handoffs(), 1) << "the two loads' completions travel together";
  EXPECT_EQ(worker_->counters().loads, 2u);
  EXPECT_EQ(worker_->counters().busy, 0u);
  EXPECT_TRUE(Drains());
}

TEST_F(DbWorkerTest, ABurstLongerThanATransactionIsSplit) {
  std::vector<std::string> log;
  Hold();
  for (std::size_t i = 0; i < DbWorker::kMaxLoadsPerTransaction + 10; ++i) {
    worker_->PushLoad(Load("k" + std::to_string(i), &log));
  }
  Release();
  (void)worker_->Call([](ProfileDb&) { return true; });
  EXPECT_EQ(log.size(), DbWorker::kMaxLoadsPerTransaction + 10);
  EXPECT_EQ(log.front(), "k0 loaded");
  EXPECT_EQ(log.back(), "k" + std::to_string(DbWorker::kMaxLoadsPerTransaction + 9) + " loaded");
  EXPECT_EQ(handoffs(), 2) << "512, then 10";
  const StoreLatency latency = worker_->counters().load_latency.Read();
  std::uint64_t observed = 0;
  for (std::uint64_t c : latency.counts) {
    observed += c;
  }
  EXPECT_EQ(observed, DbWorker::kMaxLoadsPerTransaction + 10);
}

TEST_F(DbWorkerTest, ALeaseHeldElsewhereCountsAsBusy) {
  std::vector<std::string> log;
  worker_->PushLoad(Load("a", &log));
  LoadRequest other = Load("a", &log);
  other.args.owner = "host-b";
  worker_->PushLoad(std::move(other));
  (void)worker_->Call([](ProfileDb&) { return true; });
  EXPECT_EQ(log, (std::vector<std::string>{"a loaded", "a failed"}));
  EXPECT_EQ(worker_->counters().busy, 1u);
  EXPECT_EQ(worker_->counters().failures, 0u);
}

TEST_F(DbWorkerTest, StopRunsWhatIsQueuedFirst) {
  std::vector<std::string> log;
  Hold();
  for (int i = 0; i < 3; ++i) {
    worker_->Push([this, &log, i](ProfileDb&) {
      std::lock_guard lock(mu_);
      log.push_back("job " + std::to_string(i));
    });
  }
  std::thread releaser([this] { Release(); });
  worker_->Stop();
  releaser.join();
  EXPECT_EQ(log, (std::vector<std::string>{"job 0", "job 1", "job 2"}));
  worker_->Stop();  // idempotent
}

}  // namespace
}  // namespace molt::kernel::store
