// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/analytics/analytics.h
//
// Analytics (spec: Analytics): product events plugins track (analytics_track, ABI 1.5), queued on
// the kernel thread and written off it as JSON Lines, one event a line, to
// <dir>/events.jsonl, rotated by size, or POSTed to an HTTP endpoint (http_sink.h) with retries
// and backoff. Nothing is dropped silently: an event sampled out, over the per-minute cap,
// invalid, past the queue's bound or lost to a failed write is counted by reason.
//
//   Analytics analytics(kernel, options);          // starts the writer thread
//   analytics.Track("shop", "purchase", "ada", 12, 2.5, R"({"item":"gem"})");
//   ...                                            // written 10 s after the first queued event
//   analytics.Drain();                             // the close: everything queued is written
//
// A flush runs `flush_after` after the first event queued since the last one: the kernel thread
// hands the batch to the writer thread and goes on. A batch that cannot be written (the disk is
// full, the directory is gone) is counted as failed, event by event. A batch the endpoint does
// not take is sent again after http_backoff, doubling to a minute, up to http_retries times
// (a 4xx but 408 and 429 is not retried); then it is counted as failed, and later batches are
// tried once each until one gets through (so an endpoint that is down delays the close by one
// batch's retries, not by every batch's). Batches go in order: while one waits for its retry the
// next waits behind it, bounded by max_queue.
//
// Thread safety: Track, Flush and Drain on the kernel thread; stats() from any thread.
#ifndef MOLT_KERNEL_ANALYTICS_ANALYTICS_H_
#define MOLT_KERNEL_ANALYTICS_ANALYTICS_H_

#include <molt/kernel/status.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kernel/src/analytics/http_sink.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/scheduler.h"

namespace molt::kernel {
class Kernel;
}  // namespace molt::kernel

namespace molt::kernel::analytics {

struct AnalyticsOptions {
  std::string dir;                                  // where events.jsonl is written
  Duration flush_after = std::chrono::seconds(10);  // analytics.flush_seconds
  std::uint32_t max_per_minute = 120;               // analytics.max_per_minute; 0: no cap
  std::map<std::string, double> sample;             // analytics.sample: {"name": share kept}
  std::uint64_t seed = 0;                           // analytics.seed; 0: a random one
  std::uint64_t rotate_bytes = 64ull << 20;         // analytics.rotate_bytes
  std::uint32_t keep_files = 10;                    // analytics.keep_files: rotated files kept
  std::size_t max_queue = 10000;                    // events waiting for a flush, at most
  std::optional<HttpEndpoint> http;                 // analytics.http_url: POST, not the file
  std::uint32_t http_retries = 5;                   // analytics.http_retries: after the first try
  Duration http_backoff = std::chrono::seconds(1);  // analytics.http_backoff_seconds: the first
  std::chrono::milliseconds http_timeout = std::chrono::seconds(10);  // a request, at most
};

// Why an event was not written.
enum class DropReason : std::uint8_t {
  kSampledOut,
  kOverCap,
  kInvalid,
  kQueueFull,
  kFailed,
};
inline constexpr int kDropReasonCount = 5;
// "sampled_out", "over_cap", "invalid", "queue_full", "failed".
std::string_view DropReasonName(DropReason reason);

struct AnalyticsStats {
  std::uint64_t tracked = 0;  // queued
  std::uint64_t written = 0;
  std::uint64_t batches = 0;  // flushes handed to the writer
  std::uint64_t queued = 0;   // waiting for a flush or the writer now
  std::uint64_t rotations = 0;
  std::uint64_t retries = 0;  // batches sent to the endpoint again
  std::uint64_t dropped[kDropReasonCount] = {};
  std::string last_error;  // the last failed write's reason
};

class Analytics {
 public:
  Analytics(Kernel& kernel, AnalyticsOptions options);
  Analytics(const Analytics&) = delete;
  Analytics& operator=(const Analytics&) = delete;
  // Drains.
  ~Analytics();

  // Queues one event of `plugin`: `name` ([A-Za-z0-9_:-], 1..64 characters), the user of
  // `session` (empty and 0: none), `value` (finite), `fields` (empty or a JSON object of at most
  // 4096 bytes). Ok when queued; Rejected (sampled out, over the cap, the queue full) or
  // InvalidArgument otherwise, each counted.
  Status Track(std::string_view plugin, std::string_view name, std::string_view user,
               std::uint64_t session, double value, std::string_view fields);
  // Hands what is queued to the writer now.
  void Flush();
  // Flushes and waits until the writer wrote everything (the close). Later events are still
  // queued and written by the next drain or the destructor.
  void Drain();

  AnalyticsStats stats() const;
  const AnalyticsOptions& options() const { return options_; }
  // The file being written.
  std::string path() const;

 private:
  struct Batch {
    std::vector<std::string> lines;  // one JSON object each, without the newline
  };
  void Drop(DropReason reason, std::uint64_t n = 1);
  void WriterLoop();
  void Write(const Batch& batch);
  // The file sink and the HTTP sink: "" when written, otherwise why not.
  std::string WriteFile(const std::string& text);
  std::string Post(const std::string& text);
  void RotateIfDue();

  Kernel& kernel_;
  const AnalyticsOptions options_;
  std::mt19937_64 rng_;
  Batch pending_;     // kernel thread: queued since the last flush
  TaskHandle flush_;  // the flush due for pending_
  TimePoint window_start_{};
  std::uint32_t window_count_ = 0;

  mutable std::mutex mu_;
  std::condition_variable work_;  // the writer waits for batches (or the stop)
  std::condition_variable idle_;  // Drain waits for the writer
  std::deque<Batch> batches_;     // guarded by mu_
  bool writing_ = false;          // guarded by mu_
  bool stop_ = false;             // guarded by mu_
  bool endpoint_down_ = false;    // guarded by mu_: a batch ran out of retries, none got through
  std::string last_error_;        // guarded by mu_
  std::atomic<std::uint64_t> tracked_{0}, written_{0}, batches_total_{0}, queued_{0}, rotations_{0},
      retries_{0};
  std::atomic<std::uint64_t> dropped_[kDropReasonCount] = {};
  std::uint64_t file_bytes_ = 0;  // writer thread: the size of events.jsonl
  std::thread writer_;
};

}  // namespace molt::kernel::analytics

#endif  // MOLT_KERNEL_ANALYTICS_ANALYTICS_H_
