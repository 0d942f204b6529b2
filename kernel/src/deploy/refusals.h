// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/refusals.h
//
// Refusals: what a server keeps of the deploys, promotes, rollbacks and pins it refused (spec
// §29): the newest kKept for the API (molt branches shows them), a log line per kind at most
// every kLogGap (the ones held back counted in the next), and an event per kind at most every
// `event_gap` (moltd publishes it as Kernel.DeployRefused). Owned by deploy::Deploys; the parts
// that refuse (Rollouts, Pins) call Refuse() and return what it returns.
//
//   return refusals.Refuse("seq", "seq 3 is not newer than the applied 4 (replay?)");
//
// Thread safety: none; the deploy thread only.
#ifndef MOLT_KERNEL_DEPLOY_REFUSALS_H_
#define MOLT_KERNEL_DEPLOY_REFUSALS_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace molt::kernel::deploy {

class Refusals {
 public:
  using Clock = std::chrono::steady_clock;
  // Hears a refusal's kind and reason (at most once per kind per event gap).
  using Listener = std::function<void(const std::string& kind, const std::string& reason)>;
  static constexpr std::size_t kKept = 10;
  static constexpr std::chrono::seconds kLogGap{3};

  struct Refusal {
    std::int64_t at_ms;  // wall clock
    std::string kind;    // "signature", "seq", "channel", "failed_here", "resign", "pin", ...
    std::string reason;
  };

  // `listener` may be null.
  Refusals(Listener listener, std::chrono::milliseconds event_gap)
      : listener_(std::move(listener)), event_gap_(event_gap) {}

  // Keeps, logs and tells the listener of a refusal; returns Status::Rejected(reason), the
  // error the refused call answers with. `now` is for tests.
  Status Refuse(std::string_view kind, const std::string& reason,
                Clock::time_point now = Clock::now());

  // The newest kKept, newest first.
  std::vector<Refusal> Recent() const { return {kept_.begin(), kept_.end()}; }

 private:
  const Listener listener_;
  const std::chrono::milliseconds event_gap_;
  std::deque<Refusal> kept_;  // newest first
  // kind -> the last line logged, and the refusals held back since.
  std::map<std::string, std::pair<Clock::time_point, std::uint64_t>, std::less<>> logged_;
  std::map<std::string, Clock::time_point, std::less<>> told_;  // kind -> the last event
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_REFUSALS_H_
