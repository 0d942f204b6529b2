// SPDX-License-Identifier: Apache-2.0
// WorkerPool (workers/pool.h) on its own: real threads, endings posted to a queue the test
// drains as the kernel thread would.
#include "kernel/src/workers/pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

namespace molt::kernel::workers {
namespace {

using std::chrono::milliseconds;

// The kernel thread's queue, as the pool's `post` sees it.
class Outbox {
 public:
  WorkerPool::Post post() {
    return [this](std::function<void()> fn) {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(fn));
      cv_.notify_all();
    };
  }
  // Runs what was posted until `done()` (at most 20 s).
  bool RunUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      std::vector<std::function<void()>> batch;
      {
        std::unique_lock lock(mu_);
        if (!cv_.wait_until(lock, deadline, [&] { return !queue_.empty(); })) {
          return done();
        }
        batch.swap(queue_);
      }
      for (auto& fn : batch) {
        fn();
      }
    }
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::function<void()>> queue_;
};

// Polls `done` (what a worker thread changes without posting) for at most 20 s.
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  return done();
}

// A gate a job waits at until the test opens it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void Wait() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return open; });
  }
  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};

struct Ending {
  std::optional<JobOutcome> outcome;
  bool finished = false;
  int dones = 0;
};

Job J(std::size_t items, std::size_t chunk, Duration timeout,
      std::function<bool(std::size_t)> run) {
  Job job;
  job.items = items;
  job.chunk = chunk;
  job.timeout = timeout;
  job.run = std::move(run);
  return job;
}

Job Track(Ending* e, Job job) {
  job.done = [e](JobOutcome o) {
    e->outcome = o;
    ++e->dones;
  };
  job.finished = [e] {
    EXPECT_TRUE(e->outcome.has_value());  // done comes first
    e->finished = true;
  };
  return job;
}

TEST(WorkerPoolTest, ChunksArePulledByEveryWorkerAndEachItemRunsOnce) {
  Outbox out;
  WorkerPool pool({3, 100}, out.post());
  std::vector<std::atomic<int>> runs(1000);
  std::mutex mu;
  std::set<std::thread::id> threads;
  Ending e;
  ASSERT_TRUE(pool.Submit(Track(&e, J(1000, 7, std::chrono::seconds(10),
                                      [&](std::size_t i) {
                                        runs[i].fetch_add(1);
                                        std::lock_guard lock(mu);
                                        threads.insert(std::this_thread::get_id());
                                        std::this_thread::sleep_for(std::chrono::microseconds(20));
                                        return true;
                                      })))
                  .ok());
  ASSERT_TRUE(out.RunUntil([&] { return e.finished; }));
  EXPECT_EQ(e.outcome->end, JobEnd::kCompleted);
  EXPECT_EQ(e.dones, 1);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].load(), 1) << i;
  }
  EXPECT_GT(threads.size(), 1u);  // idle workers pulled chunks
  EXPECT_EQ(pool.stats().completed, 1u);
}

TEST(WorkerPoolTest, AFailureStopsNewChunksAndWaitsForThoseRunning) {
  Outbox out;
  WorkerPool pool({2, 100}, out.post());
  std::atomic<int> started{0};
  std::atomic<bool> slow_started{false};
  std::atomic<bool> slow_returned{false};
  Ending e;
  // Item 0 is slow; item 5 fails while it runs (once it runs: a chunk a failure comes before
  // runs none of its items); no chunk after item 5's starts.
  ASSERT_TRUE(pool.Submit(Track(&e, J(100, 5, std::chrono::seconds(10),
                                      [&](std::size_t i) {
                                        started.fetch_add(1);
                                        if (i == 0) {
                                          slow_started = true;
                                          std::this_thread::sleep_for(milliseconds(100));
                                          slow_returned = true;
                                        }
                                        for (int n = 0; i == 5 && !slow_started && n < 1000; ++n) {
                                          std::this_thread::sleep_for(milliseconds(10));
                                        }
                                        return i != 5;
                                      })))
                  .ok());
  ASSERT_TRUE(out.RunUntil([&] { return e.finished; }));
  EXPECT_TRUE(slow_returned.load());  // done waited for the chunk still running
  EXPECT_EQ(e.outcome->end, JobEnd::kFailed);
  EXPECT_EQ(e.outcome->failed_item, 5u);
  EXPECT_LT(started.load(), 100);
  EXPECT_EQ(e.dones, 1);
}

