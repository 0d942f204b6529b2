// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/deploys.h
//
// Deploys: a server's side of deploys (spec §26–§30, DESIGN.md §6, docs/deploys.md). It owns
// the registry and composes the parts that decide what a deploy, a promote, a rollback, a pin or
// a widened rollout may do, and asks the kernel to swap; everything runs on a thread of its own
// (the deploy thread), so that verifying a build (hashing every library), checking a signature
// or a durable registry write never holds the kernel thread: the kernel sees a swap request like
// SIGHUP's and answers with its outcome. The parts, each with one job:
//   Rollouts        deploy, promote, rollback, re-sign, widen; the fleet's deployments applied
//   Pins            a pin or an unpin of this server
//   Reports         this server's result of each deployment, and every server's
//   BootCandidates  the head and the last-known-good chain a boot tries
//   BuildStore      uploads, names resolved, the previous head, pruning
//   ServingState    the pin, a skipped head, the applied seq, the head file a reload swaps in
//   Signatures      the trusted keys, read, refreshed and checked
//   Refusals        the refusals kept, logged and told
//   FleetLink       the fleet's registry: opened, shared with, fetched from, mirrored
//   SwapQueue       the swaps, one at a time
// Rules: prod (signatures required: deploy.require_signatures, on by default for the prod
// branch) or dev (unsigned deploys taken).
//
// Every call answers through a Done<T> (pending_reply.h), from the deploy thread: a value, or a
// Status. The admin API (admin/deploy_routes.h) renders both; deploy/ knows no HTTP. Errors:
// kInvalidArgument (a malformed request, a file that is not a build), kNotFound (no such build,
// deployment or head), kRejected (refused by the rules: kept in the refusals), kIoError (the
// fleet's database did not answer: try again), kInternal (this server's registry failed).
//
// Thread safety: the boot calls before Start(), on one thread; after it, every public method is
// safe from any thread (each posts to the deploy thread, and answers from there).
#ifndef MOLT_KERNEL_DEPLOY_DEPLOYS_H_
#define MOLT_KERNEL_DEPLOY_DEPLOYS_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/serial_thread.h"
#include "kernel/src/deploy/boot_candidates.h"
#include "kernel/src/deploy/build_store.h"
#include "kernel/src/deploy/fleet_link.h"
#include "kernel/src/deploy/pending_reply.h"
#include "kernel/src/deploy/pins.h"
#include "kernel/src/deploy/refusals.h"
#include "kernel/src/deploy/registry.h"
#include "kernel/src/deploy/reports.h"
#include "kernel/src/deploy/rollouts.h"
#include "kernel/src/deploy/serving_state.h"
#include "kernel/src/deploy/signatures.h"
#include "kernel/src/deploy/swap_queue.h"
#include "kernel/src/deploy/trusted_keys.h"

