// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/load_gauge.h
//
// LoadGauge: whether the kernel thread has more work than time, read from the scheduler's own
// figures (docs/network.md, "A full server says so"). A sample covers the time since the last
// one (a quarter second at least; taken when the front door asks, so an idle server takes none):
// it is saturated when the kernel thread spent at least half of it in steps and at least half of
// those steps ended with ready tasks left waiting, their budget spent (a few slow steps of an
// otherwise idle server are not load). The gauge turns overloaded after net.overload_seconds (2)
// of saturated samples in a row, and back after as long of samples that are not (a server on the
// edge does not flap); each turn is logged. 0 seconds: never overloaded.
//
// While overloaded, the front door refuses new sessions with Overloaded and a retry-after; the
// sessions it already serves, resumes included, keep their service.
//
//   LoadGauge load(scheduler, options);
//   if (load.Overloaded()) { ... refuse ... }
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_LOAD_GAUGE_H_
#define MOLT_KERNEL_NET_LOAD_GAUGE_H_

#include <chrono>
#include <cstdint>

#include "kernel/src/core/clock.h"
#include "kernel/src/net/net_options.h"

namespace molt::kernel {
class Scheduler;
}

namespace molt::kernel::net {

struct LoadFigures {
  bool overloaded = false;
  std::uint64_t episodes = 0;  // times the gauge turned overloaded
  double deferring = 0;        // the share of the last sample's steps that deferred tasks
  double busy = 0;             // the share of the last sample's time spent in steps
};

class LoadGauge {
 public:
  static constexpr Duration kSamplePeriod = std::chrono::milliseconds(250);

  LoadGauge(const Scheduler& scheduler, const NetOptions& options);
  LoadGauge(const LoadGauge&) = delete;
  LoadGauge& operator=(const LoadGauge&) = delete;

  // Whether the kernel thread is overloaded now (a sample first, when one is due).
  bool Overloaded();
  // The figures as of the last sample.
  LoadFigures figures() const { return {overloaded_, episodes_, deferring_, busy_}; }

 private:
  void Sample(TimePoint now);

  const Scheduler& scheduler_;
  const NetOptions& options_;
  TimePoint sampled_at_;     // the end of the last sample
  std::uint64_t steps_ = 0;  // the scheduler's totals then
  std::uint64_t steps_deferring_ = 0;
  Duration step_time_{};
  TimePoint turning_since_;  // the start of the samples in a row that disagree
  bool turning_ = false;     // with overloaded_
  bool overloaded_ = false;
  std::uint64_t episodes_ = 0;
  double deferring_ = 0;
  double busy_ = 0;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_LOAD_GAUGE_H_
