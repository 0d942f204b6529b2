// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/serving_state.h
//
// ServingState: where this server stands among its branch's deploys (spec §28). It holds
//   the pin       a build this server is held on until its branch's next deploy reaches it, an
//                 unpin, or the close (never stored)
//   the skip      its branch's head when this server is outside that head's rollout
//   the swapped   the newest deployment that swapped in here (a health-window rollback names it)
//   the applied   the newest deployment applied here (Registry::applied_seq, readable anywhere)
// and from them the build file a reload swaps in (HeadFile): the pin's, else the head's, else
// (outside the head's rollout) the applied deployment's. Owned by deploy::Deploys; Rollouts,
// Pins and BootCandidates move it.
//
//   serving.SetPin({sha, id, "ana", WallMs()});  // HeadFile() is the pinned build's now
//
// Thread safety: HeadFile() and applied_seq() from any thread; the rest on the deploy thread
// (the boot's calls before it starts).
#ifndef MOLT_KERNEL_DEPLOY_SERVING_STATE_H_
#define MOLT_KERNEL_DEPLOY_SERVING_STATE_H_

#include <molt/kernel/status.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace molt::kernel::deploy {

class Registry;

class ServingState {
 public:
  struct Pin {
    std::string sha256;
    std::string build_id;
    std::string by;
    std::int64_t at_ms = 0;
  };

  // `branch`: the branch this server runs.
  ServingState(Registry& registry, std::string branch);

  // The build file a reload swaps in ("" : no pin and no head).
  std::string HeadFile() const;
  // Computes HeadFile() again: after the registry's head moved.
  void Refresh();

  const std::optional<Pin>& pin() const { return pin_; }
  void SetPin(Pin pin);
  void ClearPin();
  // The builds pruning keeps for this server's sake: the pin's.
  std::set<std::string> Kept() const;

  // Deployment `seq` (its branch's head) is outside this server's rollout: a reload keeps the
  // applied build. 0: none is.
  std::uint64_t skipped_seq() const { return skipped_seq_; }
  void SetSkipped(std::uint64_t seq);

  // The newest deployment that swapped in here (or the boot's): its build id and seq.
  const std::string& swapped_id() const { return swapped_id_; }
  std::uint64_t swapped_seq() const { return swapped_seq_; }
  void SetSwapped(std::string build_id, std::uint64_t seq);
  void ForgetSwapped() { swapped_id_.clear(); }

  // The newest deployment applied here (0: none), from any thread.
  std::uint64_t applied_seq() const { return applied_.load(); }
  // Records `seq` as applied, in the registry too.
  Status SetApplied(std::uint64_t seq);

 private:
  Registry& registry_;
  const std::string branch_;
  std::optional<Pin> pin_;
  std::uint64_t skipped_seq_ = 0;
  std::string swapped_id_;
  std::uint64_t swapped_seq_ = 0;
  // The registry's applied seq, for readers off the deploy thread (the fleet's heartbeat).
  std::atomic<std::uint64_t> applied_{0};
  mutable std::mutex head_mu_;
  std::string head_file_;  // guarded by head_mu_
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_SERVING_STATE_H_
