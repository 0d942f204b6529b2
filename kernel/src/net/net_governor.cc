// SPDX-License-Identifier: Apache-2.0
// NetGovernor (net_governor.h): each session's link graded from its pings, the tier it earns with
// hysteresis, what the tier costs it.
#include "kernel/src/net/net_governor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernel/src/core/value.h"
#include "kernel/src/net/session.h"

namespace molt::kernel::net {

NetGovernor::NetGovernor(Sessions& sessions, Bus& bus, const NetOptions& options)
    : sessions_(sessions),
      bus_(bus),
      options_(options),
      changed_topic_(bus.Resolve("Net.TierChanged")) {}

Status NetGovernor::Check(const NetOptions& o) {
  struct Axis {
    const char* name;
    double good;
    double poor;
  };
  const Axis axes[] = {{"rtt_ms", o.governor_good_rtt_ms, o.governor_poor_rtt_ms},
                       {"jitter_ms", o.governor_good_jitter_ms, o.governor_poor_jitter_ms},
                       {"loss", o.governor_good_loss, o.governor_poor_loss}};
  for (const Axis& a : axes) {
    if (!std::isfinite(a.good) || !std::isfinite(a.poor) || a.good < 0 || a.good > a.poor) {
      return Status::InvalidArgument(
          fmt::format("net.governor_good_{0} ({1}) must be at least 0 and at most "
                      "net.governor_poor_{0} ({2}): a link is Good within the good limit, Poor "
                      "past the poor one",
                      a.name, a.good, a.poor));
    }
  }
  if (o.governor_good_loss > 1 || o.governor_poor_loss > 1) {
    return Status::InvalidArgument(
        "net.governor_good_loss and net.governor_poor_loss are shares of lost pings, in [0, 1]");
  }
  if (o.governor_up_after < 1) {
    return Status::InvalidArgument(
        "net.governor_up_after must be at least 1 (gradings in a row before a better tier)");
  }
  return Status::Ok();
}

LinkTier NetGovernor::Tier(const Session& session) { return session.grade_.tier; }

void NetGovernor::Probed(Session& session) {
  LinkGrade& g = session.grade_;
  if (g.probe_out && g.quality.samples() > 0) {  // lost; before its first pong, not graded yet
    g.quality.AddProbe(/*answered=*/false);
  }
  g.probe_out = true;
}

void NetGovernor::Answered(Session& session, Duration rtt) {
  LinkGrade& g = session.grade_;
  g.quality.AddRtt(std::chrono::duration<double>(rtt).count());
  if (g.probe_out) {
    g.quality.AddProbe(/*answered=*/true);
    g.probe_out = false;
  }
}

LinkTier NetGovernor::Grade(const LinkGrade& g) const {
  const LinkTier link = g.quality.samples() > 0 ? Grade(g.quality) : LinkTier::kGood;
  const bool weak_device = g.device > 0 && g.device < options_.governor_device_strained;
  return weak_device ? std::max(link, LinkTier::kStrained) : link;
}

LinkTier NetGovernor::Grade(const LinkQuality& q) const {
  const double median_ms = q.Median() * 1000;
  const double jitter_ms = q.Jitter() * 1000;
  const double loss = q.Loss();
  if (median_ms > options_.governor_poor_rtt_ms || jitter_ms > options_.governor_poor_jitter_ms ||
      loss > options_.governor_poor_loss) {
    return LinkTier::kPoor;
  }
  if (median_ms > options_.governor_good_rtt_ms || jitter_ms > options_.governor_good_jitter_ms ||
      loss > options_.governor_good_loss) {
    return LinkTier::kStrained;
  }
  return LinkTier::kGood;
}

void NetGovernor::Pass(TimePoint now) {
  if (graded_ && now - last_grading_ < kGradeEvery) {
    return;
  }
  graded_ = true;
  last_grading_ = now;
  ++gradings_;
  Sessions::Hold hold(sessions_);  // a Net.TierChanged handler may end a session
  const std::vector<SessionId> ids = sessions_.ActiveIds();
  slowed_ = 0;
  for (SessionId id : ids) {  // recounted: sessions that ended slowed are not
    const Session* s = sessions_.Get(id);
    slowed_ += s != nullptr && s->grade_.tier != LinkTier::kGood ? 1 : 0;
  }
  for (SessionId id : ids) {
    Session* s = sessions_.Get(id);
    if (s == nullptr || s->detached() ||
        (s->grade_.quality.samples() == 0 && s->grade_.device == 0)) {
      continue;  // a lost link keeps its tier for the resume; one never answered (and with no
                 // device hint) is not graded
    }
    LinkGrade& g = s->grade_;
    const LinkTier earned = Grade(g);
    if (earned > g.tier) {  // worse: at once
      g.better = 0;
      Change(*s, earned);
    } else if (earned < g.tier) {  // better: after up_after gradings in a row
      if (++g.better >= options_.governor_up_after) {
        g.better = 0;
        Change(*s, earned);
      }
    } else {
      g.better = 0;
    }
  }
}

void NetGovernor::Change(Session& session, LinkTier to) {
  if (session.grade_.tier == LinkTier::kGood) {
    ++slowed_;
  } else if (to == LinkTier::kGood) {
    --slowed_;
  }
  session.grade_.tier = to;
  ++changes_[static_cast<int>(to)];
  const LinkQuality& q = session.grade_.quality;
  const Value args[] = {Value::Handle(session.id()), Value::String(TierName(to)),
                        Value::Double(q.Median() * 1000), Value::Double(q.Jitter() * 1000),
                        Value::Double(q.Loss())};
  bus_.Publish(changed_topic_, args);
}

std::uint32_t NetGovernor::Divisor(const Session& session) const {
  return kDivisors[static_cast<int>(session.grade_.tier)];
}

GovernorStats NetGovernor::stats() const {
  GovernorStats st;
  for (SessionId id : sessions_.ActiveIds()) {
    if (const Session* s = sessions_.Get(id)) {
      ++st.sessions[static_cast<int>(s->grade_.tier)];
    }
  }
  for (int i = 0; i < kLinkTiers; ++i) {
    st.changes[i] = changes_[i];
  }
  st.shed = shed_;
  st.gradings = gradings_;
  return st;
}

}  // namespace molt::kernel::net
