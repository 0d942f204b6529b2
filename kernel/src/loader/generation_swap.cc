// SPDX-License-Identifier: Apache-2.0
// The swap of generations (plugin_host.h, "Swaps"): the gate, mounting a build dormant, the swap
// itself (export, stop, adopt, import, start, replay), restoring the previous generation when the
// new one fails, the queue of requested reloads, and each swap's report.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <molt/scope_exit.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/loader/plugin_host.h"

namespace molt::kernel::loader {
// --- Swaps ---

Status PluginHost::Gate() const {
  if (!kernel_.started()) {
    return Status::FailedPrecondition(
        "the kernel has not started: load the first generation "
        "with LoadDirectory, then Kernel::Start");
  }
  if (closing_ || kernel_.shutting_down()) {
    return Status::FailedPrecondition("the server is closing: no reload now");
  }
  if (in_swap_) {
    return Status::FailedPrecondition(
        "a swap is in progress: a reload from inside one runs later (RequestReload)");
  }
  for (const Plugin& p : generations_.serving().plugins) {
    if (p.instance->in_callback()) {
      return Status::FailedPrecondition(
          "a reload from inside plugin \"" + p.instance->label() +
          "\"'s callback is refused (the swap would stop the code that is running): a " +
          (generations_.kind() == MOLT_PLUGIN_KIND_SERVICE ? "service" : "controller") +
          " asks with reload_request, which swaps on a later step");
    }
  }
  for (Service* s : kernel_.services().boot_order()) {
    abi::PluginInstance* inst = GenerationSet::InstanceOf(s);
    if (inst == nullptr || &inst->shared() != &shared_) {
      return Status::FailedPrecondition("service \"" + s->name() +
                                        "\" is not one of this host's plugins: a swap replaces "
                                        "the whole service set, so it cannot run here");
    }
  }
  return Status::Ok();
}

void PluginHost::PrimeForSwap() {
  if (generations_.callback_deadline() != Duration::max()) {
    // The swap's first export does not wait for the runner's thread to wake.
    shared_.runner().Prime(std::chrono::milliseconds(100));
  }
}

void PluginHost::MarkFailed(const std::string& build_id, const std::string& why) {
  failed_builds_[build_id] = why;
}

std::unique_ptr<Generation> PluginHost::MountBuild(const std::string& dir, SwapReport& r,
                                                   Trigger trigger, StagedBuild* staged) {
  r.stage = "mount";
  const TimePoint t0 = RealNow();
  StagedBuild inline_staged;
  if (staged == nullptr) {
    inline_staged = StageBuild(dir, generations_.copy_dir(), generations_.CopyPrefix());
    staged = &inline_staged;
  }
  if (!staged->status.ok()) {
    r.error = staged->status.message();
    return nullptr;
  }
  const Build* build = &staged->build;
  r.build = build->id;
  if (auto failed = failed_builds_.find(build->id); failed != failed_builds_.end()) {
    if (trigger == Trigger::kAutomatic) {
      r.stage = "gate";
      r.error = "build " + build->id + " failed here (" + failed->second +
                "): it is not taken again automatically; rebuild it, or reload it yourself "
                "(SIGHUP, the admin API) to retry it";
      return nullptr;
    }
    LogScope("Generations")
        .Warn("build {} failed here before ({}); retrying it as asked", build->id, failed->second);
  }
  std::unique_ptr<Generation> g = generations_.NewGeneration(build->id);
  g->dir = dir;
  g->health_errors = build->health_errors;
  g->health_window_seconds = build->health_window_seconds;
  for (const std::string& w : build->warnings) {
    LogScope("Generations").Warn("{}", w);
  }
  r.generation = g->name;
  Status s = generations_.Open(*g, std::move(staged->files), build->entries, true);
  // Staged inline, t0 covers it; staged elsewhere, its time is added.
  r.staged_ms = staged == &inline_staged ? 0 : staged->ms;
  r.load_ms = MillisSince(t0) + r.staged_ms;
  if (s.ok() && g->plugins.empty()) {
    s = Status::InvalidArgument("plugin directory \"" + dir +
                                "\" holds no plugin: a swap to nothing is refused");
  }
  if (s.ok()) {
    const TimePoint t1 = RealNow();
    s = g->services->InitAll();
    r.init_ms = MillisSince(t1);
  }
  if (!s.ok()) {
    r.error = s.message();
    MarkFailed(build->id, r.error);
    generations_.ReleaseLater(std::move(g));
    return nullptr;
  }
  return g;
}

Status PluginHost::Activate(Generation& g, const States& states, std::string* stage) {
  const std::vector<Service*> order = g.services->boot_order();
  *stage = "adopt";
  for (Service* s : order) {
    abi::PluginInstance* inst = GenerationSet::InstanceOf(s);
    inst->Serve();
    Status served;
    shared_.ForEachLayer([&](abi::HostLayer& layer) {
      if (served.ok()) {
        served = layer.Serve(inst);
      }
    });
    MOLT_RETURN_IF_ERROR(served);
  }
  *stage = "import";
  for (Service* s : order) {
    abi::PluginInstance* inst = GenerationSet::InstanceOf(s);
    if (auto it = states.find(inst->name()); it != states.end()) {
      MOLT_RETURN_IF_ERROR(inst->ImportState(it->second.first, it->second.second));
    }
  }
  *stage = "start";
  MOLT_RETURN_IF_ERROR(g.services->StartAll());
  *stage = "replay";
  for (Service* s : order) {
    GenerationSet::InstanceOf(s)->Replay();
  }
  return Status::Ok();
}

void PluginHost::Swap(std::unique_ptr<Generation> g, SwapReport& r, const States* fallback) {
  const TimePoint t0 = RealNow();
  Generation& old = generations_.serving();
  ServiceManager& old_set = kernel_.services();
  // A set that failed to boot (moltd swapping in the last known good) is no rollback target.
  const bool old_served = old_set.state() != ServiceManager::State::kFailed;
  r.stage = "export";
  States states;
  for (Service* s : old_set.boot_order()) {
    abi::PluginInstance* inst = GenerationSet::InstanceOf(s);
    if (inst->stuck()) {  // its export of an earlier swap never returned: it is not asked again
      LogScope("Generations")
          .Warn("plugin \"{}\" hands over no state: a callback of it was abandoned earlier",
                inst->label());
      continue;
    }
    Result<std::optional<std::string>> state = inst->ExportState(kMaxStateBytes);
    if (!state.ok()) {  // the serving build's failure, not the new one's: nothing is marked
      r.error = state.status().message() + " (the swap is aborted; " + old.name + " serves on)";
      generations_.ReleaseLater(std::move(g));
      r.swap_ms = MillisSince(t0);
      return;
    }
    if (state->has_value()) {
      states[inst->name()] = {inst->info().state_version, std::move(**state)};
    }
  }

  if (fallback != nullptr) {
    // A rollback: older code is never handed state it cannot read; it gets what it exported.
    for (Service* s : g->services->boot_order()) {
      abi::PluginInstance* inst = GenerationSet::InstanceOf(s);
      auto it = states.find(inst->name());
      if (it != states.end() && !inst->Reads(it->second.first)) {
        auto own = fallback->find(inst->name());
        LogScope("Generations")
            .Warn(
                "plugin \"{}\" cannot read the state version {} of the build it replaces: it "
                "gets the state it exported itself{}",
                inst->label(), it->second.first, own == fallback->end() ? " (none)" : ", older");
        if (own == fallback->end()) {
          states.erase(it);
        } else {
          it->second = own->second;
        }
      }
    }
  }
  for (Service* s : g->services->boot_order()) {
    if (auto it = states.find(GenerationSet::InstanceOf(s)->name()); it != states.end()) {
      r.handed.push_back({it->first, it->second.first, it->second.second.size()});
    }
  }
  // A swap during a health window ends it once the new generation serves (the build it would
  // have rolled back to is let go then); a failed one resumes it for the restored build. Either
  // way errors of the generation being stopped never count.
  SilenceProbation();
  Generation* let_go = nullptr;

  r.stage = "stop";
  shared_.ForEachLayer([](abi::HostLayer& layer) { layer.BeginHandoff(); });
  const TimePoint t_stop = RealNow();
  old_set.StopAll(nullptr, stop_budget_);
  for (Service* s : old_set.halted()) {
    r.hard_stopped.push_back(s->name());
  }
  r.stop_ms = MillisSince(t_stop);
  for (const Plugin& p : old.plugins) {
    if (const std::size_t n = p.instance->code_holds(); n > 0) {
      r.held.push_back(p.instance->label() + ": " + std::to_string(n) +
                       " worker job(s) still running keep its library mapped until they return");
    }
  }
  if (!r.hard_stopped.empty()) {
    LogScope("Generations")
        .Warn(
            "{} stop: hard stop of {} (the soft stop ran past its {:.3g} s budget, or a stop() "
            "past its deadline)",
            old.name, fmt::join(r.hard_stopped, ", "),
            std::chrono::duration<double>(stop_budget_).count());
  }

  kernel_.Serve(g->services.get());
  std::string stage;
  Status s = Activate(*g, states, &stage);
  r.stage = stage;
  if (s.ok()) {
    r.ok = true;
    r.stage = "done";
    failed_builds_.erase(g->build_id);  // it runs: whatever failed before does not now
    let_go = DropProbation();
    generations_.Serve(std::move(g));
  } else {
    // Back to the previous build, from fresh copies of its libraries (no static state of a
    // half-run library is reused), with the state it exported.
    r.error = s.message();
    MarkFailed(g->build_id, r.stage + ": " + r.error);
    g->services->StopAll(nullptr, stop_budget_);
    std::unique_ptr<Generation> back = generations_.NewGeneration(old.build_id);
    Status b = generations_.MountCopiesOf(old, *back);
    kernel_.Serve(back->services.get());
    std::string back_stage;
    if (b.ok()) {
      b = Activate(*back, states, &back_stage);
    }
    if (b.ok()) {
      r.restored = true;
      ResumeProbation(old, *back);  // the restored build serves out the window it was in
    } else {
      r.error += "; restoring " + old.build_id + " failed too: " + b.message() +
                 " (no generation serves: reload a build that works)";
      LogScope("Generations").Error("no generation serves after a failed swap: {}", r.error);
      let_go = DropProbation();
    }
    generations_.Serve(std::move(back));
    generations_.ReleaseLater(std::move(g));
  }
  shared_.ForEachLayer([&r](abi::HostLayer& layer) {
    for (std::string& line : layer.EndHandoff()) {
      r.retired.push_back(std::move(line));
    }
    layer.SetServing(r.ok || r.restored);  // none serves: new clients are told it is starting
  });
  r.swap_ms = MillisSince(t0);
  // What goes is unloaded in a later task: a dlclose runs static destructors, an unlink waits on
  // the file system, and neither belongs in the hold.
  if (let_go != nullptr) {
    generations_.ReleaseLater(let_go);
  }
  if (r.ok && fallback == nullptr) {
    // On probation: the old generation stays resident until the window passes.
    StartProbation(generations_.serving(), old_served ? &old : nullptr, std::move(states));
  }
  if (!r.ok || fallback != nullptr || !old_served) {
    generations_.ReleaseLater(&old);
  }
}

SwapReport PluginHost::Finish(SwapReport& r, Callback<void(const SwapReport&)> done) {
  // "" when no generation serves (a failed swap whose restore failed too).
  r.serving = kernel_.services().state() == ServiceManager::State::kFailed
                  ? ""
                  : generations_.serving().name;
  ++(r.ok ? swaps_ : failures_);
  rollbacks_ += r.rollback && r.ok ? 1 : 0;
  // The log line, the history and whoever asked hear of it in a task of its own, after the hold.
  kernel_.scheduler().Schedule(
      [this, r, done = std::move(done)] {
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch());
        history_.push_front({now.count(), r});
        if (history_.size() > kHistory) {
          history_.pop_back();
        }
        LogScope log("Generations");
        if (r.ok) {
          log.Info("{}", r.Json());
        } else {
          log.Error("{}", r.Json());
        }
        if (swap_listener_) {
          swap_listener_(r);
        }
        if (done) {
          done(r);
        }
      },
      Priority::kKernel, TaskOrigin::Named("swap report"));
  return r;
}

