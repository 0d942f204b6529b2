// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/wire/replay_window.h
//
// ReplayWindow: which datagram counters a receiver has taken, so a datagram replayed (or
// duplicated by the network) is refused, while one that arrives late but inside the window is
// still taken (RFC 4303's anti-replay window, 64 wide). Counters start at 1; 0 is never valid.
//
//   if (!window.Fresh(counter)) return;   // a replay, or older than the window
//   ... authenticate the datagram ...
//   window.Take(counter);                   // only after it authenticated
//
// Thread safety: not thread-safe.
#ifndef MOLT_KERNEL_WIRE_REPLAY_WINDOW_H_
#define MOLT_KERNEL_WIRE_REPLAY_WINDOW_H_

#include <cstdint>

namespace molt::wire {

class ReplayWindow {
 public:
  static constexpr std::uint64_t kWidth = 64;

  // Whether `counter` could be taken: newer than the highest, or inside the window and not yet
  // taken.
  bool Fresh(std::uint64_t counter) const {
    if (counter == 0) {
      return false;
    }
    if (counter > highest_) {
      return true;
    }
    const std::uint64_t behind = highest_ - counter;
    return behind < kWidth && (seen_ & (std::uint64_t{1} << behind)) == 0;
  }
  // Records `counter` as taken. REQUIRES: Fresh(counter).
  void Take(std::uint64_t counter) {
    if (counter > highest_) {
      const std::uint64_t ahead = counter - highest_;
      seen_ = ahead >= kWidth ? 0 : seen_ << ahead;
      seen_ |= 1;
      highest_ = counter;
      return;
    }
    seen_ |= std::uint64_t{1} << (highest_ - counter);
  }
  std::uint64_t highest() const { return highest_; }

 private:
  std::uint64_t highest_ = 0;
  std::uint64_t seen_ = 0;  // bit i: highest_ - i was taken
};

}  // namespace molt::wire

#endif  // MOLT_KERNEL_WIRE_REPLAY_WINDOW_H_
