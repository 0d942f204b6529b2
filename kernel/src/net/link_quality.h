// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/link_quality.h
//
// LinkQuality: one session's link measurements, as the NetGovernor reads them to grade the link
// (DESIGN.md §7: Good / Strained / Poor). It keeps the last `window` round-trip times (spec
// default 10) and the outcomes of the last `loss_window` probes (spec default 40), answered or
// lost, and derives from them the median RTT, the jitter and the loss. It measures nothing
// itself: the caller times its pings and reports each probe's fate.
//
//   LinkQuality link;                  // windows of 10 RTTs and 40 probes
//   link.AddRtt(0.031);                // seconds
//   link.AddProbe(/*answered=*/true);
//   link.AddProbe(false);              // a probe that got no answer in time
//   double rtt = link.Median(), jitter = link.Jitter(), loss = link.Loss();  // 0.031, 0, 0.5
//
// Both windows are rings: once full, each new entry pushes out the oldest. With no entry yet
// every figure is 0. A sample is kept in arrival order and, beside, in sorted order (an insertion
// into at most `window` values), so the median is read without sorting and without allocating.
//
// Thread safety: a value type; REQUIRES external synchronization per object.
#ifndef MOLT_KERNEL_NET_LINK_QUALITY_H_
#define MOLT_KERNEL_NET_LINK_QUALITY_H_

#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace molt::kernel::net {

class LinkQuality {
 public:
  static constexpr std::size_t kDefaultWindow = 10;      // RTT samples (spec: Window)
  static constexpr std::size_t kDefaultLossWindow = 40;  // probe outcomes (spec: LossWindow)
  static constexpr std::size_t kMaxWindow = 4096;        // either window, at most

  // Windows of the spec's sizes.
  LinkQuality() : LinkQuality(kDefaultWindow, kDefaultLossWindow) {}
  // Windows of `window` RTT samples and `loss_window` probe outcomes, or INVALID_ARGUMENT naming
  // the size that is not in [1, kMaxWindow].
  static Result<LinkQuality> Create(std::size_t window, std::size_t loss_window);

  // Keeps a round-trip time of `seconds`, pushing out the oldest once `window` are kept. False
  // (nothing kept) when `seconds` is negative or not a finite number.
  bool AddRtt(double seconds);
  // Keeps a probe's outcome: answered, or lost. Pushes out the oldest once `loss_window` are kept.
  void AddProbe(bool answered);

  // The median of the kept RTTs in seconds (with an even count, the mean of the two middle
  // ones); 0 with none.
  double Median() const;
  // The mean absolute deviation of the kept RTTs from their median, in seconds; 0 with none.
  double Jitter() const;
  // The share of the kept probes that were lost, in [0, 1]; 0 with none.
  double Loss() const;

  // How many RTTs / probe outcomes are kept (at most window() / loss_window()).
  std::size_t samples() const { return sorted_.size(); }
  std::size_t probes() const { return outcomes_.size(); }
  std::size_t window() const { return window_; }
  std::size_t loss_window() const { return loss_window_; }

 private:
  LinkQuality(std::size_t window, std::size_t loss_window);

  std::size_t window_;
  std::size_t loss_window_;
  std::vector<double> rtts_;    // arrival order, a ring once full; rtt_next_ is the oldest
  std::vector<double> sorted_;  // the same values, ascending
  std::size_t rtt_next_ = 0;
  std::vector<std::uint8_t> outcomes_;  // 1 answered, 0 lost; a ring once full
  std::size_t probe_next_ = 0;
  std::size_t lost_ = 0;  // zeros in outcomes_
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_LINK_QUALITY_H_