namespace molt::kernel::deploy {

struct DeploysOptions {
  std::string dir;              // the registry's directory (<data>/registry)
  std::string branch = "prod";  // the branch this server runs (moltd --branch, deploy.branch)
  bool prod_rules = true;       // signatures required (deploy.require_signatures)
  std::string keys_file;        // deploy.keys ("" : none)
  std::uint64_t max_build_bytes = 1ull << 30;  // deploy.max_build_mb
  // Hears a refusal (its kind and reason) at most once per kind per refusal_event_gap, on the
  // deploy thread: moltd publishes it on the Bus as Kernel.DeployRefused (spec §29).
  Refusals::Listener on_refusal;
  std::chrono::milliseconds refusal_event_gap{60'000};
  // The fleet's registry on PostgreSQL (a libpq URL; "" : this server alone), this server's id
  // in it, and how often the fleet's deployments are read without a notification (spec §30,
  // POLL_SECONDS).
  std::string fleet_url;
  std::string server_id;
  std::chrono::milliseconds poll{60'000};
};

// A build a deploy or a rollback would take, and the seq it would be signed with.
struct Resolved {
  StoredBuild build;
  std::uint64_t next_seq = 0;
};

// What `molt branches` shows: this server's rules, pin and seqs, its keys and refusals, and every
// branch with the stored builds its heads name.
struct BranchesView {
  std::string branch;  // the one this server runs
  bool prod_rules = true;
  std::optional<ServingState::Pin> pin;
  std::uint64_t seq = 0;  // the last #seq claimed (the fleet's, in a fleet)
  std::uint64_t applied_seq = 0;
  std::string serving;  // the build id of the deployment that swapped in last
  TrustedKeys keys;
  std::vector<Refusals::Refusal> refusals;  // newest first
  std::vector<Branch> branches;
  std::map<std::string, StoredBuild> builds;  // by sha256: the heads' and previous heads'
};

class Deploys {
 public:
  using Candidate = BootCandidate;
  static constexpr std::size_t kBootTries = deploy::BootCandidates::kTries;

  // Opens the registry and reads the keys; a prod-rules server with no keys warns naming the fix.
  static Result<std::unique_ptr<Deploys>> Open(DeploysOptions options);
  ~Deploys();
  Deploys(const Deploys&) = delete;
  Deploys& operator=(const Deploys&) = delete;

  // --- boot (before Start) ---
  // BootCandidates::List: the head, then the branch's earlier builds.
  std::vector<Candidate> BootCandidates() { return boot_.List(); }
  // How a candidate did (BootCandidates::Tried).
  void BootResult(const Candidate& c, const Status& outcome) { boot_.Tried(c, outcome); }

  // Starts the deploy thread; `swap` is how it asks the kernel to serve a build.
  void Start(SwapFn swap);

  // --- the API (any thread; `done` is called once, from the deploy thread) ---
  // A fresh path for an upload to be written to (then handed to Upload).
  std::string UploadPath() { return builds_.UploadPath(); }
  std::uint64_t max_build_bytes() const { return options_.max_build_bytes; }
  void Upload(std::string file, Done<Uploaded> done);
  // `wait`: 0 answers at once (pending); else at most that long for the swap's outcome.
  void Deploy(DeployRequest request, std::chrono::seconds wait, Done<DeployOutcome> done);
  // A pin or an unpin of this server.
  void Pin(PinRequest request, std::chrono::seconds wait, Done<PinOutcome> done);
  // The build a deploy of `build` (or a rollback without one) would take.
  void Resolve(std::string branch, std::string build, bool rollback, Done<Resolved> done);
  void Builds(std::size_t limit, Done<std::vector<StoredBuild>> done);
  void Branches(Done<BranchesView> done);
  // `branch` "" : every branch; newest first.
  void Deployments(std::string branch, std::size_t limit, Done<std::vector<Deployment>> done);
  // Deployment `seq` and every server's result of it (Reports::Results; one recorded a moment
  // ago elsewhere is read from the fleet first).
  void Results(std::uint64_t seq, Done<DeploymentResults> done);
  // SIGHUP: the keys file is read again.
  void ReloadKeys();
  // The build file of this server's pin, else of its branch's head ("" : neither): what a
  // reload swaps in.
  std::string HeadFile() const { return serving_.HeadFile(); }
  // The newest deployment this server applied (0: none); any thread.
  std::uint64_t AppliedSeq() const { return serving_.applied_seq(); }
  // The health window rolled back from `build_id`: its deployment's result becomes rolled_back.
  void RolledBack(std::string build_id, std::string why);

  // Rollouts::Bucket: a server's rollout bucket.
  static std::uint32_t Bucket(std::string_view server_id) { return Rollouts::Bucket(server_id); }

 private:
  Deploys(DeploysOptions options, std::unique_ptr<Registry> registry);
  // Reads the keys again every Signatures::kRefresh.
  void RefreshKeys();
  BranchesView BranchesNow();

  const DeploysOptions options_;
  const std::unique_ptr<Registry> registry_;
  Refusals refusals_;
  Signatures signatures_;
  FleetLink fleet_;
  ServingState serving_;
  BuildStore builds_;
  Reports reports_;
  SerialThread worker_;  // the deploy thread
  SwapQueue swaps_;      // after the thread: its answers are dropped first
  Rollouts rollouts_;
  Pins pins_;
  deploy::BootCandidates boot_;
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_DEPLOYS_H_
