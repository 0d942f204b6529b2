// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/replica_pace.h
//
// ReplicaPace: how often each session takes replica deltas. A session at divisor d takes them
// every d-th tick of a replica (1: every tick; the NetGovernor's tiers: Good 1, Strained 2,
// Poor 4), at a phase of its own so that the sessions of one tier do not all take the same
// ticks. What a skipped tick would have sent is owed to the session and goes with its next send;
// snapshots and removes never wait.
//
//   class Tiers : public ReplicaPace {
//     std::uint32_t Divisor(const Session& s) const override {
//       return poor_.contains(s.id()) ? 4 : 1;
//     }
//   };
//   replicas.SetPace(&tiers);
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_NET_REPLICA_PACE_H_
#define MOLT_KERNEL_NET_REPLICA_PACE_H_

#include <cstdint>

#include "kernel/src/net/channel.h"

namespace molt::kernel::net {

class Session;

class ReplicaPace {
 public:
  virtual ~ReplicaPace() = default;
  // 1 or more; asked once per session per delivery that owes it something (the session at hand:
  // a pace that keeps its figures in the session reads them without a lookup).
  virtual std::uint32_t Divisor(const Session& session) const = 0;
  // True when every session is at divisor 1 now: a delivery then asks nobody (the common case
  // costs nothing per session). A pace that cannot tell says false.
  virtual bool Uniform() const { return false; }
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_REPLICA_PACE_H_