Status PluginHost::Mount(const std::string& dir, const std::string& reason, Trigger trigger) {
  return MountFrom(dir, reason, trigger, nullptr);
}

Status PluginHost::MountFrom(const std::string& dir, const std::string& reason, Trigger trigger,
                             StagedBuild* staged) {
  Discard();
  SwapReport r;
  r.reason = reason;
  r.previous = generations_.serving().name;
  r.stage = "gate";
  Status s = Gate();
  if (s.ok()) {
    in_swap_ = true;
    mounted_ = MountBuild(dir, r, trigger, staged);
    in_swap_ = false;
    s = mounted_ != nullptr ? Status::Ok() : Status::FailedPrecondition(r.error);
  } else {
    r.error = s.message();
  }
  mount_report_ = s.ok() ? std::move(r) : Finish(r);
  if (mounted_ == nullptr) {
    RunPendingRollback();
  } else {
    PrimeForSwap();
  }
  return s;
}

SwapReport PluginHost::SwapMounted(Callback<void(const SwapReport&)> done) {
  return SwapMountedSince(RealNow(), std::move(done));
}

SwapReport PluginHost::SwapMountedSince(TimePoint held_since,
                                        Callback<void(const SwapReport&)> done) {
  SwapReport r = std::move(mount_report_);
  mount_report_ = SwapReport();
  std::unique_ptr<Generation> g = std::move(mounted_);
  std::optional<States> fallback = std::exchange(rollback_states_, std::nullopt);
  if (g == nullptr) {
    r.stage = "gate";
    r.error = "no generation is mounted: Mount() first";
    return Finish(r, std::move(done));
  }
  if (Status s = Gate(); !s.ok()) {
    r.error = s.message();
    generations_.ReleaseLater(std::move(g));
    RunPendingRollback();
    return Finish(r, std::move(done));
  }
  r.previous = generations_.serving().name;
  in_swap_ = true;
  ScopeExit leave = [this]() noexcept { in_swap_ = false; };
  Swap(std::move(g), r, fallback ? &*fallback : nullptr);
  RunPendingRollback();
  r.hold_ms = MillisSince(held_since);  // to the hand-off of its report: the whole pause
  return Finish(r, std::move(done));
}

