// SPDX-License-Identifier: Apache-2.0
// Reports: this server's results written, every server's read (reports.h).
#include "kernel/src/deploy/reports.h"

#include <fmt/format.h>

#include <optional>
#include <utility>

#include "kernel/src/deploy/deploy_log.h"
#include "kernel/src/deploy/fleet_link.h"

namespace molt::kernel::deploy {

Reports::Reports(Registry& registry, FleetLink& fleet, std::string server_id, std::string branch)
    : registry_(registry),
      fleet_(fleet),
      server_id_(std::move(server_id)),
      branch_(std::move(branch)) {}

void Reports::Set(const Deployment& d) {
  if (Status s = registry_.SetResult(d.seq, d.result, d.reason, d.report); !s.ok()) {
    DeployLog().Error("#{}: {}", d.seq, s.message());
  }
  if (fleet_.shared() && d.branch == branch_) {
    Status s = fleet_.Open();
    if (s.ok()) {
      s = fleet_.fleet().SetResult(d.seq, d.result, d.reason, d.report);
    }
    if (!s.ok()) {
      DeployLog().Error("#{}: this server's result ({}) is not in the fleet's registry: {}", d.seq,
                        d.result, s.message());
    }
  }
}

Result<DeploymentResults> Reports::Results(std::uint64_t seq) {
  std::optional<Deployment> d = registry_.FindDeployment(seq);
  if (!d.has_value()) {
    return Status::NotFound(
        fmt::format("no deployment #{} is recorded (molt deployments lists them)", seq));
  }
  DeploymentResults out{*d, {}};
  if (fleet_.shared()) {
    Status s = fleet_.Open();
    Result<std::vector<ServerResult>> got =
        s.ok() ? fleet_.fleet().Results(seq) : Result<std::vector<ServerResult>>(s);
    if (!got.ok()) {
      return Status::IoError(got.status().message());
    }
    out.results = std::move(*got);
  } else if (d->branch == branch_ && d->result != "pending") {
    out.results.push_back({server_id_, d->result, d->reason, d->at_ms});
  }
  return out;
}

}  // namespace molt::kernel::deploy
