// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/reports.h
//
// Reports: the results of deployments (docs/fleet.md, "Deploy reports"). This server's result of
// a deployment of its branch (swapped, adopted, failed, rolled_back, skipped) is written to its
// registry and, in a fleet, to the fleet's; Results() reads every server's result of one
// deployment (this server's alone without a fleet). The admin API joins them with the fleet's
// heartbeats into a report. Owned by deploy::Deploys; Rollouts writes through it.
//
//   reports.Set(d);                                    // d.result, d.reason, d.report
//   Result<DeploymentResults> r = reports.Results(12);
//
// Errors (Results): kNotFound (no such deployment here), kIoError (the fleet's database).
//
// Thread safety: none; the deploy thread only.
#ifndef MOLT_KERNEL_DEPLOY_REPORTS_H_
#define MOLT_KERNEL_DEPLOY_REPORTS_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernel/src/deploy/fleet_registry.h"
#include "kernel/src/deploy/registry.h"

namespace molt::kernel::deploy {

class FleetLink;

// A deployment and every server's result of it.
struct DeploymentResults {
  Deployment deployment;
  std::vector<ServerResult> results;  // by server id; this server's alone without a fleet
};

class Reports {
 public:
  // `server_id`, `branch`: this server's id and the branch it runs.
  Reports(Registry& registry, FleetLink& fleet, std::string server_id, std::string branch);

  // This server's result of `d` (d.result, d.reason, d.report), in its registry and, for its
  // own branch, the fleet's; failures are logged.
  void Set(const Deployment& d);
  // Deployment `seq` and every server's result of it (without a fleet: this server's, once it
  // has one).
  Result<DeploymentResults> Results(std::uint64_t seq);

 private:
  Registry& registry_;
  FleetLink& fleet_;
  const std::string server_id_;
  const std::string branch_;
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_REPORTS_H_
