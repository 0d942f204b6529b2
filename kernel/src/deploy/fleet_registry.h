// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/fleet_registry.h
//
// FleetRegistry: the registry a fleet shares, on its PostgreSQL (spec §30, docs/fleet.md,
// "Deploys"). Every server keeps its own Registry (registry.h) as its copy: the builds it serves
// and boots from, the deployments with its own results. What the fleet agrees on lives here:
//   molt_registry_seq    the last #seq claimed: one row, taken FOR UPDATE by the transaction that
//                        records a deployment, so a signed seq is checked and claimed at once
//   molt_builds          every build's manifest and bytes, so any server can fetch one
//   molt_deployments     the fleet's history (the newest kDeploymentsKept, and each branch's head)
//   molt_branches        each branch's head
//   molt_deploy_results  each server's result of each deployment of its branch
// A recorded deployment is announced with NOTIFY molt_deploys (its seq): the fast path; Watch()
// also wakes every poll interval, so a server that missed the notification (reconnecting,
// restarted) still converges.
//
//   FleetRegistry fleet(url, "eu-1");
//   MOLT_RETURN_IF_ERROR(fleet.Open());
//   MOLT_ASSIGN_OR_RETURN(Deployment d, fleet.Record(deployment));   // #seq claimed
//   MOLT_ASSIGN_OR_RETURN(auto news, fleet.Since(mirrored, 100));   // what another server did
//
// Thread safety: one thread at a time (the deploy thread); Watch() runs a thread of its own
// with its own connection.
#ifndef MOLT_KERNEL_DEPLOY_FLEET_REGISTRY_H_
#define MOLT_KERNEL_DEPLOY_FLEET_REGISTRY_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/deploy/registry.h"

namespace molt::kernel::store {
class PgConnection;
class PgListener;
}  // namespace molt::kernel::store

namespace molt::kernel::deploy {

// One server's result of one deployment (molt_deploy_results).
struct ServerResult {
  std::string server_id;
  std::string result;  // swapped, adopted, failed, rolled_back, skipped
  std::string reason;
  std::int64_t at_ms = 0;
};

class FleetRegistry {
 public:
  static constexpr std::size_t kDeploymentsKept = 1000;
  static constexpr std::size_t kNewestBuildsKept = 10;
  static constexpr const char* kChannel = "molt_deploys";

  FleetRegistry(std::string url, std::string server_id);
  ~FleetRegistry();
  FleetRegistry(const FleetRegistry&) = delete;
  FleetRegistry& operator=(const FleetRegistry&) = delete;

  // Connects and creates (or checks) the tables. An error names the database and the fix.
  Status Open();

  // --- builds ---
  // Stores `b` with the bytes of `file` unless the fleet has it already.
  Status PutBuild(const StoredBuild& b, const std::string& file);
  // Writes the build `name` names (a sha256, a prefix of 8+ hex digits, a build id: the newest
  // stored with it) to `file`; NotFound when the fleet has none.
  Status FetchBuild(const std::string& name, const std::string& file);

  // --- deployments ---
  // Claims d.seq (0: the next; else it must be newer than the fleet's last), records `d`, moves
  // its branch's head and announces it, in one transaction. Refuses a new branch past
  // Registry::kMaxBranches.
  Result<Deployment> Record(Deployment d);
  // Widens the rollout of deployment `seq` to `rollout` and announces it; Rejected when `seq` is
  // no longer its branch's head or its rollout is that wide already.
  Status Widen(std::uint64_t seq, std::uint32_t rollout);
  // The fleet's deployments newer than `after`, oldest first, at most `limit`.
  Result<std::vector<Deployment>> Since(std::uint64_t after, std::size_t limit);
  Result<std::uint64_t> LastSeq();
  // Every server's result of deployment `seq`, by server id.
  Result<std::vector<ServerResult>> Results(std::uint64_t seq);
  // This server's result of deployment `seq`.
  Status SetResult(std::uint64_t seq, const std::string& result, const std::string& reason,
                   const std::string& report);

  // Calls `wake` (on a thread of its own: store::PgListener) after each NOTIFY molt_deploys and
  // every `poll`, until this object goes. The first wake comes at once.
  void Watch(std::chrono::milliseconds poll, std::function<void()> wake);
  // Ends the watching thread (no wake after it returns).
  void StopWatching();

  const std::string& server_id() const { return server_id_; }
  const std::string& url() const { return url_; }

 private:
  const std::string url_;
  const std::string server_id_;
  std::unique_ptr<store::PgConnection> db_;
  std::unique_ptr<store::PgListener> watcher_;
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_FLEET_REGISTRY_H_
