// SPDX-License-Identifier: Apache-2.0
// PgListener: LISTEN on a thread of its own, a wake per notification and per poll (pg_listener.h).
#include "kernel/src/store/pg_listener.h"

#include <algorithm>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/core/threads.h"
#include "kernel/src/store/pg_connection.h"

namespace molt::kernel::store {
namespace {

const LogScope kListenLog("Fleet");

}  // namespace

PgListener::PgListener(std::string url, std::string what, std::string channel,
                       std::chrono::milliseconds poll, std::function<void()> wake)
    : url_(std::move(url)),
      what_(std::move(what)),
      channel_(std::move(channel)),
      poll_(poll),
      wake_(std::move(wake)),
      thread_(QuietThread([this] { Run(); })) {}

PgListener::~PgListener() { Stop(); }

void PgListener::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

bool PgListener::Stopped(std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, wait, [this] { return stop_; });
}

void PgListener::Run() {
  using Clock = std::chrono::steady_clock;
  PgConnection listener(url_, what_ + " (listening)", 2);
  std::chrono::milliseconds backoff{1000};
  std::string last_error;
  Clock::time_point next_poll = Clock::now();  // the first wake at once
  bool listening = false;
  while (!Stopped(std::chrono::milliseconds(0))) {
    if (!listening) {
      Status s = listener.Connect(/*prepare=*/false);
      if (s.ok()) {
        s = listener.Listen(channel_);
      }
      if (!s.ok()) {
        if (s.message() != last_error) {
          last_error = s.message();
          kListenLog.Warn("{}: read every {} s only until this works: {}", what_,
                          std::chrono::duration_cast<std::chrono::seconds>(poll_).count(),
                          s.message());
        }
        if (Clock::now() >= next_poll) {
          next_poll = Clock::now() + poll_;
          wake_();
        }
        if (Stopped(backoff)) {
          return;
        }
        backoff = std::min(backoff * 2, std::max(poll_, std::chrono::milliseconds(1000)));
        continue;
      }
      if (!last_error.empty()) {
        kListenLog.Info("listening for {} again", what_);
        last_error.clear();
      }
      listening = true;
      backoff = std::chrono::milliseconds(1000);
      wake_();  // what was written while nobody listened
      next_poll = Clock::now() + poll_;
    }
    Result<std::vector<std::string>> got = listener.Notifications(200);
    if (!got.ok()) {
      listening = false;
      continue;
    }
    if (!got->empty() || Clock::now() >= next_poll) {
      next_poll = Clock::now() + poll_;
      wake_();
    }
  }
}

}  // namespace molt::kernel::store
