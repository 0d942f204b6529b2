// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/clock.h
//
// Time for the kernel. Two readings with different jobs:
//   - Now(): a steady_clock time point, for deadlines (the same clock Asio's steady_timer uses);
//   - Ticks(): a raw cycle counter, for measuring short intervals (task timing, budget checks)
//     at a fraction of steady_clock's cost (DESIGN.md §11: "cycle counter, not steady_clock").
// Kernel code takes a `Clock*`: nullptr means the real clock (inlined, no virtual call); tests
// pass a ManualClock, the one fake the house allows (time).
//
// Thread safety: the real clock is safe from any thread. A ManualClock is not synchronized.
#ifndef MOLT_KERNEL_CORE_CLOCK_H_
#define MOLT_KERNEL_CORE_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace molt::kernel {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::steady_clock::time_point;

// Converts seconds (as the spec states its defaults) to a Duration.
constexpr Duration Seconds(double s) { return Duration(static_cast<std::int64_t>(s * 1e9)); }
// Converts a Duration to seconds.
constexpr double ToSeconds(Duration d) { return static_cast<double>(d.count()) * 1e-9; }

namespace internal {

// Cycle counter calibration, measured once per process against steady_clock.
struct CycleCalibration {
  bool use_tsc;             // false: Ticks() are steady_clock nanoseconds
  double ticks_per_second;  // 1e9 when !use_tsc
};
const CycleCalibration& Calibration();

}  // namespace internal

// The real clock's two readings, inline.
inline TimePoint RealNow() noexcept { return std::chrono::steady_clock::now(); }

// Milliseconds since the Unix epoch, by the wall clock: the timestamps written down (records,
// files, reports). Never for durations: the wall clock jumps.
inline std::int64_t WallMs() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Milliseconds of real time since `t0` (what reports and logs print).
inline double MillisSince(TimePoint t0) noexcept {
  return std::chrono::duration<double, std::milli>(RealNow() - t0).count();
}

inline std::uint64_t RealTicks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  static const bool use_tsc = internal::Calibration().use_tsc;
  if (use_tsc) {
    return __builtin_ia32_rdtsc();  // the compiler's builtin: <x86intrin.h> costs every includer
  }
#endif
  return static_cast<std::uint64_t>(RealNow().time_since_epoch().count());
}

inline double RealTicksPerSecond() noexcept { return internal::Calibration().ticks_per_second; }

// An injectable clock. Kernel classes hold a `Clock*` and use the Real* functions when it is null.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() = 0;
  virtual std::uint64_t Ticks() = 0;
  virtual double TicksPerSecond() = 0;
};

// A clock that moves only when told: ticks are nanoseconds of manual time.
// REQUIRES: external synchronization.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint(std::chrono::hours(1))) : now_(start) {}

  TimePoint Now() override { return now_; }
  std::uint64_t Ticks() override {
    return static_cast<std::uint64_t>(now_.time_since_epoch().count());
  }
  double TicksPerSecond() override { return 1e9; }

  void Advance(Duration d) { now_ += d; }
  void Set(TimePoint t) { now_ = t; }

 private:
  TimePoint now_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_CLOCK_H_
