// SPDX-License-Identifier: Apache-2.0
// DrainPhase: the intake stopped, the sessions told where to go, the close once empty
// (drain_phase.h).
#include "kernel/src/server/drain_phase.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernel/src/core/kernel.h"
#include "kernel/src/net/network.h"
#include "kernel/src/server/assembly.h"
#include "kernel/src/server/server_log.h"

namespace molt::kernel {

bool DrainPhase::Request(double deadline_seconds, const std::string& why) {
  if (close_requested_.exchange(true)) {
    ServerLog().Warn("drain ({}) ignored: the server is already closing", why);
    return false;
  }
  parts_.kernel().loop().Post([this, deadline_seconds, why] { Drain(deadline_seconds, why); });
  return true;
}

void DrainPhase::Stop() {
  waiting_ = false;
  wait_.Cancel();
}

void DrainPhase::Drain(double deadline_seconds, const std::string& why) {
  if (!hooks_.serving() || fleet_ == nullptr) {  // nothing serves yet: nobody to move
    return hooks_.close(why);
  }
  parts_.network().Drain();
  fleet_->Beat(hooks_.report());  // the fleet sees it draining at once, and sends nobody here
  const std::size_t sessions = parts_.network().sessions().count();
  const Value args[] = {Value::Int(static_cast<std::int64_t>(sessions))};
  parts_.kernel().bus().Publish("Kernel.SoftShutdown", args);
  ServerLog().Info("draining ({}): {} sessions move to another server of branch {}{}", why,
                   sessions, settings_.branch,
                   deadline_seconds > 0
                       ? fmt::format(", or stay for at most {:g} s", deadline_seconds)
                       : std::string());
  const TimePoint deadline = RealNow() + Seconds(std::max(deadline_seconds, 0.0));
  fleet_->List(
      settings_.branch, [this, deadline, why](Result<std::vector<fleet::ServerReport>> servers) {
        parts_.kernel().loop().Post([this, deadline, why, servers = std::move(servers)]() mutable {
          Redirect(std::move(servers), why);
          CloseWhenEmpty(deadline, why);
        });
      });
}

void DrainPhase::CloseWhenEmpty(TimePoint deadline, const std::string& why) {
  if (parts_.network().sessions().count() == 0 || RealNow() >= deadline) {
    return hooks_.close(why);
  }
  waiting_ = true;
  wait_ = parts_.kernel().scheduler().After(
      std::chrono::milliseconds(100), [this, deadline, why] { CloseWhenEmpty(deadline, why); },
      Priority::kKernel, TaskOrigin::Named("drain"));
}

void DrainPhase::Redirect(Result<std::vector<fleet::ServerReport>> servers,
                          const std::string& why) {
  std::vector<net::Network::RedirectTarget> targets;
  if (servers.ok()) {
    for (const fleet::ServerReport& s : *servers) {
      if (s.id != settings_.server_id && s.state == "live" && !s.build.empty() &&
          !s.address.empty()) {
        targets.push_back({s.id, s.address, s.websocket_address, s.sessions});
      }
    }
  }
  const std::size_t sessions = parts_.network().sessions().count();
  if (targets.empty()) {
    ServerLog().Warn(
        "draining ({}): no other live server of branch {} to send the {} sessions to{}; "
        "they end as at a close (start a server of the branch first to move them)",
        why, settings_.branch, sessions,
        servers.ok() ? "" : " (the fleet cannot be read: " + servers.status().message() + ")");
    return;
  }
  std::vector<std::uint64_t> before;
  for (const net::Network::RedirectTarget& t : targets) {
    before.push_back(t.sessions);
  }
  const std::vector<net::Network::RedirectTarget>& spread =
      parts_.network().Redirect(std::move(targets), "the server is draining");
  std::string where;
  std::uint64_t told = 0;
  for (std::size_t i = 0; i < spread.size(); ++i) {
    if (const std::uint64_t sent = spread[i].sessions - before[i]; sent > 0) {
      where += fmt::format("{}{} to server {} at {}", where.empty() ? "" : ", ", sent,
                           spread[i].server, spread[i].address);
      told += sent;
    }
  }
  ServerLog().Info("draining ({}): {} sessions told where to go{}{}", why, told,
                   where.empty() ? "" : ": ", where);
}

}  // namespace molt::kernel
