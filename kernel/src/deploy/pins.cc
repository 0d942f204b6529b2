// SPDX-License-Identifier: Apache-2.0
// Pins: a pin or an unpin checked, swapped in, and held (pins.h).
#include "kernel/src/deploy/pins.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <utility>

#include "kernel/src/core/clock.h"
#include "kernel/src/deploy/build_store.h"
#include "kernel/src/deploy/deploy_log.h"
#include "kernel/src/deploy/refusals.h"
#include "kernel/src/deploy/serving_state.h"
#include "kernel/src/deploy/signatures.h"
#include "kernel/src/loader/signing.h"

namespace molt::kernel::deploy {

void Pins::Pin(PinRequest r, std::chrono::seconds wait, Done<PinOutcome> done) {
  Result<StoredBuild> b = Target(r);
  if (b.ok() && prod_rules_) {
    if (Status s = CheckSigned(r, *b); !s.ok()) {
      b = s;
    }
  }
  if (!b.ok()) {
    done(b.status());
    return;
  }
  const PinOutcome pending{"pending", b->id, b->sha256, "", "", /*pending=*/true};
  std::shared_ptr<PendingReply<PinOutcome>> reply;
  if (wait.count() == 0) {
    done(pending);
  } else {
    reply = PendingReply<PinOutcome>::Arm(p_.thread, wait, std::move(done), pending);
  }
  const std::string what = r.unpin ? "unpin" : "pin";
  p_.swaps.Enqueue({{p_.registry.BuildPath(b->sha256), b->sha256, b->id},
                    what + " by " + (r.by.empty() ? std::string("(unnamed)") : r.by),
                    [this, r, b = *b, reply](const SwapOutcome& o) {
                      Finished(r, b, o);
                      if (reply != nullptr) {
                        reply->Answer(PinOutcome{o.result, b.id, b.sha256, o.reason, o.report});
                      }
                    }});
}

Result<StoredBuild> Pins::Target(const PinRequest& r) {
  if (r.unpin) {
    if (!p_.serving.pin().has_value()) {
      return p_.refusals.Refuse("pin", "this server is not pinned");
    }
    std::optional<Branch> head = p_.registry.FindBranch(branch_);
    std::optional<StoredBuild> b =
        head.has_value() ? p_.registry.FindBuild(head->head) : std::nullopt;
    if (!b.has_value()) {
      return p_.refusals.Refuse("pin", branch_ + " has no head to go back to");
    }
    return *b;
  }
  std::optional<StoredBuild> b = p_.builds.Find(r.build);
  const bool known = b.has_value() && [&] {
    for (const Deployment& d : p_.registry.Deployments("", Registry::kDeploymentsKept)) {
      if (d.build == b->sha256) {
        return true;
      }
    }
    return false;
  }();
  if (!known) {
    return p_.refusals.Refuse("pin", "build \"" + r.build +
                                         "\" is not a known deployment (a pin takes a build some "
                                         "branch was deployed with: molt deployments)");
  }
  return *b;
}

Status Pins::CheckSigned(const PinRequest& r, const StoredBuild& b) {
  const std::int64_t age = WallMs() - static_cast<std::int64_t>(r.sent_ms);
  if (age > kMaxAgeMs || age < -kMaxAgeMs) {
    return p_.refusals.Refuse(
        "pin", fmt::format("a {} is taken within {} s of its signing (sent_ms); this one is {} s "
                           "off: sign it again",
                           r.unpin ? "unpin" : "pin", kMaxAgeMs / 1000, age / 1000));
  }
  loader::PinFields f;
  f.branch = branch_;
  f.build = r.unpin ? "" : b.sha256;
  f.by = r.by;
  f.sent_ms = r.sent_ms;
  f.unpin = r.unpin;
  if (Status s = p_.signatures.Verify(loader::CanonicalPin(f), r.sig, r.sig_fallback,
                                      /*reread=*/true);
      !s.ok()) {
    return p_.refusals.Refuse("signature", "prod servers take only signed pins: " + s.message());
  }
  return Status::Ok();
}

void Pins::Finished(const PinRequest& r, const StoredBuild& b, const SwapOutcome& o) {
  const bool ok = o.result != "failed";
  if (ok && r.unpin) {
    DeployLog().Info("unpinned by {}: {} serves again", r.by, b.id);
    p_.serving.ClearPin();
  } else if (ok) {
    DeployLog().Info("pinned to {} by {} until the next deploy of {} reaches this server", b.id,
                     r.by, branch_);
    p_.serving.SetPin({b.sha256, b.id, r.by, WallMs()});
  } else {
    p_.serving.Refresh();
  }
}

}  // namespace molt::kernel::deploy
