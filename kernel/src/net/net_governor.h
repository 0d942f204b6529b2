// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/net_governor.h
//
// NetGovernor: grades every session's link Good, Strained or Poor and acts on it (spec §9.6;
// docs/network.md, "Link tiers"). Its figures are each session's own (link_grade.h): the median
// and the jitter (mean absolute deviation) of its last 10 ping round trips, and the share of its
// last 40 pings not answered before the next one went out (a probe lost), and the device hint
// its client may give (Hello.device_quality, Device: below 0.5 floors at Strained). The worst
// axis wins:
//
//   axis      Good at most   Poor above   (NetOptions: governor_*)
//   median    100 ms         250 ms
//   jitter    20 ms          60 ms
//   loss      2%             8%
//
// A link is graded from its first pong on (spec: probes wait for the client's handshake; a link
// that never answered a ping stays Good). A link graded worse takes the worse tier at once; a
// better one only after governor_up_after gradings in a row (3) found it better, so a link on the
// edge does not flap. Grading runs once a second while any link is up (the link table's
// housekeeping calls Pass), and each change goes on the Bus as Net.TierChanged [session, tier,
// median_ms, jitter_ms, loss].
//
// What a tier costs the session: replicas reach it every 1st, 2nd or 4th tick (it is the
// replicas' ReplicaPace), and Low unreliable events are shed to a Poor link (Sheds); snapshots,
// removes, events, replies and High unreliable events always go.
//
//   NetGovernor governor(sessions, bus, options);
//   replicas.SetPace(&governor);
//   governor.Probed(session);                // a ping goes out
//   governor.Answered(session, rtt);         // its pong came back
//   governor.Pass(now);                      // grades, at most once a second
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_NET_NET_GOVERNOR_H_
#define MOLT_KERNEL_NET_NET_GOVERNOR_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "kernel/src/core/bus.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/link_grade.h"
#include "kernel/src/net/net_options.h"
#include "kernel/src/net/replica_pace.h"

namespace molt::kernel::net {

class Session;
class Sessions;

struct GovernorStats {
  std::size_t sessions[kLinkTiers] = {};   // active sessions by tier now
  std::uint64_t changes[kLinkTiers] = {};  // tier changes, by the tier entered
  std::uint64_t shed = 0;                  // Low unreliable events not sent to Poor links
  std::uint64_t gradings = 0;              // passes that graded the sessions
};

class NetGovernor final : public ReplicaPace {
 public:
  static constexpr std::uint32_t kDivisors[kLinkTiers] = {1, 2, 4};  // spec: Divisors
  static constexpr std::chrono::seconds kGradeEvery{1};

  NetGovernor(Sessions& sessions, Bus& bus, const NetOptions& options);
  NetGovernor(const NetGovernor&) = delete;
  NetGovernor& operator=(const NetGovernor&) = delete;

  // Whether the options' limits make sense: each good limit at most its poor limit, losses in
  // [0, 1], governor_up_after at least 1. The error names the settings and the fix.
  static Status Check(const NetOptions& options);

  // A ping goes out on `session`'s link: the one before it, still unanswered, was lost.
  void Probed(Session& session);
  // The pong of the last ping came back `rtt` after the ping left.
  void Answered(Session& session, Duration rtt);
  // Grades every active session when kGradeEvery passed since the last grading.
  void Pass(TimePoint now);

  // The tier `quality` earns alone (no hysteresis): the worst of its three axes.
  LinkTier Grade(const LinkQuality& quality) const;
  // The tier a session's grade earns (no hysteresis): its link's (Good before its first pong),
  // Strained at best when its client said a device quality below net.governor_device_strained.
  LinkTier Grade(const LinkGrade& grade) const;
  // True, and counted, when an unreliable event of `priority` is not to go to `session`.
  bool Sheds(const Session& session, UnreliablePriority priority) {
    if (priority == UnreliablePriority::kLow && Tier(session) == LinkTier::kPoor) {
      ++shed_;
      return true;
    }
    return false;
  }
  static LinkTier Tier(const Session& session);

  // ReplicaPace: 1, 2 or 4 by the session's tier.
  std::uint32_t Divisor(const Session& session) const override;
  // No session is Strained or Poor (counted at each change, recounted at each grading: one that
  // ended slowed keeps the count up until then, which only costs the replicas the asking).
  bool Uniform() const override { return slowed_ == 0; }

  GovernorStats stats() const;

 private:
  void Change(Session& session, LinkTier to);

  Sessions& sessions_;
  Bus& bus_;
  const NetOptions& options_;
  Bus::Topic* changed_topic_;
  TimePoint last_grading_{};
  bool graded_ = false;
  std::uint64_t changes_[kLinkTiers] = {};
  std::uint64_t shed_ = 0;
  std::uint64_t gradings_ = 0;
  std::size_t slowed_ = 0;  // sessions not Good, at most the ones active now
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_NET_GOVERNOR_H_
