// SPDX-License-Identifier: Apache-2.0
// Cycle counter calibration: the TSC is used only when the CPU declares it invariant
// (constant_tsc and nonstop_tsc), so ticks advance at one rate on every core and in every power
// state; otherwise ticks fall back to steady_clock nanoseconds.
#include "kernel/src/core/clock.h"

#include <fstream>
#include <string>

namespace molt::kernel::internal {
namespace {

bool CpuHasInvariantTsc() {
#if defined(__x86_64__) || defined(__i386__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
    }
  }
#endif
  return false;
}

CycleCalibration Calibrate() {
  if (!CpuHasInvariantTsc()) {
    return {false, 1e9};
  }
#if defined(__x86_64__) || defined(__i386__)
  // 5 ms against steady_clock gives a rate within about 1e-5: ample for budgets and profiles.
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t c0 = __builtin_ia32_rdtsc();
  auto t1 = t0;
  while (t1 - t0 < std::chrono::milliseconds(5)) {
    t1 = std::chrono::steady_clock::now();
  }
  const std::uint64_t c1 = __builtin_ia32_rdtsc();
  const double seconds = std::chrono::duration<double>(t1 - t0).count();
  if (c1 <= c0 || seconds <= 0) {
    return {false, 1e9};
  }
  return {true, static_cast<double>(c1 - c0) / seconds};
#else
  return {false, 1e9};
#endif
}

}  // namespace

const CycleCalibration& Calibration() {
  static const CycleCalibration calibration = Calibrate();
  return calibration;
}

}  // namespace molt::kernel::internal
