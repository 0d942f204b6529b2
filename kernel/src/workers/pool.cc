// SPDX-License-Identifier: Apache-2.0
// The worker pool: a queue of jobs under one mutex, workers pulling chunks, a watchdog for
// timeouts, and one post to the kernel thread per batch of endings.
#include "kernel/src/workers/pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernel/src/core/threads.h"

namespace molt::kernel::workers {

namespace {

struct PoolJob {
  std::uint64_t id = 0;
  Job job;
  std::size_t next = 0;     // the first item no chunk claimed yet
  std::size_t running = 0;  // chunks running now
  bool started = false;
  TimePoint deadline{};
  bool ended = false;  // done is posted (or due once the running chunks return)
  bool done_posted = false;
  std::optional<std::size_t> failed;  // the lowest item that failed
  std::atomic<bool> stop{false};      // a running chunk stops before its next item
  JobEnd end = JobEnd::kCompleted;
};

struct PoolWorker {
  std::thread thread;
  std::shared_ptr<PoolJob> current;  // the job of the chunk it runs
  bool abandoned = false;            // replaced: ends when its chunk returns
  bool exited = false;
};

}  // namespace

struct WorkerPool::State {
  PoolOptions options;
  Post post;
  mutable std::mutex mu;
  std::condition_variable work_cv;             // workers: a job is queued, or quit
  std::condition_variable watch_cv;            // the watchdog: a deadline changed, or quit
  std::condition_variable exit_cv;             // the destructor: a worker exited
  std::deque<std::shared_ptr<PoolJob>> queue;  // jobs with chunks left to claim
  std::vector<std::shared_ptr<PoolJob>> live;  // every job not finished, by id order
  std::list<std::shared_ptr<PoolWorker>> workers;
  std::thread watchdog;
  std::uint64_t next_id = 1;
  bool closed = false;
  bool quit = false;
  bool gone = false;  // the pool is destroyed: a worker left running delivers nothing
  TimePoint watch_until = TimePoint::max();  // when the watchdog wakes next by itself
  // Endings waiting for the kernel thread: one post carries them all.
  std::vector<std::function<void()>> outbox;
  bool posted = false;
  PoolStats counts;

