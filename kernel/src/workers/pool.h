// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/workers/pool.h
//
// WorkerPool (spec: ActorPool): threads that run CPU-heavy jobs off the kernel thread, so a
// pathfinding or world-generation job never stalls a tick. A job is `items` calls of one function
// on workers, in chunks that idle workers pull from the front of the queue (a single job is one
// item); how it ended is posted back to the kernel thread, once.
//
//   WorkerPool pool({.threads = 3}, [&loop](auto fn) { loop.Post(std::move(fn)); });
//   pool.Submit({.items = n, .chunk = 8, .timeout = 10s,
//                .run = [out](std::size_t i) { (*out)[i] = Solve(i); return true; },
//                .done = [](JobOutcome o) { ... },          // on the kernel thread
//                .finished = [out] { ... }});               // no piece of it runs any more
//
// The end of a job, posted through `post` (the kernel thread's queue) as `done`:
//   - completed: every item ran and returned true;
//   - failed: an item returned false. No chunk starts after it; the chunks running end (a running
//     chunk stops before its next item), and then `done` hears the lowest item seen to fail (the
//     first in time may be a later one: chunks run in parallel);
//   - timed out: `timeout` passed since its first chunk started. A worker cannot be killed: the
//     job is abandoned (no chunk starts, `done` hears it at once) and each worker still running a
//     chunk of it is replaced by a new thread, so the pool keeps its size; the old one ends when
//     the chunk returns, if ever;
//   - cancelled (Cancel): as a timeout, without replacing the workers.
// `finished` follows `done`, once no chunk of the job runs any more: what `run` uses may go then.
//
// Thread safety: Submit, Cancel and the destructor from one thread (the kernel thread); stats()
// from any thread. `run` on workers; `done` and `finished` on whatever thread `post` runs them.
#ifndef MOLT_KERNEL_WORKERS_POOL_H_
#define MOLT_KERNEL_WORKERS_POOL_H_

#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "kernel/src/core/clock.h"

namespace molt::kernel::workers {

struct PoolOptions {
  std::size_t threads = 1;         // workers; at least 1
  std::size_t max_queued = 10000;  // jobs waiting for a worker; past it Submit refuses
};

enum class JobEnd : std::uint8_t { kCompleted, kFailed, kTimedOut, kCancelled };

struct JobOutcome {
  JobEnd end = JobEnd::kCompleted;
  std::size_t failed_item = 0;  // kFailed: the lowest item seen to return false
};

struct Job {
  std::size_t items = 1;
  std::size_t chunk = 1;  // items a worker takes at once; 0 is 1
  Duration timeout = std::chrono::seconds(10);
  // On a worker, once per item (items of one chunk in order, chunks in parallel): false fails the
  // job at this item.
  std::function<bool(std::size_t item)> run;
  std::function<void(JobOutcome)> done;
  std::function<void()> finished;
};

struct PoolStats {
  std::uint64_t threads = 0;  // workers serving the queue
  std::uint64_t hung = 0;     // replaced workers whose chunk has not returned yet
  std::uint64_t queued = 0;   // jobs with chunks waiting for a worker
  std::uint64_t running = 0;  // chunks running now
  std::uint64_t submitted = 0;
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  std::uint64_t timed_out = 0;
  std::uint64_t cancelled = 0;
  std::uint64_t refused = 0;   // Submit past max_queued, or after Close()
  std::uint64_t replaced = 0;  // workers replaced after a timeout, since the start
};

class WorkerPool {
 public:
  // Queues a function for the kernel thread, to run after Post returns (Loop::Post).
  using Post = std::function<void(std::function<void()>)>;
  WorkerPool(PoolOptions options, Post post);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  // Close(), then waits for the chunks running: each for at most what is left of its job's
  // timeout; a worker past it is left to finish on its own.
  ~WorkerPool();

  // The job's id (never 0). kRateLimited "the worker queue is full (N jobs wait)" past
  // max_queued; kFailedPrecondition once closed; kInvalidArgument without `run` or items.
  Result<std::uint64_t> Submit(Job job);
  // Ends a job not ended yet as cancelled; false when it already ended (or never existed).
  bool Cancel(std::uint64_t id);
  // Refuses new jobs and cancels every job not ended; a chunk running stops before its next item.
  void Close();

  PoolStats stats() const;
  std::size_t size() const;

  struct State;  // shared with the threads (pool.cc)

 private:
  std::shared_ptr<State> state_;
};

}  // namespace molt::kernel::workers

#endif  // MOLT_KERNEL_WORKERS_POOL_H_
