// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/token_bucket.h
//
// TokenBucket: a rate limit of `rate` tokens per second with room for `burst` (spec: TokenBucket,
// used per session per channel by the network). A bucket starts full. Take() refills for the time
// since the last call, then takes `n` tokens if it has them. The caller passes the time (the
// network reads the clock once per batch of frames), so a take is a few arithmetic operations.
//
//   TokenBucket bucket(/*rate=*/30, /*burst=*/30, now);
//   if (!bucket.Take(now)) { reject(kRateLimited); }
//
// A rate of +infinity never limits. Time that goes backwards refills nothing.
// Thread safety: a value type; REQUIRES external synchronization per object.
#ifndef MOLT_KERNEL_CORE_TOKEN_BUCKET_H_
#define MOLT_KERNEL_CORE_TOKEN_BUCKET_H_

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernel/src/core/clock.h"

namespace molt::kernel {

class TokenBucket {
 public:
  // REQUIRES: rate >= 0, burst >= 1 (a smaller burst is raised to 1).
  TokenBucket(double rate, double burst, TimePoint now)
      : per_ns_(rate * 1e-9),
        burst_(std::max(burst, 1.0)),
        tokens_(burst_),
        last_ns_(now.time_since_epoch().count()) {}

  // Refills, then takes `n` tokens if available. Returns whether it took them.
  bool Take(TimePoint now, double n = 1.0) {
    if (unlimited()) [[unlikely]] {
      return true;
    }
    Refill(now);
    if (tokens_ >= n) {
      tokens_ -= n;
      return true;
    }
    return false;
  }

  // Tokens available at `now` (refills as a side effect).
  double Available(TimePoint now) {
    Refill(now);
    return tokens_;
  }

  // Seconds until `n` tokens are available at the current rate (0 when they are); infinite for a
  // rate of 0.
  double SecondsUntil(TimePoint now, double n = 1.0) {
    Refill(now);
    if (tokens_ >= n) {
      return 0.0;
    }
    return (n - tokens_) / (per_ns_ * 1e9);
  }

  double rate() const { return per_ns_ * 1e9; }
  bool unlimited() const { return per_ns_ == std::numeric_limits<double>::infinity(); }
  double burst() const { return burst_; }

 private:
  void Refill(TimePoint now) {
    const std::int64_t ns = now.time_since_epoch().count();
    const std::int64_t elapsed = ns - last_ns_;
    if (elapsed > 0) {
      tokens_ = std::min(burst_, tokens_ + static_cast<double>(elapsed) * per_ns_);
      last_ns_ = ns;
    }
  }

  double per_ns_;
  double burst_;
  double tokens_;
  std::int64_t last_ns_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_TOKEN_BUCKET_H_
