// SPDX-License-Identifier: Apache-2.0
// Loop: io_context + one steady_timer re-armed only when the scheduler's next wake changes.
#include "kernel/src/core/loop.h"

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <optional>

#include "kernel/src/core/scheduler.h"

namespace molt::kernel {

struct Loop::Impl {
  explicit Impl(Scheduler& s) : scheduler(s), timer(io), guard(boost::asio::make_work_guard(io)) {}

  // Arms the timer for the scheduler's next wake, unless it is already armed for that time.
  void Rearm() {
    const std::optional<TimePoint> wake = scheduler.NextWake();
    if (!wake) {
      if (armed) {
        armed.reset();
        timer.cancel();
      }
      return;
    }
    if (armed && *armed <= *wake) {
      return;  // the armed timer fires first; the step it runs re-arms
    }
    armed = *wake;
    timer.expires_at(std::max(*wake, TimePoint()));
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec) {
        return;  // re-armed for another time, or cancelled
      }
      armed.reset();
      ++wakeups;
      scheduler.Step();
      Rearm();
    });
  }

  Scheduler& scheduler;
  boost::asio::io_context io;
  boost::asio::steady_timer timer;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard;
  std::optional<TimePoint> armed;
  std::atomic<std::uint64_t> wakeups{0};
};

Loop::Loop(Scheduler& scheduler) : impl_(std::make_unique<Impl>(scheduler)) {
  scheduler.SetWakeListener([impl = impl_.get()] { impl->Rearm(); });
  impl_->Rearm();
}

Loop::~Loop() { impl_->scheduler.SetWakeListener(nullptr); }

boost::asio::io_context& Loop::io() { return impl_->io; }

void Loop::Run() {
  impl_->Rearm();
  impl_->io.run();
}

void Loop::RunFor(Duration timeout) {
  impl_->Rearm();
  impl_->io.run_for(timeout);
}

void Loop::Stop() { impl_->io.stop(); }

bool Loop::stopped() const { return impl_->io.stopped(); }

void Loop::Post(std::function<void()> fn) { boost::asio::post(impl_->io, std::move(fn)); }

std::uint64_t Loop::wakeups() const { return impl_->wakeups.load(); }

}  // namespace molt::kernel
