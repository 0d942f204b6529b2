// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/rollouts.h
//
// Rollouts: the rules of a deploy, a promote, a rollback, a re-sign and a widened rollout
// (spec §26–§30, docs/deploys.md), and how a deployment reaches this server:
//   deploy    a stored build becomes its branch's head (#seq claimed, the deployment recorded:
//             by the fleet's registry in a fleet); on this server's branch it is swapped in
//             (adopted without a swap when it already serves); the applied seq moves only when
//             that worked. Refused, with the reason, when a signature, the seq, the build's
//             channel or a failed-here mark says no.
//   rollback  a deploy of the branch's previous different head (or --to a build or #SEQ)
//   promote   a deploy of a build from elsewhere; never a dev or dirty build onto a prod branch
//   resign    the head again under a new seq and today's key: never a swap
//   widen     the head's rollout reaches more of the branch's servers (--widen)
// A deployment another server recorded (Sync, from the fleet's registry) is applied here like
// one made here: checked again (failed-here mark, channel, signature), then swapped, or skipped
// when this server is outside its rollout (dev rules only: a rollout is not signed).
// Owned by deploy::Deploys, which composes the parts it uses.
//
// Errors: kInvalidArgument (a malformed request), kNotFound (no such build, no earlier build,
// no head to widen), kRejected (refused by the rules: kept in Refusals), kIoError (the fleet's
// database did not answer), kInternal (this server's registry failed).
//
// Thread safety: none; the deploy thread only (Sync at boot before it starts).
#ifndef MOLT_KERNEL_DEPLOY_ROLLOUTS_H_
#define MOLT_KERNEL_DEPLOY_ROLLOUTS_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kernel/src/deploy/pending_reply.h"
#include "kernel/src/deploy/registry.h"
#include "kernel/src/deploy/swap_queue.h"

namespace molt::kernel::deploy {

class BuildStore;
class FleetLink;
class Refusals;
class Reports;
class ServingState;
class Signatures;

// A deploy, promote, rollback, re-sign or widen as the API receives it (docs/deploys.md).
struct DeployRequest {
  std::string kind = "deploy";  // "deploy", "promote", "rollback", "resign", "widen"
  std::string branch;
  std::string build;  // a sha256 (or 8+ hex prefix), a build id or "#SEQ"; rollback: "" previous
  std::uint64_t seq = 0;  // 0: the next (unsigned deploys only)
  std::uint64_t sent_ms = 0;
  std::string sig;
  std::string sig_fallback;
  std::string by;
  std::string message;
  bool force = false;
  // The share of the branch's servers that swap (Rollouts::Bucket): 1 to 100; for "widen", the
  // wider share of the branch's head. Not signed, so a prod-rules server takes every deploy
  // whole (spec §28).
  std::uint32_t rollout = 100;
};

// How a deploy went, as far as its caller waited.
struct DeployOutcome {
  Deployment deployment;  // its result: recorded, swapped, adopted, failed, skipped, pending
  // Answered before the swap's outcome: the call did not wait, or its wait ran out.
  bool pending = false;
  // A deploy's wait ran out (its answer says where the result shows); a widen's does not say.
  bool timed_out = false;
};

class Rollouts {
 public:
  // This server's side of the rules.
  struct Rules {
    std::string branch;      // the branch it runs
    bool prod_rules = true;  // signatures required
    std::string server_id;   // its rollout bucket
  };
  // The parts a rollout uses, owned by Deploys; `thread` is the deploy thread.
  struct Parts {
    Registry& registry;
    FleetLink& fleet;
    BuildStore& builds;
    Signatures& signatures;
    Refusals& refusals;
    Reports& reports;
    ServingState& serving;
    SwapQueue& swaps;
    SerialThread& thread;
  };

  Rollouts(Rules rules, Parts parts) : rules_(std::move(rules)), p_(parts) {}

  // Runs `r`: `done` hears the deployment at once when it is recorded on another branch, or
  // skipped; else (`wait` 0) at once as pending, or at the swap's outcome, or pending with
  // timed_out at `wait`.
  void Deploy(DeployRequest r, std::chrono::seconds wait, Done<DeployOutcome> done);
  // Copies the fleet's deployments this server lacks (FleetLink::Mirror); off the boot, the
  // newest of this server's branch is applied, as is a skipped head whose rollout widened.
  void Sync(bool boot);
  // The health window rolled back from `build_id`: when it is the deployment that swapped in
  // here, its result becomes rolled_back and its build is marked failed here.
  void RolledBack(const std::string& build_id, const std::string& why);
  // The deployments of this server's branch that a stop mid-deploy (kill -9, a crash) left
  // pending get their result, once it serves again: superseded when a later one moved the head
  // past it, adopted when it is the head and the boot serves it (applied), failed when it is the
  // head and its build failed here. A pending head not yet applied stays for the apply that
  // follows (its swap settles it). Returns how many were settled.
  std::size_t SettleInterrupted();

  // A server's rollout bucket (spec §28, bit-exact): djb2 of its id (hash = hash * 33 + byte,
  // from 5381, mod 2^32) mod 100. A deployment with rollout R reaches the servers below R.
  static std::uint32_t Bucket(std::string_view server_id);
  // A branch name: 1 to 64 of [A-Za-z0-9._-].
  static bool ValidBranch(std::string_view branch);

 private:
  using Reply = std::shared_ptr<PendingReply<DeployOutcome>>;
  struct Admitted {
    StoredBuild build;
    Deployment deployment;
  };

  // The request's shape: its branch, a rollout on prod rules.
  Status CheckRequest(const DeployRequest& r) const;
  // The build `r` names (the previous head for a rollback without --to).
  Result<StoredBuild> Target(const DeployRequest& r);
  // The rules on the build: a re-sign names the head, a prod branch takes prod builds, a build
  // that failed here needs --force, the seq is newer than the applied one.
  Status CheckBuild(const DeployRequest& r, const StoredBuild& b);
  // Prod rules: a prod build, signed, naming its seq.
  Status CheckSigned(const DeployRequest& r, const Deployment& d, const StoredBuild& b);
  Result<Admitted> Admit(const DeployRequest& r);
  // Records `d` (in a fleet: the fleet's registry numbers it, this one mirrors it).
  Result<Deployment> Record(Deployment d, const StoredBuild& b);
  // A recorded deployment reaches this server: the answer, the skip, or the swap.
  void Launch(const Deployment& d, std::chrono::seconds wait, Done<DeployOutcome> done);
  void Widen(const DeployRequest& r, std::chrono::seconds wait, Done<DeployOutcome> done);
  // Takes a deployment of this server's branch another server recorded (or a widened one):
  // checked like one made here, then swapped; `reply` (or null) hears how it went.
  void Apply(Deployment d, const Reply& reply = nullptr);
  // Whether this server is outside `d`'s rollout (never on prod rules: a rollout is unsigned).
  bool Outside(const Deployment& d) const;
  // `d` is not taken here: outside its rollout. Its result becomes skipped (once).
  Deployment Skip(Deployment d);
  void Swap(const Deployment& d, const Reply& reply);
  void Finished(Deployment d, const Reply& reply, const SwapOutcome& o);
  std::string ProtocolLine(const std::string& branch, const StoredBuild& b) const;

  const Rules rules_;
  const Parts p_;
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_ROLLOUTS_H_
