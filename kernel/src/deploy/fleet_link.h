// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/fleet_link.h
//
// FleetLink: this server's link to the fleet's registry (fleet_registry.h; docs/fleet.md,
// "Deploys"), and the mirror of it in its own Registry. Without a fleet URL there is no link:
// shared() is false and every call is the single server's answer (nothing to share, nothing to
// fetch, this registry's seq). With one, the fleet's database is opened when first needed and,
// after a failure, not asked again for kRetryGap (the dashboard's reads would each wait for the
// connect timeout); Mirror() copies the fleet's deployments this server lacks, fetching their
// builds. What to do with what arrived (apply it, skip it) is Rollouts' decision.
//
//   FleetLink fleet(url, "eu-1", "prod", registry);
//   if (std::optional<FleetLink::Mirrored> m = fleet.Mirror(/*boot=*/false); m && m->newest) ...
//
// Thread safety: none; the deploy thread only (the boot's calls before it starts). Watch()'s
// wake runs on the listener's thread.
#ifndef MOLT_KERNEL_DEPLOY_FLEET_LINK_H_
#define MOLT_KERNEL_DEPLOY_FLEET_LINK_H_

#include <molt/kernel/status.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kernel/src/deploy/fleet_registry.h"
#include "kernel/src/deploy/registry.h"

namespace molt::kernel::deploy {

class FleetLink {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kRetryGap{5};

  // `url` "" : this server alone. `branch`: the branch this server runs.
  FleetLink(std::string url, std::string server_id, std::string branch, Registry& registry);
  ~FleetLink();
  FleetLink(const FleetLink&) = delete;
  FleetLink& operator=(const FleetLink&) = delete;

  // A fleet's registry stands behind this server.
  bool shared() const { return fleet_ != nullptr; }
  // The fleet's registry, opened when it was not: an error names the database (the last one
  // again within kRetryGap of it). REQUIRES: shared().
  Status Open();
  // The fleet's registry. REQUIRES: shared() and Open() succeeded.
  FleetRegistry& fleet() { return *fleet_; }

  // `b` in the fleet's registry too, so every server can fetch it (Ok alone).
  Status Share(const StoredBuild& b);
  // Build `name` fetched from the fleet and stored here; nullopt alone, or when the fleet has
  // none (other failures logged).
  std::optional<StoredBuild> Fetch(const std::string& name);
  // The last #seq claimed: the fleet's, else (alone, or the fleet not answering: logged) this
  // server's own guess.
  std::uint64_t LastSeq();

  // What a Mirror() brought.
  struct Mirrored {
    std::optional<Deployment> newest;  // of this server's branch, recorded by another server
    bool stuck = false;                // a deployment could not be mirrored (tried again later)
  };
  // Copies the fleet's deployments this server lacks into its registry, with their builds;
  // nullopt when the fleet's database does not answer (each new reason logged once; `boot`
  // says what waits for it). REQUIRES: shared().
  std::optional<Mirrored> Mirror(bool boot);
  // Deployment `skipped_seq` (this server's branch head, outside its rollout) when the fleet
  // widened its rollout since: the wider rollout recorded here too. REQUIRES: shared().
  std::optional<Deployment> Widened(std::uint64_t skipped_seq);

  // Calls `wake` (on the listener's thread) after each NOTIFY and every `poll`. REQUIRES:
  // shared().
  void Watch(std::chrono::milliseconds poll, std::function<void()> wake);
  // No wake after this returns; a no-op alone.
  void StopWatching();

 private:
  const std::string branch_;
  Registry& registry_;
  std::unique_ptr<FleetRegistry> fleet_;  // null: this server alone
  bool open_ = false;
  Status failure_;  // of the last try to open it, at failed_at_
  Clock::time_point failed_at_{};
  std::string sync_error_;  // the last reason the fleet could not be read, logged once
  std::atomic<std::uint64_t> next_file_{1};
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_FLEET_LINK_H_
