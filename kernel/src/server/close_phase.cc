// SPDX-License-Identifier: Apache-2.0
// ClosePhase: the ordered stop with a watchdog for the budget.
#include "kernel/src/server/close_phase.h"

#include <chrono>

#include "kernel/src/core/logger.h"

namespace molt::kernel {

ClosePhase::ClosePhase(Kernel& kernel, Duration budget, std::function<void()> over_budget)
    : kernel_(kernel), budget_(budget), over_budget_(std::move(over_budget)) {}

ClosePhase::~ClosePhase() {
  {
    std::lock_guard lock(mu_);
    finished_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) {
    watchdog_.join();
  }
}

bool ClosePhase::Begin(const std::string& reason, const std::function<void()>& done) {
  LogScope log("molt");
  if (begun_ || kernel_.shutting_down()) {
    log.Warn(
        "close ({}) ignored: {}", reason,
        begun_ ? "a close is already running (SIGKILL forces an exit)" : "the kernel is shut down");
    return false;
  }
  begun_ = true;
  const double budget_s = ToSeconds(budget_);
  watchdog_ = std::thread([this, budget_s] {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, budget_, [this] { return finished_; })) {
      LogScope("molt").Warn("close stop phase still running after {:g}s", budget_s);
      if (over_budget_) {
        over_budget_();
      }
    }
  });

  const TimePoint t0 = RealNow();
  log.Info("closing ({}): stopping {} services", reason, kernel_.services().boot_order().size());
  const Value args[] = {Value::String(reason)};
  kernel_.bus().Publish("Kernel.Closing", args);
  kernel_.services().StopAll([&log](const Service& s, Duration d, const Status& st) {
    const double ms = std::chrono::duration<double, std::milli>(d).count();
    if (st.ok()) {
      log.Info("stopped service \"{}\" in {:.1f}ms", s.name(), ms);
    } else {
      log.Warn("stopped service \"{}\" in {:.1f}ms with an error (logged above)", s.name(), ms);
    }
  });
  kernel_.bus().Publish("Kernel.Stopped", args);
  log.Info("stopped ({}): every service stopped in {:.1f}ms", reason, MillisSince(t0));
  {
    std::lock_guard lock(mu_);
    finished_ = true;
  }
  cv_.notify_all();
  if (done) {
    done();
  }
  return true;
}

}  // namespace molt::kernel
