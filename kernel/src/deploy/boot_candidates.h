// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/boot_candidates.h
//
// BootCandidates: the builds a server boots from (spec §31, the last-known-good chain): its
// branch's head, then up to kTries of the branch's earlier builds, newest first; never a build
// that failed here, never one twice, on prod rules only those whose deployment's signatures
// still verify. How each one did comes back (Tried): a failure marks the build failed here; the
// head that serves becomes the applied deployment. Owned by deploy::Deploys; the server's boot
// plan (server/boot_plan.h) asks it before the deploy thread starts.
//
//   for (const BootCandidate& c : candidates.List()) { ... candidates.Tried(c, outcome); }
//
// Thread safety: none; before the deploy thread starts.
#ifndef MOLT_KERNEL_DEPLOY_BOOT_CANDIDATES_H_
#define MOLT_KERNEL_DEPLOY_BOOT_CANDIDATES_H_

#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace molt::kernel::deploy {

class Registry;
class ServingState;
class Signatures;

struct BootCandidate {
  std::string file;  // the build file
  std::string sha256;
  std::string build_id;
  std::uint64_t seq = 0;  // the deployment it came from
  std::string what;       // "the head of prod (#12)", "prod's #9 (last known good)"
};

class BootCandidates {
 public:
  static constexpr std::size_t kTries = 5;  // LKG_MAX_TRIES

  // `branch`: the branch this server runs; `prod_rules`: only verified deployments boot.
  BootCandidates(Registry& registry, Signatures& signatures, ServingState& serving,
                 std::string branch, bool prod_rules)
      : registry_(registry),
        signatures_(signatures),
        serving_(serving),
        branch_(std::move(branch)),
        prod_rules_(prod_rules) {}

  // The candidates, in the order they are tried; each one left out is logged with why.
  std::vector<BootCandidate> List();
  // How `c` did: a failure is marked failed here; the head that serves is applied.
  void Tried(const BootCandidate& c, const Status& outcome);

 private:
  Registry& registry_;
  Signatures& signatures_;
  ServingState& serving_;
  const std::string branch_;
  const bool prod_rules_;
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_BOOT_CANDIDATES_H_
