// SPDX-License-Identifier: Apache-2.0
// Rollouts: a deploy's rules, its record, and its way to this server (rollouts.h).
#include "kernel/src/deploy/rollouts.h"

#include <fmt/format.h>

#include <optional>
#include <utility>

#include "kernel/src/deploy/build_store.h"
#include "kernel/src/deploy/deploy_log.h"
#include "kernel/src/deploy/fleet_link.h"
#include "kernel/src/deploy/refusals.h"
#include "kernel/src/deploy/reports.h"
#include "kernel/src/deploy/serving_state.h"
#include "kernel/src/deploy/signatures.h"

namespace molt::kernel::deploy {
namespace {

// The channel a branch is (spec §27): prod for the prod branch, dev for every other.
std::string BranchChannel(std::string_view branch) { return branch == "prod" ? "prod" : "dev"; }

}  // namespace

std::uint32_t Rollouts::Bucket(std::string_view server_id) {
  std::uint32_t hash = 5381;
  for (const char c : server_id) {
    hash = hash * 33 + static_cast<unsigned char>(c);
  }
  return hash % 100;
}

bool Rollouts::ValidBranch(std::string_view b) {
  return !b.empty() && b.size() <= 64 &&
         b.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
             std::string_view::npos;
}

void Rollouts::Deploy(DeployRequest r, std::chrono::seconds wait, Done<DeployOutcome> done) {
  if (Status s = CheckRequest(r); !s.ok()) {
    done(s);
    return;
  }
  if (r.kind == "widen") {
    Widen(r, wait, std::move(done));
    return;
  }
  Result<Admitted> admitted = Admit(r);
  if (!admitted.ok()) {
    done(admitted.status());
    return;
  }
  Result<Deployment> recorded = Record(std::move(admitted->deployment), admitted->build);
  if (!recorded.ok()) {
    done(recorded.status());
    return;
  }
  Launch(*recorded, wait, std::move(done));
}

Status Rollouts::CheckRequest(const DeployRequest& r) const {
  if (!ValidBranch(r.branch)) {
    return Status::InvalidArgument("\"branch\" must be 1 to 64 letters, digits, '.', '_' or '-'");
  }
  if (r.rollout < 100 && rules_.prod_rules) {
    return Status::InvalidArgument(
        "a rollout is not signed, so prod-rules servers take every deploy whole: deploy without "
        "--rollout (spec §28)");
  }
  return Status::Ok();
}

Result<StoredBuild> Rollouts::Target(const DeployRequest& r) {
  if (r.kind == "rollback" && r.build.empty()) {
    std::optional<StoredBuild> b = p_.builds.Previous(r.branch);
    if (!b.has_value()) {
      return Status::NotFound("no earlier build in " + r.branch +
                              "'s previous heads or deployments to roll back to (name one with "
                              "--to BUILD|#SEQ)");
    }
    return *b;
  }
  std::optional<StoredBuild> b = p_.builds.Find(r.build);
  if (!b.has_value()) {
    return Status::NotFound("no stored build is named \"" + r.build +
                            "\" (a sha256, a build id or #SEQ; `molt builds` lists them, `molt "
                            "deploy FILE.molt` uploads one)");
  }
  return *b;
}

Status Rollouts::CheckBuild(const DeployRequest& r, const StoredBuild& b) {
  const std::string build_channel = b.ManifestField("channel");
  if (r.kind == "resign") {  // the head again, under a new seq and today's key: never a swap
    std::optional<Branch> head = p_.registry.FindBranch(r.branch);
    if (!head.has_value() || head->head != b.sha256) {
      return p_.refusals.Refuse("resign",
                                "a re-sign names the head of " + r.branch + " (" +
                                    (head.has_value() ? "build " + head->head.substr(0, 12)
                                                      : std::string("it has none")) +
                                    "), not build " + b.id + ": deploy that build instead");
    }
  }
  if (BranchChannel(r.branch) == "prod" && (build_channel != "prod" || b.dirty()) &&
      r.kind != "resign") {  // a re-signed head was admitted once already
    const std::string what =
        b.dirty() ? "a dirty build (uncommitted changes)" : "a " + build_channel + "-channel build";
    if (r.kind == "promote") {
      return p_.refusals.Refuse(
          "channel", "build " + b.id + " is " + what + ": " + r.branch +
                         " is a prod branch, so it takes prod builds only, even with --force "
                         "(rebuild for prod: molt build DIR --channel prod from a clean tree)");
    }
    if (!r.force) {
      return p_.refusals.Refuse("channel", "build " + b.id + " is " + what + " and " + r.branch +
                                               " is a prod branch: build it for prod, or deploy "
                                               "with --force");
    }
  }
  if (r.branch == rules_.branch && !b.failed_here.empty() && !r.force && r.kind != "resign") {
    return p_.refusals.Refuse("failed_here", "build " + b.id + " failed on this server (" +
                                                 b.failed_here +
                                                 "): it is not taken again without --force");
  }
  const std::uint64_t applied = p_.registry.applied_seq();
  if (r.seq != 0 && r.seq <= applied) {
    return p_.refusals.Refuse(
        "seq", fmt::format("seq {} is not newer than the applied {} (replay?)", r.seq, applied));
  }
  return Status::Ok();
}

Status Rollouts::CheckSigned(const DeployRequest& r, const Deployment& d, const StoredBuild& b) {
  if (const std::string channel = b.ManifestField("channel"); channel != "prod") {
    return p_.refusals.Refuse("channel", "build " + b.id + " is a " + channel +
                                             "-channel build: a prod-rules server takes prod "
                                             "builds only");
  }
  if (r.seq == 0) {
    return p_.refusals.Refuse(
        "signature",
        "unsigned: a prod-rules server takes only signed deploys, each naming its seq (molt "
        "deploy --key FILE signs them)");
  }
  if (Status s = p_.signatures.Verify(Signatures::DeployMessage(d, b), d.sig, d.sig_fallback,
                                      /*reread=*/true);
      !s.ok()) {
    return p_.refusals.Refuse("signature", s.message());
  }
  return Status::Ok();
}

Result<Rollouts::Admitted> Rollouts::Admit(const DeployRequest& r) {
  MOLT_ASSIGN_OR_RETURN(StoredBuild b, Target(r));
  MOLT_RETURN_IF_ERROR(CheckBuild(r, b));
  Deployment d;
  d.seq = r.seq;
  d.branch = r.branch;
  d.build = b.sha256;
  d.build_id = b.id;
  d.kind = r.kind;
  d.by = r.by;
  d.message = r.message;
  d.sent_ms = r.sent_ms;
  d.sig = r.sig;
  d.sig_fallback = r.sig_fallback;
  d.rollout = r.rollout;
  if (rules_.prod_rules) {
    MOLT_RETURN_IF_ERROR(CheckSigned(r, d, b));
  }
  d.protocol = ProtocolLine(r.branch, b);
  d.result = r.branch == rules_.branch ? "pending" : "recorded";
  return Admitted{std::move(b), std::move(d)};
}

Result<Deployment> Rollouts::Record(Deployment d, const StoredBuild& b) {
  // In a fleet the fleet's registry numbers it (and every server hears of it), then this
  // server's copy records it like a deployment it mirrors.
  Result<Deployment> recorded = Status::Internal("not recorded");
  if (p_.fleet.shared()) {
    Status shared = p_.fleet.Share(b);
    recorded = shared.ok() ? p_.fleet.fleet().Record(std::move(d)) : Result<Deployment>(shared);
    if (recorded.ok()) {
      recorded = p_.registry.Mirror(*recorded);
    }
  } else {
    recorded = p_.registry.Record(std::move(d));
  }
  if (!recorded.ok()) {
    const Status& s = recorded.status();
    if (s.code() == Status::Code::kRejected) {
      return p_.refusals.Refuse("seq", s.message());
    }
    return s.code() == Status::Code::kIoError ? s : Status::Internal(s.message());
  }
  p_.serving.Refresh();
  p_.builds.Prune(
      p_.serving.Kept());  // the deployments past the kept ones went: so may their builds
  const bool here = recorded->branch == rules_.branch;
  DeployLog().Info("#{} {}: {} {} by {}{} ({})", recorded->seq, recorded->branch, recorded->kind,
                   recorded->build_id, recorded->by.empty() ? "(unnamed)" : recorded->by,
                   recorded->message.empty() ? "" : ": " + recorded->message,
                   here ? "swapping" : "recorded: this server runs " + rules_.branch);
  return recorded;
}

void Rollouts::Launch(const Deployment& d, std::chrono::seconds wait, Done<DeployOutcome> done) {
  if (d.branch != rules_.branch) {
    done(DeployOutcome{d});
    return;
  }
  if (d.kind == "resign") {  // the applied seq moves; whatever serves keeps serving
    Finished(d, std::make_shared<PendingReply<DeployOutcome>>(std::move(done)),
             {"adopted", "re-signed: the same build, no swap", "", false});
    return;
  }
  if (Outside(d)) {  // the head moved; this server keeps what it serves
    done(DeployOutcome{Skip(d)});
    return;
  }
  p_.serving.SetSkipped(0);
  if (wait.count() == 0) {
    done(DeployOutcome{d, /*pending=*/true});
    Swap(d, nullptr);
    return;
  }
  Swap(d, PendingReply<DeployOutcome>::Arm(p_.thread, wait, std::move(done),
                                           DeployOutcome{d, /*pending=*/true, /*timed_out=*/true}));
}

void Rollouts::Widen(const DeployRequest& r, std::chrono::seconds wait, Done<DeployOutcome> done) {
  std::optional<Branch> head = p_.registry.FindBranch(r.branch);
  std::optional<Deployment> d =
      head.has_value() ? p_.registry.FindDeployment(head->seq) : std::nullopt;
  if (!d.has_value()) {
    done(Status::NotFound(r.branch + " has no head to widen the rollout of (molt branches)"));
    return;
  }
  if (d->rollout >= r.rollout) {
    done(p_.refusals.Refuse(
        "rollout", fmt::format("#{} (the head of {}) reaches {}% of its servers already: --widen "
                               "names a larger share",
                               d->seq, r.branch, d->rollout)));
    return;
  }
  if (p_.fleet.shared()) {
    Status s = p_.fleet.Open();
    if (s.ok()) {
      s = p_.fleet.fleet().Widen(d->seq, r.rollout);
    }
    if (s.code() == Status::Code::kRejected) {
      done(p_.refusals.Refuse("rollout", s.message()));
      return;
    }
    if (!s.ok()) {
      done(Status::IoError(s.message()));
      return;
    }
  }
  if (Status s = p_.registry.SetRollout(d->seq, r.rollout); !s.ok()) {
    done(Status::Internal(s.message()));
    return;
  }
  DeployLog().Info("#{} {}: {}'s rollout widened from {}% to {}% by {}", d->seq, d->branch,
                   d->build_id, d->rollout, r.rollout, r.by.empty() ? "(unnamed)" : r.by);
  d->rollout = r.rollout;
  if (d->branch != rules_.branch || d->result != "skipped") {
    done(DeployOutcome{*d});
    return;
  }
  if (wait.count() == 0) {
    done(DeployOutcome{*d, /*pending=*/true});
    Apply(*d);
    return;
  }
  Apply(*d, PendingReply<DeployOutcome>::Arm(p_.thread, wait, std::move(done),
                                             DeployOutcome{*d, /*pending=*/true}));
}

void Rollouts::Sync(bool boot) {
  if (!p_.fleet.shared()) {
    return;
  }
  std::optional<FleetLink::Mirrored> m = p_.fleet.Mirror(boot);
  if (!m.has_value()) {
    return;
  }
  p_.serving.Refresh();
  if (m->newest.has_value()) {
    p_.builds.Prune(p_.serving.Kept());
    if (!boot) {
      Apply(std::move(*m->newest));
    }
  } else if (p_.serving.skipped_seq() != 0 && !m->stuck) {  // outside the head's rollout
    if (std::optional<Deployment> widened = p_.fleet.Widened(p_.serving.skipped_seq());
        widened.has_value()) {
      Apply(std::move(*widened));
    }
  }
}

bool Rollouts::Outside(const Deployment& d) const {
  return !rules_.prod_rules && d.rollout < 100 && Bucket(rules_.server_id) >= d.rollout;
}

Deployment Rollouts::Skip(Deployment d) {
  p_.serving.SetSkipped(d.seq);
  const std::string reason = fmt::format("outside the {}% rollout (this server's bucket is {})",
                                         d.rollout, Bucket(rules_.server_id));
  if (d.result == "skipped" && d.reason == reason) {
    return d;  // reported once per seq and result
  }
  d.result = "skipped";
  d.reason = reason;
  d.report.clear();
  p_.reports.Set(d);
  DeployLog().Info("#{} {}: {} skipped: {}", d.seq, d.branch, d.build_id, reason);
  return d;
}

void Rollouts::Apply(Deployment d, const Reply& reply) {
  auto refuse = [&](std::string_view kind, const std::string& reason) {
    p_.refusals.Refuse(kind, reason);
    d.result = "failed";
    d.reason = reason;
    p_.reports.Set(d);
    if (reply != nullptr) {
      reply->Answer(DeployOutcome{d});
    }
  };
  std::optional<StoredBuild> b = p_.registry.FindBuild(d.build);
  if (d.seq <= p_.registry.applied_seq() || !b.has_value()) {
    return;  // applied already (or a newer one was)
  }
  if (!b->failed_here.empty() && d.kind != "resign") {
    refuse("failed_here", "build " + b->id + " failed on this server (" + b->failed_here +
                              "): it is not taken again without --force");
    return;
  }
  if (rules_.prod_rules) {
    if (b->ManifestField("channel") != "prod") {
      refuse("channel", "build " + b->id + " is a " + b->ManifestField("channel") +
                            "-channel build: a prod-rules server takes prod builds only");
      return;
    }
    if (Status s = p_.signatures.Verify(Signatures::DeployMessage(d, *b), d.sig, d.sig_fallback,
                                        /*reread=*/true);
        !s.ok()) {
      refuse("signature", s.message());
      return;
    }
  }
  if (Outside(d)) {
    d = Skip(std::move(d));
    if (reply != nullptr) {
      reply->Answer(DeployOutcome{d});
    }
    return;
  }
  p_.serving.SetSkipped(0);
  if (d.kind == "resign") {
    Finished(d, reply, {"adopted", "re-signed: the same build, no swap", "", false});
    return;
  }
  Swap(d, reply);
}

void Rollouts::Swap(const Deployment& d, const Reply& reply) {
  p_.swaps.Enqueue({{p_.registry.BuildPath(d.build), d.build, d.build_id},
                    fmt::format("{} #{}", d.kind, d.seq),
                    [this, d, reply](const SwapOutcome& o) { Finished(d, reply, o); }});
}

void Rollouts::Finished(Deployment d, const Reply& reply, const SwapOutcome& o) {
  d.result = o.result;
  d.reason = o.reason;
  d.report = o.report;
  p_.reports.Set(d);
  if (o.result == "failed") {
    if (o.build_failed) {
      (void)p_.registry.MarkFailed(d.build, o.reason);
    }
    DeployLog().Error(
        "#{} {}: {} failed here: {} ({} keeps serving)", d.seq, d.branch, d.build_id, o.reason,
        p_.serving.swapped_id().empty() ? "the previous build" : p_.serving.swapped_id());
  } else if (d.kind == "resign") {
    if (Status s = p_.serving.SetApplied(d.seq); !s.ok()) {
      DeployLog().Error("#{}: {}", d.seq, s.message());
    }
    DeployLog().Info("#{} {}: {} re-signed (no swap)", d.seq, d.branch, d.build_id);
  } else {
    (void)p_.registry.ClearFailed(d.build);
    if (Status s = p_.serving.SetApplied(d.seq); !s.ok()) {
      DeployLog().Error("#{}: {}", d.seq, s.message());
    }
    p_.serving.SetSwapped(d.build_id, d.seq);
    if (const std::optional<ServingState::Pin>& pin = p_.serving.pin(); pin.has_value()) {
      DeployLog().Info("#{} {}: the pin on {} ends: the branch's deploy reached this server", d.seq,
                       d.branch, pin->build_id);
      p_.serving.ClearPin();
    }
    DeployLog().Info("#{} {}: {} {}", d.seq, d.branch, d.build_id, o.result);
  }
  if (reply != nullptr) {
    reply->Answer(DeployOutcome{d});
  }
}

void Rollouts::RolledBack(const std::string& build_id, const std::string& why) {
  if (p_.serving.swapped_seq() == 0 || p_.serving.swapped_id() != build_id) {
    return;  // not a deployed build
  }
  std::optional<Deployment> d = p_.registry.FindDeployment(p_.serving.swapped_seq());
  if (d.has_value()) {
    d->result = "rolled_back";
    d->reason = why;
    p_.reports.Set(*d);
    (void)p_.registry.MarkFailed(d->build, why);
    DeployLog().Warn("#{} {}: {} rolled back: {}", d->seq, d->branch, d->build_id, why);
  }
  p_.serving.ForgetSwapped();
}

std::size_t Rollouts::SettleInterrupted() {
  const std::optional<Branch> head = p_.registry.FindBranch(rules_.branch);
  if (!head.has_value()) {
    return 0;
  }
  std::size_t settled = 0;
  for (Deployment d : p_.registry.Deployments(rules_.branch, Registry::kDeploymentsKept)) {
    if (d.result != "pending") {
      continue;
    }
    const std::optional<StoredBuild> b = p_.registry.FindBuild(d.build);
    if (d.seq < head->seq) {
      d.result = "superseded";
      d.reason = fmt::format(
          "#{} moved the head past it before this server reported on it (its deploy was cut: "
          "the server stopped mid-deploy)",
          head->seq);
    } else if (d.seq <= p_.registry.applied_seq()) {
      d.result = "adopted";
      d.reason =
          "served since the boot after this server stopped mid-deploy (the deploy was cut "
          "before it reported)";
    } else if (b.has_value() && !b->failed_here.empty()) {
      d.result = "failed";
      d.reason =
          "the boot after this server stopped mid-deploy could not serve it: " + b->failed_here;
    } else {
      continue;  // the head, not applied yet: its apply settles it
    }
    p_.reports.Set(d);
    ++settled;
    DeployLog().Warn("#{} {}: {} was left pending by a stop mid-deploy: {} ({})", d.seq, d.branch,
                     d.build_id, d.result, d.reason);
  }
  return settled;
}

std::string Rollouts::ProtocolLine(const std::string& branch, const StoredBuild& b) const {
  std::optional<Branch> head = p_.registry.FindBranch(branch);
  if (!head.has_value()) {
    return "first on this branch";
  }
  std::optional<StoredBuild> was = p_.registry.FindBuild(head->head);
  const bool same =
      was.has_value() && was->ManifestField("protocol") == b.ManifestField("protocol");
  return fmt::format("{} since #{}", same ? "unchanged" : "changed", head->seq);
}

}  // namespace molt::kernel::deploy
