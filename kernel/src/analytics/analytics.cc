// SPDX-License-Identifier: Apache-2.0
// Analytics: the queue on the kernel thread, the JSON Lines writer on its own.
#include "kernel/src/analytics/analytics.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/core/threads.h"

namespace molt::kernel::analytics {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxName = 64;
constexpr std::size_t kMaxFields = 4096;

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxName) {
    return false;
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == ':' || c == '-';
    if (!ok) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string_view DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kSampledOut:
      return "sampled_out";
    case DropReason::kOverCap:
      return "over_cap";
    case DropReason::kInvalid:
      return "invalid";
    case DropReason::kQueueFull:
      return "queue_full";
    case DropReason::kFailed:
      return "failed";
  }
  return "?";
}

Analytics::Analytics(Kernel& kernel, AnalyticsOptions options)
    : kernel_(kernel),
      options_(std::move(options)),
      rng_(options_.seed != 0 ? options_.seed : std::random_device{}()) {
  std::error_code ec;
  if (fs::exists(path(), ec)) {
    file_bytes_ = fs::file_size(path(), ec);
  }
  writer_ = QuietThread([this] { WriterLoop(); });
}

Analytics::~Analytics() {
  Drain();
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  writer_.join();
}

std::string Analytics::path() const { return (fs::path(options_.dir) / "events.jsonl").string(); }

void Analytics::Drop(DropReason reason, std::uint64_t n) {
  dropped_[static_cast<int>(reason)] += n;
}

Status Analytics::Track(std::string_view plugin, std::string_view name, std::string_view user,
                        std::uint64_t session, double value, std::string_view fields) {
  if (!ValidName(name)) {
    Drop(DropReason::kInvalid);
    return Status::InvalidArgument(
        "analytics event name \"" + std::string(name.substr(0, 80)) +
        "\" is not 1 to 64 of [A-Za-z0-9_:-] (no '.': the configuration's "
        "analytics.sample.<name> names it)");
  }
  if (!std::isfinite(value)) {
    Drop(DropReason::kInvalid);
    return Status::InvalidArgument("analytics event \"" + std::string(name) +
                                   "\": its value is not a finite number");
  }
  boost::json::value parsed;
  if (!fields.empty()) {
    boost::system::error_code ec;
    if (fields.size() <= kMaxFields) {
      parsed = boost::json::parse(fields, ec);
    }
    if (fields.size() > kMaxFields || ec || !parsed.is_object()) {
      Drop(DropReason::kInvalid);
      return Status::InvalidArgument("analytics event \"" + std::string(name) +
                                     "\": its fields are not a JSON object of at "
                                     "most 4096 bytes (" +
                                     std::to_string(fields.size()) + " bytes" +
                                     (ec ? ": " + ec.message() : std::string()) + ")");
    }
  }
  if (auto it = options_.sample.find(std::string(name)); it != options_.sample.end()) {
    if (std::uniform_real_distribution<double>(0.0, 1.0)(rng_) >= it->second) {
      Drop(DropReason::kSampledOut);
      return Status::Rejected("analytics event \"" + std::string(name) + "\" sampled out (" +
                              "analytics.sample keeps " + std::to_string(it->second) + ")");
    }
  }
  const TimePoint now = kernel_.scheduler().Now();
  if (options_.max_per_minute > 0) {
    if (window_count_ == 0 || now - window_start_ >= std::chrono::minutes(1)) {
      window_start_ = now;
      window_count_ = 0;
    }
    if (window_count_ >= options_.max_per_minute) {
      Drop(DropReason::kOverCap);
      return Status::Rejected("analytics event \"" + std::string(name) + "\" over the cap of " +
                              std::to_string(options_.max_per_minute) +
                              " a minute (analytics.max_per_minute)");
    }
    ++window_count_;
  }
  if (queued_.load() >= options_.max_queue) {
    Drop(DropReason::kQueueFull);
    return Status::Rejected("analytics event \"" + std::string(name) +
                            "\": " + std::to_string(options_.max_queue) +
                            " events wait to be written already");
  }
  boost::json::object e;
  e["ts_ms"] = WallMs();
  e["name"] = name;
  e["plugin"] = plugin;
  if (!user.empty()) {
    e["user"] = user;
  }
  if (session != 0) {
    e["session"] = session;
  }
  e["value"] = value;
  if (parsed.is_object()) {
    e["fields"] = std::move(parsed);
  }
  pending_.lines.push_back(boost::json::serialize(e));
  ++tracked_;
  ++queued_;
  if (!flush_.Pending()) {
    flush_ = kernel_.scheduler().After(
        options_.flush_after, [this] { Flush(); }, Priority::kLow,
        TaskOrigin::Named("analytics flush"));
  }
  return Status::Ok();
}