void PluginHost::Discard() {
  if (rollback_states_) {
    LogScope("Generations")
        .Info("the rollback to {} mounted for {} is superseded by a newer reload", mounted_->name,
              mount_report_.previous);
    rollback_states_.reset();
  }
  if (mounted_ != nullptr) {
    generations_.ReleaseLater(std::move(mounted_));
  }
}

SwapReport PluginHost::Reload(const std::string& dir, const std::string& reason, Trigger trigger) {
  const TimePoint t0 = RealNow();  // called directly, the mount holds the kernel thread too
  if (!Mount(dir, reason, trigger).ok()) {
    return std::exchange(mount_report_, SwapReport());
  }
  return SwapMountedSince(t0, nullptr);
}

void PluginHost::RequestReload(std::string dir, std::string reason,
                               Callback<void(const SwapReport&)> done, Trigger trigger) {
  if (queued_ && queued_->done) {
    SwapReport superseded;
    superseded.reason = queued_->reason;
    superseded.previous = superseded.serving = generations_.serving().name;
    superseded.stage = "gate";
    superseded.error = "superseded by a newer reload request (" + reason + ")";
    queued_->done(superseded);
  }
  queued_ = Request{std::move(dir), std::move(reason), std::move(done), trigger};
  ScheduleQueued();
}

