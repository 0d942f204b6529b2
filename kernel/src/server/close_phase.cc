// SPDX-License-Identifier: Apache-2.0
// ClosePhase: the ordered stops, the drain beside them, a watchdog for the times.
#include "kernel/src/server/close_phase.h"

#include <chrono>

#include "kernel/src/core/logger.h"

namespace molt::kernel {

ClosePhase::ClosePhase(Kernel& kernel, Limits limits, std::function<void()> over_deadline)
    : kernel_(kernel), limits_(limits), over_deadline_(std::move(over_deadline)) {}

ClosePhase::~ClosePhase() {
  Advance(Stage::kFinished);
  if (watchdog_.joinable()) {
    watchdog_.join();
  }
}

void ClosePhase::Advance(Stage stage) {
  {
    std::lock_guard lock(mu_);
    stage_ = std::max(stage_, stage);
  }
  cv_.notify_all();
}

void ClosePhase::Finish() { Advance(Stage::kFinished); }

// The budget's warning, then the deadline's cut: each only when its stage was not reached.
void ClosePhase::Watch(Duration budget, Duration deadline) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, budget, [this] { return stage_ >= Stage::kStopped; })) {
    LogScope("molt").Warn("close stop phase still running after {:g}s", ToSeconds(budget));
  }
  if (deadline == Duration::max()) {
    cv_.wait(lock, [this] { return stage_ >= Stage::kFinished; });
    return;
  }
  if (!cv_.wait_until(lock, t0 + deadline, [this] { return stage_ >= Stage::kFinished; })) {
    LogScope("molt").Error(
        "the close did not finish in {:g} s: the kernel thread is stuck in code that has no "
        "deadline (a plugin's release function or a native service's stop); it ends here, and "
        "the profiles not yet saved keep their last autosave",
        ToSeconds(deadline));
    if (over_deadline_) {
      over_deadline_();
    }
  }
}

void ClosePhase::DrainOnce() {
  if (std::function<void()> drain = std::exchange(drain_, nullptr)) {
    drain();
  }
}

bool ClosePhase::Begin(const std::string& reason, Hooks hooks) {
  LogScope log("molt");
  if (begun_ || kernel_.shutting_down()) {
    log.Warn(
        "close ({}) ignored: {}", reason,
        begun_ ? "a close is already running (SIGKILL forces an exit)" : "the kernel is shut down");
    return false;
  }
  begun_ = true;
  drain_ = std::move(hooks.drain);
  Advance(Stage::kStopping);
  watchdog_ = std::thread([this] { Watch(limits_.budget, limits_.deadline); });

  const TimePoint t0 = RealNow();
  log.Info("closing ({}): stopping {} services", reason, kernel_.services().boot_order().size());
  const Value args[] = {Value::String(reason)};
  kernel_.bus().Publish("Kernel.Closing", args);
  kernel_.services().StopAll(
      [this, &log, t0](const Service& s, Duration d, const Status& st) {
        const double ms = std::chrono::duration<double, std::milli>(d).count();
        if (st.ok()) {
          log.Info("stopped service \"{}\" in {:.1f}ms", s.name(), ms);
        } else if (st.code() == Status::Code::kTimedOut) {  // logged by StopAll; summed up below
          overruns_.push_back(fmt::format("{} ({:.1f} s)", s.name(), ms / 1000));
        } else {
          log.Warn("stopped service \"{}\" in {:.1f}ms with an error (logged above)", s.name(), ms);
        }
        if (RealNow() - t0 >= limits_.drain_wait) {  // the final saves wait no longer
          DrainOnce();
        }
      },
      limits_.budget);
  kernel_.bus().Publish("Kernel.Stopped", args);
  Advance(Stage::kStopped);
  if (overruns_.empty()) {
    log.Info("stopped ({}): every service stopped in {:.1f}ms", reason, MillisSince(t0));
  } else {
    std::string who;
    for (const std::string& o : overruns_) {
      who += (who.empty() ? "" : ", ") + o;
    }
    log.Error("stopped ({}) in {:.1f}ms, {} stop(s) cut at their deadline: {}", reason,
              MillisSince(t0), overruns_.size(), who);
  }
  DrainOnce();
  if (hooks.stopped) {
    hooks.stopped();
  }
  return true;
}

}  // namespace molt::kernel
