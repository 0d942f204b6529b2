// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/pins.h
//
// Pins: a pin or an unpin of this server (spec §28, docs/deploys.md). A pin holds the server on
// `build`, a build some branch was deployed with, until the next deploy of its branch reaches
// it (Rollouts ends it then), an unpin, or the close; it is never stored (ServingState holds
// it). An unpin swaps the branch's head back in. On prod rules a pin is signed
// (loader::CanonicalPin) within kMaxAgeMs of its sent_ms. Owned by deploy::Deploys.
//
// Errors: kRejected (refused: not pinned, not a known deployment, stale or unsigned; kept in
// Refusals).
//
// Thread safety: none; the deploy thread only.
#ifndef MOLT_KERNEL_DEPLOY_PINS_H_
#define MOLT_KERNEL_DEPLOY_PINS_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "kernel/src/deploy/pending_reply.h"
#include "kernel/src/deploy/registry.h"
#include "kernel/src/deploy/swap_queue.h"

namespace molt::kernel::deploy {

class BuildStore;
class Refusals;
class ServingState;
class Signatures;

// A pin (spec §28): this server held on `build` until the next deploy of its branch reaches
// it, an unpin, or the server closing. Signed on prod rules (loader::CanonicalPin, within
// Pins::kMaxAgeMs of sent_ms).
struct PinRequest {
  std::string build = "";  // as DeployRequest::build; "" for an unpin
  bool unpin = false;
  std::uint64_t sent_ms = 0;
  std::string sig = "";
  std::string sig_fallback = "";
  std::string by = "";
};

// How a pin or an unpin went, as far as its caller waited.
struct PinOutcome {
  std::string result;  // "pending" (not waited for, or the wait ran out), else the swap's
  std::string build_id;
  std::string sha256;
  std::string reason;  // why the swap failed
  std::string report;  // the swap report's JSON ("" none)
  bool pending = false;
};

class Pins {
 public:
  static constexpr std::int64_t kMaxAgeMs = 120'000;  // PIN_MAX_AGE
  // The parts a pin uses, owned by Deploys; `thread` is the deploy thread.
  struct Parts {
    Registry& registry;
    BuildStore& builds;
    Signatures& signatures;
    Refusals& refusals;
    ServingState& serving;
    SwapQueue& swaps;
    SerialThread& thread;
  };

  // `branch`: the branch this server runs; `prod_rules`: pins are signed.
  Pins(std::string branch, bool prod_rules, Parts parts)
      : branch_(std::move(branch)), prod_rules_(prod_rules), p_(parts) {}

  // Runs `r`: `done` hears the refusal, or (`wait` 0) at once pending, or the swap's outcome,
  // or pending at `wait`.
  void Pin(PinRequest r, std::chrono::seconds wait, Done<PinOutcome> done);

 private:
  // The build `r` swaps in (an unpin: the branch's head), or the refusal.
  Result<StoredBuild> Target(const PinRequest& r);
  // Prod rules: signed, within kMaxAgeMs.
  Status CheckSigned(const PinRequest& r, const StoredBuild& b);
  // The swap went (`o`): the pin is held, or let go.
  void Finished(const PinRequest& r, const StoredBuild& b, const SwapOutcome& o);

  const std::string branch_;
  const bool prod_rules_;
  const Parts p_;
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_PINS_H_
