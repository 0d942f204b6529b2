// SPDX-License-Identifier: Apache-2.0
// LinkQuality (link_quality.h): the RTT and probe rings, and the figures read from them.
#include "kernel/src/net/link_quality.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace molt::kernel::net {

Result<LinkQuality> LinkQuality::Create(std::size_t window, std::size_t loss_window) {
  if (window < 1 || window > kMaxWindow) {
    return Status::InvalidArgument(
        fmt::format("link quality: window must be 1 to {} RTT samples (got {}); the spec's "
                    "default is {}",
                    kMaxWindow, window, kDefaultWindow));
  }
  if (loss_window < 1 || loss_window > kMaxWindow) {
    return Status::InvalidArgument(
        fmt::format("link quality: loss_window must be 1 to {} probe outcomes (got {}); the "
                    "spec's default is {}",
                    kMaxWindow, loss_window, kDefaultLossWindow));
  }
  return LinkQuality(window, loss_window);
}

LinkQuality::LinkQuality(std::size_t window, std::size_t loss_window)
    : window_(window), loss_window_(loss_window) {
  rtts_.reserve(window_);
  sorted_.reserve(window_);
  outcomes_.reserve(loss_window_);
}

bool LinkQuality::AddRtt(double seconds) {
  if (!(std::isfinite(seconds) && seconds >= 0)) {
    return false;
  }
  if (rtts_.size() < window_) {
    rtts_.push_back(seconds);
  } else {
    double& oldest = rtts_[rtt_next_];
    sorted_.erase(std::lower_bound(sorted_.begin(), sorted_.end(), oldest));
    oldest = seconds;
    rtt_next_ = (rtt_next_ + 1) % window_;
  }
  sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), seconds), seconds);
  return true;
}

void LinkQuality::AddProbe(bool answered) {
  const std::uint8_t outcome = answered ? 1 : 0;
  if (outcomes_.size() < loss_window_) {
    outcomes_.push_back(outcome);
  } else {
    std::uint8_t& oldest = outcomes_[probe_next_];
    lost_ -= oldest == 0 ? 1 : 0;
    oldest = outcome;
    probe_next_ = (probe_next_ + 1) % loss_window_;
  }
  lost_ += answered ? 0 : 1;
}

double LinkQuality::Median() const {
  const std::size_t n = sorted_.size();
  if (n == 0) {
    return 0;
  }
  if (n % 2 == 1) {
    return sorted_[n / 2];
  }
  return (sorted_[n / 2 - 1] + sorted_[n / 2]) / 2;
}

double LinkQuality::Jitter() const {
  if (sorted_.empty()) {
    return 0;
  }
  const double median = Median();
  double sum = 0;
  for (double rtt : sorted_) {
    sum += std::abs(rtt - median);
  }
  return sum / static_cast<double>(sorted_.size());
}

double LinkQuality::Loss() const {
  if (outcomes_.empty()) {
    return 0;
  }
  return static_cast<double>(lost_) / static_cast<double>(outcomes_.size());
}

}  // namespace molt::kernel::net
