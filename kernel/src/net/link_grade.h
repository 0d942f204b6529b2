// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/link_grade.h
//
// LinkGrade: what the NetGovernor (net_governor.h) keeps of one session's link: its measurements
// (LinkQuality: the last round-trip times, the last probes' fates), the tier they earned, and the
// gradings in a row that found it better. A session holds its own (session.h), so the grade
// lives and ends with the session, and survives a swap and a resumed link as the session does.
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_NET_LINK_GRADE_H_
#define MOLT_KERNEL_NET_LINK_GRADE_H_

#include <cmath>
#include <cstdint>

#include "kernel/src/net/link_quality.h"

namespace molt::kernel::net {

// A link's tier (spec §9.6): Good gets every replica tick, Strained every 2nd, Poor every 4th
// and no Low unreliable events.
enum class LinkTier : std::uint8_t { kGood = 0, kStrained = 1, kPoor = 2 };
inline constexpr int kLinkTiers = 3;

// "good", "strained", "poor".
inline const char* TierName(LinkTier tier) {
  switch (tier) {
    case LinkTier::kGood:
      return "good";
    case LinkTier::kStrained:
      return "strained";
    case LinkTier::kPoor:
      return "poor";
  }
  return "?";
}

struct LinkGrade {
  // The client's device quality (Hello.device_quality, a Device body: 1 keeps its frame budget);
  // what is not a finite number in [0, 16] is taken as not said (0).
  void SayDevice(float q) { device = std::isfinite(q) && q >= 0 && q <= 16 ? q : 0; }

  LinkQuality quality;
  LinkTier tier = LinkTier::kGood;
  std::uint8_t better = 0;  // gradings in a row that found the link better than `tier`
  bool probe_out = false;   // a ping is out, not yet answered
  float device = 0;         // the client's device quality; 0: not said
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_LINK_GRADE_H_