TEST(WorkerPoolTest, ATimedOutJobEndsAtOnceAndItsWorkerIsReplaced) {
  Outbox out;
  WorkerPool pool({1, 100}, out.post());
  Gate gate;
  Ending hung, next;
  ASSERT_TRUE(pool.Submit(Track(&hung, J(1, 1, milliseconds(30),
                                         [&](std::size_t) {
                                           gate.Wait();
                                           return true;
                                         })))
                  .ok());
  ASSERT_TRUE(out.RunUntil([&] { return hung.outcome.has_value(); }));
  EXPECT_EQ(hung.outcome->end, JobEnd::kTimedOut);
  EXPECT_FALSE(hung.finished);  // its function still runs
  PoolStats s = pool.stats();
  EXPECT_EQ(s.threads, 1u);
  EXPECT_EQ(s.hung, 1u);
  EXPECT_EQ(s.replaced, 1u);
  // The replacement serves the queue while the old worker is stuck.
  ASSERT_TRUE(
      pool.Submit(Track(&next, J(1, 1, std::chrono::seconds(10), [](std::size_t) { return true; })))
          .ok());
  ASSERT_TRUE(out.RunUntil([&] { return next.finished; }));
  EXPECT_EQ(next.outcome->end, JobEnd::kCompleted);
  gate.Open();
  ASSERT_TRUE(out.RunUntil([&] { return hung.finished; }));
  EXPECT_TRUE(Eventually([&] { return pool.stats().hung == 0; }));
  EXPECT_EQ(hung.dones, 1);
}

TEST(WorkerPoolTest, TheQueueRefusesPastItsBoundAndAfterClose) {
  Outbox out;
  WorkerPool pool({1, 2}, out.post());
  Gate gate;
  Ending a, b, c;
  ASSERT_TRUE(pool.Submit(Track(&a, J(1, 1, std::chrono::seconds(10),
                                      [&](std::size_t) {
                                        gate.Wait();
                                        return true;
                                      })))
                  .ok());
  ASSERT_TRUE(Eventually([&] { return pool.stats().running == 1; }));
  ASSERT_TRUE(
      pool.Submit(Track(&b, J(1, 1, std::chrono::seconds(10), [](std::size_t) { return true; })))
          .ok());
  ASSERT_TRUE(
      pool.Submit(Track(&c, J(1, 1, std::chrono::seconds(10), [](std::size_t) { return true; })))
          .ok());
  Result<std::uint64_t> full =
      pool.Submit(J(1, 1, std::chrono::seconds(10), [](std::size_t) { return true; }));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), Status::Code::kRateLimited);
  EXPECT_EQ(full.status().message(),
            "the worker queue is full (2 jobs wait; workers.queue_max): submit again later");
  pool.Close();
  Result<std::uint64_t> closed =
      pool.Submit(J(1, 1, std::chrono::seconds(10), [](std::size_t) { return true; }));
  ASSERT_FALSE(closed.ok());
  EXPECT_EQ(closed.status().code(), Status::Code::kFailedPrecondition);
  gate.Open();
  ASSERT_TRUE(out.RunUntil([&] { return a.finished && b.finished && c.finished; }));
  EXPECT_EQ(a.outcome->end, JobEnd::kCancelled);  // the close cancels what has not ended
  EXPECT_EQ(b.outcome->end, JobEnd::kCancelled);
  EXPECT_EQ(pool.stats().refused, 2u);
}

TEST(WorkerPoolTest, CancelStopsAJobBeforeItsNextItem) {
  Outbox out;
  WorkerPool pool({1, 100}, out.post());
  Gate gate;
  std::atomic<int> ran{0};
  Ending e;
  Result<std::uint64_t> id =
      pool.Submit(Track(&e, J(10, 10, std::chrono::seconds(10), [&](std::size_t) {
        ran.fetch_add(1);
        gate.Wait();
        return true;
      })));
  ASSERT_TRUE(id.ok());
  while (ran.load() == 0) {
    std::this_thread::yield();
  }
  EXPECT_TRUE(pool.Cancel(*id));
  EXPECT_FALSE(pool.Cancel(*id));  // already ended
  gate.Open();
  ASSERT_TRUE(out.RunUntil([&] { return e.finished; }));
  EXPECT_EQ(e.outcome->end, JobEnd::kCancelled);
  EXPECT_EQ(ran.load(), 1);  // the chunk stopped before its next item
}

TEST(WorkerPoolTest, TheDestructorWaitsForTheFunctionsRunning) {
  std::atomic<bool> returned{false};
  {
    Outbox out;
    WorkerPool pool({2, 100}, out.post());
    ASSERT_TRUE(pool.Submit(J(1, 1, std::chrono::seconds(10),
                              [&](std::size_t) {
                                std::this_thread::sleep_for(milliseconds(50));
                                returned = true;
                                return true;
                              }))
                    .ok());
    ASSERT_TRUE(Eventually([&] { return pool.stats().running == 1 || returned.load(); }));
  }
  EXPECT_TRUE(returned.load());
}

}  // namespace
}  // namespace molt::kernel::workers
