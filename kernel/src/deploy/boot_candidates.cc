// SPDX-License-Identifier: Apache-2.0
// BootCandidates: the head and the last-known-good chain, each checked (boot_candidates.h).
#include "kernel/src/deploy/boot_candidates.h"

#include <fmt/format.h>

#include <optional>
#include <set>
#include <utility>

#include "kernel/src/deploy/deploy_log.h"
#include "kernel/src/deploy/registry.h"
#include "kernel/src/deploy/serving_state.h"
#include "kernel/src/deploy/signatures.h"

namespace molt::kernel::deploy {

std::vector<BootCandidate> BootCandidates::List() {
  std::vector<BootCandidate> out;
  std::optional<Branch> branch = registry_.FindBranch(branch_);
  if (!branch.has_value()) {
    return out;
  }
  std::set<std::string> seen;
  auto consider = [&](std::uint64_t seq, const std::string& sha, std::string what) {
    if (!seen.insert(sha).second) {
      return;
    }
    std::optional<StoredBuild> b = registry_.FindBuild(sha);
    if (!b.has_value()) {
      DeployLog().Warn("{}: build {} is not in the registry", what, sha.substr(0, 12));
      return;
    }
    if (!b->failed_here.empty()) {
      DeployLog().Info("{}: {} is skipped, it failed here ({})", what, b->id, b->failed_here);
      return;
    }
    if (prod_rules_) {
      std::optional<Deployment> d = registry_.FindDeployment(seq);
      Status v = d.has_value() ? signatures_.Verify(Signatures::DeployMessage(*d, *b), d->sig,
                                                    d->sig_fallback, /*reread=*/false)
                               : Status::NotFound("its deployment is no longer recorded");
      if (!v.ok()) {
        DeployLog().Warn("{}: {} is skipped on a prod-rules server: {}", what, b->id, v.message());
        return;
      }
    }
    out.push_back({registry_.BuildPath(sha), sha, b->id, seq, std::move(what)});
  };
  consider(branch->seq, branch->head,
           fmt::format("the head of {} (#{})", branch->name, branch->seq));
  for (const Deployment& d : registry_.Deployments(branch->name, Registry::kDeploymentsKept)) {
    if (out.size() > kTries) {
      break;
    }
    if (d.seq < branch->seq) {
      consider(d.seq, d.build, fmt::format("{}'s #{} (last known good)", branch->name, d.seq));
    }
  }
  return out;
}

void BootCandidates::Tried(const BootCandidate& c, const Status& outcome) {
  if (!outcome.ok()) {
    (void)registry_.MarkFailed(c.sha256, outcome.message());
    return;
  }
  serving_.SetSwapped(c.build_id, c.seq);
  std::optional<Branch> b = registry_.FindBranch(branch_);
  if (b.has_value() && b->seq == c.seq && c.seq > registry_.applied_seq()) {
    (void)serving_.SetApplied(c.seq);
  }
}

}  // namespace molt::kernel::deploy
