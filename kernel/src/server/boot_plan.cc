// SPDX-License-Identifier: Apache-2.0
// BootPlan: the sources planned, each tried within the boot budget, the registry awaited
// (boot_plan.h).
#include "kernel/src/server/boot_plan.h"

#include <fmt/format.h>
#include <molt/kernel/server.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "kernel/src/core/kernel.h"
#include "kernel/src/deploy/deploys.h"
#include "kernel/src/loader/build.h"
#include "kernel/src/loader/last_known_good.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/network.h"
#include "kernel/src/server/assembly.h"
#include "kernel/src/server/registry_opener.h"
#include "kernel/src/server/server_log.h"
#include "kernel/src/store/pg_store.h"

namespace molt::kernel {

BootPlan::BootPlan(Assembly& parts, const Settings& settings, std::string last_known_good,
                   const std::atomic<bool>& closing, Hooks hooks)
    : parts_(parts),
      settings_(settings),
      last_known_good_(std::move(last_known_good)),
      closing_(closing),
      hooks_(std::move(hooks)) {}

BootPlan::~BootPlan() = default;

void BootPlan::InjectSlowStages(loader::PluginHost& plugins) {
  const char* spec = std::getenv("MOLT_TEST_SLOW_STAGES");
  if (spec == nullptr || *spec == '\0') {
    return;
  }
  const double seconds = std::atof(spec);
  const char* colon = std::strchr(spec, ':');
  const long count = colon != nullptr ? std::atol(colon + 1) : -1;
  ServerLog().Warn("fault injection (MOLT_TEST_SLOW_STAGES={}): {} build stages are held {:.1f} s",
                   spec, count < 0 ? std::string("all") : "the first " + std::to_string(count),
                   seconds);
  auto left = std::make_shared<std::atomic<long>>(count);
  plugins.set_stage_hook_for_testing([seconds, left, all = count < 0] {
    if (all || left->fetch_sub(1) > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    }
  });
}

// Never an empty server: the first build that loads and starts serves. With a branch head, the
// head, its earlier builds (newest first), the last known good, then the plugin directory (the
// bundled fallback); without one, the plugin directory (the development path), then the last
// known good. Each failure is logged with the next one tried, and a deployed build that failed
// is marked failed here.
void BootPlan::Plan() {
  candidates_ =
      deploys_ != nullptr ? deploys_->BootCandidates() : std::vector<deploy::BootCandidate>();
  sources_.clear();
  for (const deploy::BootCandidate& c : candidates_) {
    sources_.push_back({c.file, c.what + ", " + c.build_id, c.what, &c});
  }
  const bool have_good = loader::LastKnownGood::Kept(last_known_good_);
  if (candidates_.empty()) {
    sources_.push_back(
        {settings_.plugin_dir, "the plugin directory " + settings_.plugin_dir, "plugin directory"});
  }
  if (have_good) {
    sources_.push_back({last_known_good_, "the last known good build from " + last_known_good_,
                        "last known good"});
  }
  if (!candidates_.empty()) {
    sources_.push_back({settings_.plugin_dir,
                        "the plugin directory " + settings_.plugin_dir + " (the bundled fallback)",
                        "plugin directory"});
  }
}

void BootPlan::BootFailed(std::size_t at, const Status& why) {
  ServerLog().Error("{} does not boot: {}", sources_[at].what, why.message());
  if (why.code() == Status::Code::kCancelled) {
    // Out of boot time while it was read: nothing is known of the build (a slow disk), so it
    // is not marked failed; the head is tried again once something serves.
    retry_head_ = retry_head_ || (at == 0 && sources_[at].deployed != nullptr);
  } else if (sources_[at].deployed != nullptr) {
    deploys_->BootResult(*sources_[at].deployed, why);
  }
}

void BootPlan::StopBooting(const std::string& why) {
  ServerLog().Error("cannot start: {}", why);
  exit_code_ = kExitBootFailed;
  parts_.network().Shutdown();
  parts_.kernel().loop().Stop();
}

const BootPlan::Source& BootPlan::Booted(std::size_t at) {
  const Source& source = sources_[at];
  if (source.deployed != nullptr) {
    deploys_->BootResult(*source.deployed, Status::Ok());
  }
  serving_ = true;
  if (at > 0 || source.deployed != nullptr) {
    ServerLog().Info("booted {}", source.what);
  }
  return source;
}

// The registry is read on a thread of its own (RegistryOpener); the boot waits for it at most
// kBootReadsWait, then boots without it (the plugin directory, the last known good), and the
// branch's head follows once it opens (OnRegistryOpen).
void BootPlan::Begin() {
  started_ = RealNow();
  deploy::DeploysOptions o;
  o.dir = (std::filesystem::path(settings_.data_dir) / "registry").string();
  o.branch = settings_.branch;
  o.prod_rules = settings_.require_signatures;
  o.keys_file = settings_.deploy_keys;
  o.max_build_bytes = static_cast<std::uint64_t>(settings_.max_build_mb * (1 << 20));
  o.server_id = settings_.server_id;                  // its rollout bucket
  if (store::IsPostgresUrl(settings_.profiles_db)) {  // a fleet: its registry is shared
    o.fleet_url = settings_.profiles_db;
    o.poll =
        std::chrono::milliseconds(static_cast<std::int64_t>(settings_.deploy_poll_seconds * 1000));
  }
  o.on_refusal = [this](const std::string& kind, const std::string& reason) {
    parts_.kernel().loop().Post([this, kind, reason] {
      const Value args[] = {Value::String(kind), Value::String(reason)};
      parts_.kernel().bus().Publish("Kernel.DeployRefused", args);
    });
  };
  registry_opener_ = std::make_unique<RegistryOpener>(
      std::move(o),
      [this](std::unique_ptr<deploy::Deploys> d) {
        auto box = std::make_shared<std::unique_ptr<deploy::Deploys>>(std::move(d));
        parts_.kernel().loop().Post([this, box] { OnRegistryOpen(std::move(*box)); });
      },
      [last = std::make_shared<std::string>()](const Status& why) {
        if (why.message() != *last) {  // each new reason once; the retries are quiet
          *last = why.message();
          ServerLog().Error(
              "the deploy registry cannot be opened: {}; trying again every second (deploys "
              "wait for it, the branch's head follows once it opens)",
              why.message());
        }
      });
  registry_gate_ = parts_.kernel().scheduler().After(
      kBootReadsWait,
      [this] {
        if (!begun_) {
          ServerLog().Warn(
              "boot: the deploy registry is not open after {:.0f} s: booting without it",
              ToSeconds(kBootReadsWait));
          BootFrom(0);
        }
      },
      Priority::kKernel, TaskOrigin::Named("boot"));
}

void BootPlan::OnRegistryOpen(std::unique_ptr<deploy::Deploys> deploys) {
  if (closing_.load()) {
    return;  // released with the box
  }
  deploys_ = deploys.get();
  hooks_.keep_deploys(std::move(deploys));
  if (!begun_) {  // in time: the boot plans with it
    registry_gate_.Cancel();
    BootFrom(0);
    return;
  }
  ServerLog().Info("the deploy registry is open, {:.1f} s after the start",
                   ToSeconds(RealNow() - started_));
  if (serving_) {  // serving: deploys start, and the head follows now
    hooks_.start_deploys();
    FollowHeadAfterLateRegistry();
  }  // still booting: AfterServing() does both
}

void BootPlan::FollowHeadAfterLateRegistry() {
  if (deploys_ != nullptr && !deploys_->HeadFile().empty()) {
    ServerLog().Info("boot: the head of {} follows the late registry", settings_.branch);
    hooks_.reload("boot: the head, once the registry opened");
  }
}

void BootPlan::AfterServing() {
  if (!planned_with_registry_) {
    FollowHeadAfterLateRegistry();
  } else if (retry_head_) {  // the head ran out of boot time: now, with the normal timeouts
    ServerLog().Info("boot: the head of {} ran out of boot time; retrying it while {} serves",
                     settings_.branch, parts_.plugins().generation());
    hooks_.reload("boot: the head again, after its boot timed out");
  }
}

void BootPlan::StopOpening() { registry_opener_.reset(); }

// The boot budget (spec §31): a generation serves within kBootBudget of the start, or moltd
// exits saying why (its supervisor starts it again). Each build is read off the kernel thread
// within its load cap (kBootLoadCap, squeezed toward kBootDeadline, never under kBootLateLoad);
// one that takes longer is abandoned for the next. Past kBootFallbackAt only the bundled
// fallback (the last source) is tried. Clients are refused with "Starting" meanwhile.
void BootPlan::BootFrom(std::size_t at) {
  if (at == 0) {
    begun_ = true;
    planned_with_registry_ = deploys_ != nullptr;
    Plan();
  }
  if (closing_.load()) {
    return;  // the server's close ends the loop
  }
  const Duration elapsed = RealNow() - started_;
  if (at >= sources_.size() || elapsed >= kBootBudget) {
    StopBooting(fmt::format(
        "nothing boots within the {:.0f} s boot budget ({} of {} builds tried, each failure "
        "above): the last known good chain is exhausted (lkg_exhausted)",
        ToSeconds(kBootBudget), std::min(at, sources_.size()), sources_.size()));
    return;
  }
  if (elapsed >= kBootFallbackAt && at + 1 < sources_.size()) {
    ServerLog().Warn("boot: {:.1f} s passed, past the {:.0f} s fallback cut-off: {} boots now",
                     ToSeconds(elapsed), ToSeconds(kBootFallbackAt), sources_.back().what);
    at = sources_.size() - 1;
  }
  if (at > 0) {
    ServerLog().Warn("booting {} instead", sources_[at].what);
  }
  const Duration cap = std::max(kBootLateLoad, std::min(kBootLoadCap, kBootDeadline - elapsed));
  auto next = [this, at](const Status& why) {
    if (sources_.size() == 1) {  // the one source: its error is the boot's
      StopBooting(why.message());
      return;
    }
    BootFailed(at, why);
    BootFrom(at + 1);
  };
  if (!parts_.kernel().started()) {  // Start() runs once: after it failed, the next build swaps in
    parts_.plugins().LoadDirectoryInBackground(sources_[at].path, cap, [this, at, next](Status s) {
      if (s.ok()) {
        s = parts_.kernel().Start();
      }
      if (!s.ok()) {
        next(s);
        return;
      }
      hooks_.serve(at);
    });
    return;
  }
  parts_.plugins().set_background_staging(cap);
  parts_.plugins().RequestReload(
      sources_[at].path, "boot: " + sources_[at].reason,
      [this, at, next](const loader::SwapReport& r) {
        parts_.plugins().set_background_staging(loader::PluginHost::kStageDeadline);
        InjectSlowStages(parts_.plugins());
        if (!r.ok) {
          next(Status::FailedPrecondition(r.error));
          return;
        }
        hooks_.serve(at);
      });
}

}  // namespace molt::kernel
