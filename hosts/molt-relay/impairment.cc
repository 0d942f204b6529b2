// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/impairment.cc
//
// Impairment: the six draws of a verdict and what they mean.
#include "hosts/molt-relay/impairment.h"

#include <algorithm>
#include <cmath>

namespace molt::relay {

using std::chrono::microseconds;

Verdict Impairment::Next() {
  const double lost = Uniform();
  const double twice = Uniform();
  Verdict verdict;
  verdict.copies = lost < settings_.drop ? 0 : twice < settings_.duplicate ? 2 : 1;
  const double delay_us = static_cast<double>(microseconds(settings_.delay).count());
  const double jitter_us = static_cast<double>(microseconds(settings_.jitter).count());
  for (int i = 0; i < 2; ++i) {
    const double swing = Uniform() * 2 - 1;  // [-1, 1)
    const double held = Uniform();
    if (i >= verdict.copies) {
      continue;
    }
    Verdict::Copy& copy = verdict.copy[i];
    copy.delay = microseconds(std::max<long long>(0, std::llround(delay_us + swing * jitter_us)));
    copy.reordered = held < settings_.reorder;
    if (copy.reordered) {
      copy.delay += HoldBack();
    }
  }
  return verdict;
}

microseconds Impairment::HoldBack() const {
  return std::max<microseconds>(settings_.delay + settings_.jitter, std::chrono::milliseconds(1));
}

double Impairment::Uniform() { return static_cast<double>(random_() >> 11) * 0x1.0p-53; }

}  // namespace molt::relay