void PluginHost::RunQueued() {
  reload_scheduled_ = false;
  if (!queued_ || staging_) {
    return;  // a stage in flight runs the queue when it ends
  }
  auto req = std::make_shared<Request>(std::move(*queued_));
  queued_.reset();
  if (!stager_.background()) {
    MountAndSwap(req, nullptr);
    return;
  }
  staging_ = true;
  stager_.Run(StageBuildJob(req->dir, generations_.copy_dir(), generations_.CopyPrefix()),
              stager_.deadline(), [this, req](StagedBuild* staged) {
                staging_ = false;
                if (staged != nullptr) {
                  MountAndSwap(req, staged);
                } else {
                  SwapReport r;
                  r.reason = req->reason;
                  r.previous = generations_.serving().name;
                  r.stage = "mount";
                  r.error = BuildStager::Timeout(req->dir, stager_.deadline()) +
                            "; the serving generation serves on";
                  Finish(r, std::move(req->done));
                }
                ScheduleQueued();
              });
}

void PluginHost::ScheduleQueued() {
  if (queued_ && !reload_scheduled_) {
    reload_scheduled_ = true;
    kernel_.scheduler().Schedule([this] { RunQueued(); }, Priority::kKernel,
                                 TaskOrigin::Named("reload"));
  }
}

void PluginHost::MountAndSwap(const std::shared_ptr<Request>& req, StagedBuild* staged) {
  if (!MountFrom(req->dir, req->reason, req->trigger, staged).ok()) {
    SwapReport r = std::exchange(mount_report_, SwapReport());
    if (req->done) {
      req->done(r);
    }
    return;
  }
  // Clients are served between the mount and the swap: the swap is a step of its own.
  kernel_.scheduler().Schedule([this, req] { SwapMounted(std::move(req->done)); },
                               Priority::kKernel, TaskOrigin::Named("reload"));
}

}  // namespace molt::kernel::loader