void Analytics::Flush() {
  flush_.Cancel();
  if (pending_.lines.empty()) {
    return;
  }
  {
    std::lock_guard lock(mu_);
    batches_.push_back(std::move(pending_));
  }
  pending_ = Batch();
  ++batches_total_;
  work_.notify_one();
}

void Analytics::Drain() {
  Flush();
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return batches_.empty() && !writing_; });
}

AnalyticsStats Analytics::stats() const {
  AnalyticsStats s;
  s.tracked = tracked_.load();
  s.written = written_.load();
  s.batches = batches_total_.load();
  s.queued = queued_.load();
  s.rotations = rotations_.load();
  s.retries = retries_.load();
  for (int i = 0; i < kDropReasonCount; ++i) {
    s.dropped[i] = dropped_[i].load();
  }
  std::lock_guard lock(mu_);
  s.last_error = last_error_;
  return s;
}

void Analytics::WriterLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return stop_ || !batches_.empty(); });
    if (batches_.empty()) {
      return;  // stopped, and nothing is left
    }
    Batch batch = std::move(batches_.front());
    batches_.pop_front();
    writing_ = true;
    lock.unlock();
    Write(batch);
    lock.lock();
    writing_ = false;
    idle_.notify_all();
  }
}

void Analytics::Write(const Batch& batch) {
  const std::uint64_t n = batch.lines.size();
  std::string text;
  for (const std::string& line : batch.lines) {
    text += line;
    text += '\n';
  }
  const std::string failure = options_.http ? Post(text) : WriteFile(text);
  queued_ -= n;
  if (failure.empty()) {
    written_ += n;
    return;
  }
  Drop(DropReason::kFailed, n);
  // The HTTP sink's reasons begin with the URL.
  const std::string why = std::to_string(n) + " analytics events not written" +
                          (options_.http ? std::string() : " to " + path()) + ": " + failure +
                          " (counted as dropped: failed)";
  LogScope("analytics").Warn("{}", why);
  std::lock_guard lock(mu_);
  last_error_ = why;
}

std::string Analytics::WriteFile(const std::string& text) {
  std::error_code ec;
  fs::create_directories(options_.dir, ec);
  RotateIfDue();
  std::FILE* f = std::fopen(path().c_str(), "ab");
  if (f == nullptr) {
    return std::string("cannot open: ") + std::strerror(errno);
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    return std::strerror(wrote ? errno : write_errno);
  }
  file_bytes_ += text.size();
  return std::string();
}

std::string Analytics::Post(const std::string& text) {
  Duration backoff = options_.http_backoff;
  for (std::uint32_t attempt = 0;; ++attempt) {
    const Status s = PostLines(*options_.http, text, options_.http_timeout);
    if (s.ok()) {
      std::lock_guard lock(mu_);
      endpoint_down_ = false;
      return std::string();
    }
    if (s.code() == Status::Code::kRejected) {
      return s.message() + " (not retried: the endpoint refuses the batch itself)";
    }
    std::unique_lock lock(mu_);
    if (attempt >= options_.http_retries || endpoint_down_ || stop_) {
      endpoint_down_ = true;  // the next batches try once each until one gets through
      return s.message() + " (after " + std::to_string(attempt + 1) +
             (attempt == 0 ? " try" : " tries") + ")";
    }
    LogScope("analytics")
        .Warn("{}; sending again in {} ms (retry {} of {})", s.message(),
              std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count(), attempt + 1,
              options_.http_retries);
    ++retries_;
    // The destructor's stop ends the wait: what is left is counted, not waited for.
    work_.wait_for(lock, backoff, [this] { return stop_; });
    backoff = std::min<Duration>(backoff * 2, std::chrono::minutes(1));
  }
}

void Analytics::RotateIfDue() {
  if (file_bytes_ < options_.rotate_bytes) {
    return;
  }
  std::error_code ec;
  const fs::path dir(options_.dir);
  char name[64];
  std::snprintf(name, sizeof name, "events-%013lld-%06llu.jsonl", static_cast<long long>(WallMs()),
                static_cast<unsigned long long>(rotations_.load() % 1000000));
  fs::rename(path(), dir / name, ec);
  if (ec) {
    return;  // the next write tries again, and appends meanwhile
  }
  file_bytes_ = 0;
  ++rotations_;
  std::vector<fs::path> rotated;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("events-", 0) == 0 && e.path().extension() == ".jsonl") {
      rotated.push_back(e.path());
    }
  }
  std::sort(rotated.begin(), rotated.end());  // events-<ms>-<n>: oldest first
  while (rotated.size() > options_.keep_files) {
    fs::remove(rotated.front(), ec);
    rotated.erase(rotated.begin());
  }
}

}  // namespace molt::kernel::analytics