  // REQUIRES mu. Queues `fn` for the kernel thread.
  void Deliver(std::function<void()> fn, std::unique_lock<std::mutex>& lock,
               const std::shared_ptr<State>& self);
  // REQUIRES mu. Ends `j` (if it has not ended): no chunk of it starts any more.
  void End(PoolJob& j, JobEnd end);
  // REQUIRES mu. Posts whatever of `j` is due: done once it ended and (unless it timed out or was
  // cancelled) no chunk runs; finished once done went and no chunk runs.
  void Settle(const std::shared_ptr<PoolJob>& j, std::unique_lock<std::mutex>& lock,
              const std::shared_ptr<State>& self);
  void StartWorker(const std::shared_ptr<State>& self);
  static void WorkerLoop(const std::shared_ptr<State>& self, const std::shared_ptr<PoolWorker>& w);
  static void WatchLoop(const std::shared_ptr<State>& self);
};

void WorkerPool::State::Deliver(std::function<void()> fn, std::unique_lock<std::mutex>&,
                                const std::shared_ptr<State>& self) {
  if (gone) {
    return;  // the pool is destroyed: nobody is left to hear it
  }
  outbox.push_back(std::move(fn));
  if (posted) {
    return;
  }
  posted = true;
  // Posting under the lock keeps endings in order; the loop's queue never calls back into us.
  post([weak = std::weak_ptr<State>(self)] {
    std::shared_ptr<State> s = weak.lock();
    if (s == nullptr) {
      return;
    }
    std::vector<std::function<void()>> batch;
    {
      std::lock_guard lock(s->mu);
      batch.swap(s->outbox);
      s->posted = false;
    }
    for (std::function<void()>& fn : batch) {
      fn();
    }
  });
}

void WorkerPool::State::End(PoolJob& j, JobEnd end) {
  if (j.ended) {
    return;
  }
  j.ended = true;
  j.end = end;
  j.stop.store(true, std::memory_order_relaxed);
  queue.erase(std::remove_if(queue.begin(), queue.end(),
                             [&j](const std::shared_ptr<PoolJob>& q) { return q.get() == &j; }),
              queue.end());
  switch (end) {
    case JobEnd::kCompleted:
      ++counts.completed;
      break;
    case JobEnd::kFailed:
      ++counts.failed;
      break;
    case JobEnd::kTimedOut:
      ++counts.timed_out;
      break;
    case JobEnd::kCancelled:
      ++counts.cancelled;
      break;
  }
}

void WorkerPool::State::Settle(const std::shared_ptr<PoolJob>& j,
                               std::unique_lock<std::mutex>& lock,
                               const std::shared_ptr<State>& self) {
  if (!j->ended && j->next >= j->job.items && j->running == 0) {
    End(*j, j->failed ? JobEnd::kFailed : JobEnd::kCompleted);
  }
  // A failure waits for its outstanding chunks (the caller resumes once, with every result in);
  // a timeout or a cancel does not wait for what may never return.
  const bool abandoned = j->end == JobEnd::kTimedOut || j->end == JobEnd::kCancelled;
  if (j->ended && !j->done_posted && (abandoned || j->running == 0)) {
    j->done_posted = true;
    JobOutcome o{j->end, j->failed.value_or(0)};
    if (j->job.done) {
      Deliver([fn = std::move(j->job.done), o] { fn(o); }, lock, self);
    }
  }
  if (j->done_posted && j->running == 0) {
    live.erase(std::remove(live.begin(), live.end(), j), live.end());
    if (j->job.finished) {
      Deliver(std::move(j->job.finished), lock, self);
    }
    j->job.finished = nullptr;
    j->job.run = nullptr;  // what it captured goes with the last piece, here
  }
}

void WorkerPool::State::StartWorker(const std::shared_ptr<State>& self) {
  auto w = std::make_shared<PoolWorker>();
  workers.push_back(w);
  w->thread = QuietThread([self, w] { WorkerLoop(self, w); });
}

void WorkerPool::State::WorkerLoop(const std::shared_ptr<State>& self,
                                   const std::shared_ptr<PoolWorker>& w) {
  State& s = *self;
  std::unique_lock lock(s.mu);
  for (;;) {
    s.work_cv.wait(lock, [&] { return s.quit || !s.queue.empty(); });
    if (s.quit) {
      break;
    }
    std::shared_ptr<PoolJob> j = s.queue.front();
    const std::size_t begin = j->next;
    const std::size_t end = std::min(j->job.items, begin + std::max<std::size_t>(j->job.chunk, 1));
    j->next = end;
    if (end >= j->job.items) {
      s.queue.pop_front();
    }
    if (!s.queue.empty()) {
      s.work_cv.notify_one();  // more chunks wait: the next idle worker pulls one
    }
    if (!j->started) {
      j->started = true;
      const TimePoint now = RealNow();
      j->deadline =
          j->job.timeout < TimePoint::max() - now ? now + j->job.timeout : TimePoint::max();
      if (j->deadline < s.watch_until) {
        s.watch_cv.notify_one();  // sooner than the watchdog wakes anyway
      }
    }
    ++j->running;
    w->current = j;
    lock.unlock();
    std::optional<std::size_t> failed;
    for (std::size_t i = begin; i < end && !j->stop.load(std::memory_order_relaxed); ++i) {
      if (!j->job.run(i)) {
        failed = i;
        j->stop.store(true, std::memory_order_relaxed);
      }
    }
    lock.lock();
    w->current = nullptr;
    s.exit_cv.notify_all();  // the destructor waits for the chunks running
    --j->running;
    if (failed && (!j->failed || *failed < *j->failed)) {
      j->failed = failed;
    }
    if (failed && !j->ended) {
      // No chunk starts after a failure; the job ends once those running returned.
      s.queue.erase(std::remove(s.queue.begin(), s.queue.end(), j), s.queue.end());
      j->next = j->job.items;
    }
    s.Settle(j, lock, self);
    if (w->abandoned) {
      break;  // replaced while it ran: the pool has its size without it
    }
  }
  w->exited = true;
  if (w->abandoned) {
    --s.counts.hung;
    s.workers.remove(w);  // detached when it was replaced: nobody joins it
  }
  s.exit_cv.notify_all();
}

void WorkerPool::State::WatchLoop(const std::shared_ptr<State>& self) {
  State& s = *self;
  std::unique_lock lock(s.mu);
  while (!s.quit) {
    TimePoint next = TimePoint::max();
    const TimePoint now = RealNow();
    for (const std::shared_ptr<PoolJob>& j : std::vector(s.live)) {
      if (!j->started || j->ended) {
        continue;
      }
      if (j->deadline > now) {
        next = std::min(next, j->deadline);
        continue;
      }
      s.End(*j, JobEnd::kTimedOut);
      for (const std::shared_ptr<PoolWorker>& w : std::vector(s.workers.begin(), s.workers.end())) {
        if (w->current == j && !w->abandoned) {
          w->abandoned = true;
          w->thread.detach();
          ++s.counts.hung;
          ++s.counts.replaced;
          s.StartWorker(self);
        }
      }
      s.Settle(j, lock, self);
    }
    s.watch_until = next;
    if (next == TimePoint::max()) {
      s.watch_cv.wait(lock);
    } else {
      s.watch_cv.wait_until(lock, next);
    }
    s.watch_until = TimePoint::min();  // awake: every new deadline is seen on this pass
  }
}

WorkerPool::WorkerPool(PoolOptions options, Post post) : state_(std::make_shared<State>()) {
  state_->options = options;
  state_->options.threads = std::max<std::size_t>(options.threads, 1);
  state_->post = std::move(post);
  std::unique_lock lock(state_->mu);
  for (std::size_t i = 0; i < state_->options.threads; ++i) {
    state_->StartWorker(state_);
  }
  state_->watchdog = QuietThread([s = state_] { State::WatchLoop(s); });
}

WorkerPool::~WorkerPool() {
  Close();
  State& s = *state_;
  std::unique_lock lock(s.mu);
  // The chunks running finish, each within what is left of its job's timeout; past it the
  // watchdog replaces its worker, which is then left to finish on its own.
  s.exit_cv.wait(lock, [&] {
    return std::none_of(s.workers.begin(), s.workers.end(),
                        [](const std::shared_ptr<PoolWorker>& w) {
                          return !w->abandoned && w->current != nullptr;
                        });
  });
  s.quit = true;
  s.work_cv.notify_all();
  s.watch_cv.notify_all();
  std::vector<std::shared_ptr<PoolWorker>> joinable;
  for (const std::shared_ptr<PoolWorker>& w : s.workers) {
    if (!w->abandoned) {
      joinable.push_back(w);
    }
  }
  lock.unlock();
  for (const std::shared_ptr<PoolWorker>& w : joinable) {
    w->thread.join();
  }
  s.watchdog.join();
  lock.lock();
  s.gone = true;
  std::vector<std::function<void()>> unheard = std::move(s.outbox);
  s.outbox.clear();
  lock.unlock();  // their captures may run destructors that reach back into the pool
}

Result<std::uint64_t> WorkerPool::Submit(Job job) {
  if (!job.run || job.items == 0) {
    return Status::InvalidArgument("a worker job needs a function and at least one item");
  }
  State& s = *state_;
  std::unique_lock lock(s.mu);
  if (s.closed) {
    ++s.counts.refused;
    return Status::FailedPrecondition("the worker pool is closed: the server is shutting down");
  }
  if (s.queue.size() >= s.options.max_queued) {
    ++s.counts.refused;
    return Status::RateLimited("the worker queue is full (" + std::to_string(s.queue.size()) +
                               " jobs wait; workers.queue_max): submit again later");
  }
  auto j = std::make_shared<PoolJob>();
  j->id = s.next_id++;
  j->job = std::move(job);
  s.queue.push_back(j);
  s.live.push_back(j);
  ++s.counts.submitted;
  s.work_cv.notify_one();
  return j->id;
}

bool WorkerPool::Cancel(std::uint64_t id) {
  State& s = *state_;
  std::unique_lock lock(s.mu);
  auto it = std::find_if(s.live.begin(), s.live.end(),
                         [id](const std::shared_ptr<PoolJob>& j) { return j->id == id; });
  if (it == s.live.end() || (*it)->ended) {
    return false;
  }
  std::shared_ptr<PoolJob> j = *it;
  s.End(*j, JobEnd::kCancelled);
  s.Settle(j, lock, state_);
  return true;
}

void WorkerPool::Close() {
  State& s = *state_;
  std::unique_lock lock(s.mu);
  s.closed = true;
  for (const std::shared_ptr<PoolJob>& j : std::vector(s.live)) {
    s.End(*j, JobEnd::kCancelled);
    s.Settle(j, lock, state_);
  }
}

PoolStats WorkerPool::stats() const {
  State& s = *state_;
  std::lock_guard lock(s.mu);
  PoolStats out = s.counts;
  out.queued = s.queue.size();
  out.running = 0;
  out.threads = 0;
  for (const std::shared_ptr<PoolWorker>& w : s.workers) {
    out.running += w->current != nullptr ? 1 : 0;
    out.threads += w->abandoned ? 0 : 1;
  }
  return out;
}

std::size_t WorkerPool::size() const { return state_->options.threads; }

}  // namespace molt::kernel::workers
