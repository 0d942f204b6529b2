// SPDX-License-Identifier: Apache-2.0
// Refusals: kept, logged and told, each at its own pace (refusals.h).
#include "kernel/src/deploy/refusals.h"

#include <fmt/format.h>

#include "kernel/src/core/clock.h"
#include "kernel/src/deploy/deploy_log.h"

namespace molt::kernel::deploy {

Status Refusals::Refuse(std::string_view kind, const std::string& reason, Clock::time_point now) {
  kept_.push_front({WallMs(), std::string(kind), reason});
  if (kept_.size() > kKept) {
    kept_.pop_back();
  }
  if (listener_) {
    Clock::time_point& told = told_[std::string(kind)];
    if (told == Clock::time_point{} || now - told >= event_gap_) {
      told = now;
      listener_(std::string(kind), reason);
    }
  }
  auto& [last, hidden] = logged_[std::string(kind)];
  if (last != Clock::time_point{} && now - last < kLogGap) {
    ++hidden;
    return Status::Rejected(reason);
  }
  DeployLog().Warn("refused a deploy ({}): {}{}", kind, reason,
                   hidden > 0 ? fmt::format(" ({} more not shown)", hidden) : std::string());
  last = now;
  hidden = 0;
  return Status::Rejected(reason);
}

}  // namespace molt::kernel::deploy
