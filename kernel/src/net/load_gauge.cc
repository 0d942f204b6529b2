// SPDX-License-Identifier: Apache-2.0
// LoadGauge (load_gauge.h): the kernel thread's load, from the scheduler's figures.
#include "kernel/src/net/load_gauge.h"

#include "kernel/src/core/scheduler.h"
#include "kernel/src/net/net_log.h"

namespace molt::kernel::net {

LoadGauge::LoadGauge(const Scheduler& scheduler, const NetOptions& options)
    : scheduler_(scheduler),
      options_(options),
      sampled_at_(scheduler.Now()),
      steps_(scheduler.stats().steps),
      steps_deferring_(scheduler.stats().steps_deferring),
      step_time_(scheduler.stats().step_time_total) {}

bool LoadGauge::Overloaded() {
  if (options_.overload_seconds <= 0) {
    return false;
  }
  Sample(scheduler_.Now());
  return overloaded_;
}

void LoadGauge::Sample(TimePoint now) {
  if (now - sampled_at_ < kSamplePeriod) {
    return;
  }
  const SchedulerStats& s = scheduler_.stats();
  const std::uint64_t steps = s.steps - steps_;
  const std::uint64_t deferring = s.steps_deferring - steps_deferring_;
  deferring_ = steps > 0 ? static_cast<double>(deferring) / static_cast<double>(steps) : 0;
  busy_ = ToSeconds(s.step_time_total - step_time_) / ToSeconds(now - sampled_at_);
  const bool saturated = deferring_ >= 0.5 && busy_ >= 0.5;
  if (saturated == overloaded_) {
    turning_ = false;
  } else {
    if (!turning_) {
      turning_ = true;
      turning_since_ = sampled_at_;  // the sample's start: one long sample may be enough
    }
    if (now - turning_since_ >= Seconds(options_.overload_seconds)) {
      turning_ = false;
      overloaded_ = saturated;
      if (saturated) {
        ++episodes_;
        kNetLog.Warn(
            "overloaded: for {:.1f} s (net.overload_seconds) the kernel thread was in "
            "steps {:.0f}% of the time and {:.0f}% of them left ready work waiting; new "
            "sessions are refused (Overloaded) until it catches up, the sessions here keep "
            "their service",
            ToSeconds(now - turning_since_), busy_ * 100, deferring_ * 100);
      } else {
        kNetLog.Info("no longer overloaded: new sessions are welcome again");
      }
    }
  }
  sampled_at_ = now;
  steps_ = s.steps;
  steps_deferring_ = s.steps_deferring;
  step_time_ = s.step_time_total;
}

}  // namespace molt::kernel::net
