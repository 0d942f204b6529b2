// SPDX-License-Identifier: Apache-2.0
// Deploys: the parts composed, and every call posted to the deploy thread (deploys.h).
#include "kernel/src/deploy/deploys.h"

#include <utility>

namespace molt::kernel::deploy {

Result<std::unique_ptr<Deploys>> Deploys::Open(DeploysOptions options) {
  if (!Rollouts::ValidBranch(options.branch)) {
    return Status::InvalidArgument("branch \"" + options.branch +
                                   "\": a branch is 1 to 64 letters, digits, '.', '_' or '-' "
                                   "(moltd --branch, deploy.branch)");
  }
  MOLT_ASSIGN_OR_RETURN(std::unique_ptr<Registry> registry, Registry::Open(options.dir));
  std::unique_ptr<Deploys> d(new Deploys(std::move(options), std::move(registry)));
  d->signatures_.Load("at boot");
  if (d->fleet_.shared()) {  // the fleet's deployments first: the boot plans with them
    if (Status s = d->fleet_.Open(); s.code() == Status::Code::kFailedPrecondition) {
      return s;  // a layout too new, a right missing: the operator's to fix
    }
    d->rollouts_.Sync(/*boot=*/true);
  }
  d->serving_.Refresh();
  return d;
}

Deploys::Deploys(DeploysOptions options, std::unique_ptr<Registry> registry)
    : options_(std::move(options)),
      registry_(std::move(registry)),
      refusals_(options_.on_refusal, options_.refusal_event_gap),
      signatures_(options_.keys_file, options_.prod_rules),
      fleet_(options_.fleet_url, options_.server_id, options_.branch, *registry_),
      serving_(*registry_, options_.branch),
      builds_(*registry_, fleet_),
      reports_(*registry_, fleet_, options_.server_id, options_.branch),
      swaps_(worker_),
      rollouts_({options_.branch, options_.prod_rules, options_.server_id},
                {*registry_, fleet_, builds_, signatures_, refusals_, reports_, serving_, swaps_,
                 worker_}),
      pins_(options_.branch, options_.prod_rules,
            {*registry_, builds_, signatures_, refusals_, serving_, swaps_, worker_}),
      boot_(*registry_, signatures_, serving_, options_.branch, options_.prod_rules) {}

Deploys::~Deploys() {
  fleet_.StopWatching();  // no wake posted past here
  worker_.Stop();
}

void Deploys::Start(SwapFn swap) {
  swaps_.set_swap(std::move(swap));
  // Before any request: what a stop mid-deploy left pending gets its result.
  worker_.Post([this] { rollouts_.SettleInterrupted(); });
  worker_.At(SerialThread::Clock::now() + Signatures::kRefresh, [this] { RefreshKeys(); });
  worker_.Start();
  if (fleet_.shared()) {
    fleet_.Watch(options_.poll,
                 [this] { worker_.Post([this] { rollouts_.Sync(/*boot=*/false); }); });
  }
}

void Deploys::RefreshKeys() {
  signatures_.Refresh();
  worker_.At(SerialThread::Clock::now() + Signatures::kRefresh, [this] { RefreshKeys(); });
}

void Deploys::Upload(std::string file, Done<Uploaded> done) {
  worker_.Post([this, file = std::move(file), done = std::move(done)] {
    done(builds_.Upload(file, serving_.Kept()));
  });
}

void Deploys::Deploy(DeployRequest request, std::chrono::seconds wait, Done<DeployOutcome> done) {
  worker_.Post([this, request = std::move(request), wait, done = std::move(done)]() mutable {
    rollouts_.Deploy(std::move(request), wait, std::move(done));
  });
}

void Deploys::Pin(PinRequest request, std::chrono::seconds wait, Done<PinOutcome> done) {
  worker_.Post([this, request = std::move(request), wait, done = std::move(done)]() mutable {
    pins_.Pin(std::move(request), wait, std::move(done));
  });
}

void Deploys::Resolve(std::string branch, std::string build, bool rollback, Done<Resolved> done) {
  worker_.Post([this, branch = std::move(branch), build = std::move(build), rollback,
                done = std::move(done)] {
    std::optional<StoredBuild> b =
        rollback && build.empty() ? builds_.Previous(branch) : builds_.Find(build);
    if (!b.has_value()) {
      done(Status::NotFound(rollback && build.empty()
                                ? "no earlier build in " + branch +
                                      "'s previous heads or deployments"
                                : "no stored build is named \"" + build + "\""));
      return;
    }
    done(Resolved{*b, fleet_.LastSeq() + 1});
  });
}

void Deploys::Builds(std::size_t limit, Done<std::vector<StoredBuild>> done) {
  worker_.Post([this, limit, done = std::move(done)] { done(builds_.List(limit)); });
}

void Deploys::Branches(Done<BranchesView> done) {
  worker_.Post([this, done = std::move(done)] { done(BranchesNow()); });
}

BranchesView Deploys::BranchesNow() {
  BranchesView v;
  v.branch = options_.branch;
  v.prod_rules = options_.prod_rules;
  v.branches = registry_->Branches();
  auto add = [&](const std::string& sha) {
    if (std::optional<StoredBuild> s = registry_->FindBuild(sha); s.has_value()) {
      v.builds.emplace(sha, std::move(*s));
    }
  };
  for (const Branch& b : v.branches) {
    add(b.head);
    for (const Branch::Previous& p : b.previous) {
      add(p.build);
    }
  }
  v.refusals = refusals_.Recent();
  v.seq = fleet_.LastSeq();
  v.pin = serving_.pin();
  v.applied_seq = registry_->applied_seq();
  v.serving = serving_.swapped_id();
  v.keys = signatures_.keys();
  return v;
}

void Deploys::Deployments(std::string branch, std::size_t limit,
                          Done<std::vector<Deployment>> done) {
  worker_.Post([this, branch = std::move(branch), limit, done = std::move(done)] {
    done(registry_->Deployments(branch, limit));
  });
}

void Deploys::Results(std::uint64_t seq, Done<DeploymentResults> done) {
  worker_.Post([this, seq, done = std::move(done)] {
    if (!registry_->FindDeployment(seq).has_value() && fleet_.shared()) {
      rollouts_.Sync(/*boot=*/false);  // one recorded a moment ago elsewhere
    }
    done(reports_.Results(seq));
  });
}

void Deploys::ReloadKeys() {
  worker_.Post([this] { signatures_.Load("on SIGHUP"); });
}

void Deploys::RolledBack(std::string build_id, std::string why) {
  worker_.Post([this, build_id = std::move(build_id), why = std::move(why)] {
    rollouts_.RolledBack(build_id, why);
  });
}

}  // namespace molt::kernel::deploy
