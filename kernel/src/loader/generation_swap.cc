// SPDX-License-Identifier: Apache-2.0
// GenerationSwap: the gate, mounting a build dormant, the swap in its steps (export, stop, adopt,
// import, start, replay), restoring the previous generation when the new one fails, the health
// window's rollback, and each swap's report.
#include "kernel/src/loader/generation_swap.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <molt/scope_exit.h>

#include <chrono>
#include <utility>
#include <vector>

#include "kernel/src/core/logger.h"

namespace molt::kernel::loader {

GenerationSwap::GenerationSwap(Kernel& kernel, abi::AbiShared& shared, GenerationSet& generations,
                               HealthWindow& health, BuildStager& stager)
    : kernel_(kernel),
      shared_(shared),
      generations_(generations),
      health_(health),
      stager_(stager) {}

Status GenerationSwap::Gate() const {
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

void GenerationSwap::PrimeForSwap() {
  if (generations_.callback_deadline() != Duration::max()) {
    // The swap's first export does not wait for the runner's thread to wake.
    shared_.runner().Prime(std::chrono::milliseconds(100));
  }
}

void GenerationSwap::MarkFailed(const std::string& build_id, const std::string& why) {
  failed_builds_[build_id] = why;
}

// --- Mount ---

std::unique_ptr<Generation> GenerationSwap::MountBuild(const std::string& dir, SwapReport& r,
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

Status GenerationSwap::Mount(const std::string& dir, const std::string& reason, Trigger trigger,
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

void GenerationSwap::Discard() {
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

// --- The swap ---

SwapReport GenerationSwap::Reload(const std::string& dir, const std::string& reason,
                                  Trigger trigger) {
  const TimePoint t0 = RealNow();  // called directly, the mount holds the kernel thread too
  if (!Mount(dir, reason, trigger).ok()) {
    return TakeMountReport();
  }
  return SwapMountedSince(t0, nullptr);
}

SwapReport GenerationSwap::SwapMounted(Callback<void(const SwapReport&)> done) {
  return SwapMountedSince(RealNow(), std::move(done));
}

SwapReport GenerationSwap::SwapMountedSince(TimePoint held_since,
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

void GenerationSwap::Swap(std::unique_ptr<Generation> g, SwapReport& r, const States* fallback) {
  const TimePoint t0 = RealNow();
  Generation& old = generations_.serving();
  // A set that failed to boot (moltd swapping in the last known good) is no rollback target.
  const bool old_served = kernel_.services().state() != ServiceManager::State::kFailed;
  r.stage = "export";
  std::optional<States> exported = ExportStates(old, r);
  if (!exported) {
    generations_.ReleaseLater(std::move(g));
    r.swap_ms = MillisSince(t0);
    return;
  }
  States states = std::move(*exported);
  if (fallback != nullptr) {
    KeepReadable(*g, *fallback, states);
  }
  for (Service* s : g->services->boot_order()) {
    if (auto it = states.find(GenerationSet::InstanceOf(s)->name()); it != states.end()) {
      r.handed.push_back({it->first, it->second.first, it->second.second.size()});
    }
  }
  // A swap during a health window ends it once the new generation serves (the build it would
  // have rolled back to is let go then); a failed one resumes it for the restored build. Either
  // way errors of the generation being stopped never count.
  health_.Silence();
  r.stage = "stop";
  StopOld(old, r);
  Generation* let_go = ServeNew(std::move(g), old, states, r);
  EndHandoff(r);
  r.swap_ms = MillisSince(t0);
  // What goes is unloaded in a later task: a dlclose runs static destructors, an unlink waits on
  // the file system, and neither belongs in the hold.
  if (let_go != nullptr) {
    generations_.ReleaseLater(let_go);
  }
  if (r.ok && fallback == nullptr) {
    // On probation: the old generation stays resident until the window passes.
    health_.Start(generations_.serving(), old_served ? &old : nullptr, std::move(states));
  }
  if (!r.ok || fallback != nullptr || !old_served) {
    generations_.ReleaseLater(&old);
  }
}

std::optional<States> GenerationSwap::ExportStates(const Generation& old, SwapReport& r) {
  States states;
  for (Service* s : kernel_.services().boot_order()) {
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
      return std::nullopt;
    }
    if (state->has_value()) {
      states[inst->name()] = {inst->info().state_version, std::move(**state)};
    }
  }
  return states;
}

void GenerationSwap::KeepReadable(const Generation& g, const States& fallback, States& states) {
  for (Service* s : g.services->boot_order()) {
    abi::PluginInstance* inst = GenerationSet::InstanceOf(s);
    auto it = states.find(inst->name());
    if (it != states.end() && !inst->Reads(it->second.first)) {
      auto own = fallback.find(inst->name());
      LogScope("Generations")
          .Warn(
              "plugin \"{}\" cannot read the state version {} of the build it replaces: it "
              "gets the state it exported itself{}",
              inst->label(), it->second.first, own == fallback.end() ? " (none)" : ", older");
      if (own == fallback.end()) {
        states.erase(it);
      } else {
        it->second = own->second;
      }
    }
  }
}

void GenerationSwap::StopOld(const Generation& old, SwapReport& r) {
  ServiceManager& old_set = kernel_.services();
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
}

Generation* GenerationSwap::ServeNew(std::unique_ptr<Generation> g, const Generation& old,
                                     const States& states, SwapReport& r) {
  kernel_.Serve(g->services.get());
  std::string stage;
  Status s = Activate(*g, states, &stage);
  r.stage = stage;
  if (!s.ok()) {
    return Restore(std::move(g), old, states, s, r);
  }
  r.ok = true;
  r.stage = "done";
  failed_builds_.erase(g->build_id);  // it runs: whatever failed before does not now
  Generation* let_go = health_.Drop();
  generations_.Serve(std::move(g));
  return let_go;
}

Generation* GenerationSwap::Restore(std::unique_ptr<Generation> g, const Generation& old,
                                    const States& states, const Status& why, SwapReport& r) {
  r.error = why.message();
  MarkFailed(g->build_id, r.stage + ": " + r.error);
  g->services->StopAll(nullptr, stop_budget_);
  std::unique_ptr<Generation> back = generations_.NewGeneration(old.build_id);
  Status b = generations_.MountCopiesOf(old, *back);
  kernel_.Serve(back->services.get());
  std::string back_stage;
  if (b.ok()) {
    b = Activate(*back, states, &back_stage);
  }
  Generation* let_go = nullptr;
  if (b.ok()) {
    r.restored = true;
    health_.Resume(old, *back);  // the restored build serves out the window it was in
  } else {
    r.error += "; restoring " + old.build_id + " failed too: " + b.message() +
               " (no generation serves: reload a build that works)";
    LogScope("Generations").Error("no generation serves after a failed swap: {}", r.error);
    let_go = health_.Drop();
  }
  generations_.Serve(std::move(back));
  generations_.ReleaseLater(std::move(g));
  return let_go;
}

Status GenerationSwap::Activate(Generation& g, const States& states, std::string* stage) {
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

void GenerationSwap::EndHandoff(SwapReport& r) {
  shared_.ForEachLayer([&r](abi::HostLayer& layer) {
    for (std::string& line : layer.EndHandoff()) {
      r.retired.push_back(std::move(line));
    }
    layer.SetServing(r.ok || r.restored);  // none serves: new clients are told it is starting
  });
}

SwapReport GenerationSwap::Finish(SwapReport& r, Callback<void(const SwapReport&)> done) {
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
        if (listener_) {
          listener_(r);
        }
        if (done) {
          done(r);
        }
      },
      Priority::kKernel, TaskOrigin::Named("swap report"));
  return r;
}

// --- The health window's rollback ---

void GenerationSwap::Rollback() {
  if (rollback_staging_) {
    return;  // under way: the previous build's libraries are being copied
  }
  if (in_swap_ || mounted_ != nullptr) {  // wait while busy: it runs once the swap is over
    if (!std::exchange(rollback_pending_, true)) {
      LogScope("Generations")
          .Info(
              "the health-window rollback of {} waits for the swap in progress",
              health_.generation() != nullptr ? health_.generation()->name : std::string("(none)"));
    }
    return;
  }
  if (!health_.rollback_due()) {
    LogScope("Generations")
        .Info(
            "the health-window rollback is moot: a later swap replaced the generation it was for");
    return;
  }
  health_.StopTimer();  // the window's verdict is in: it cannot pass now
  std::vector<std::string> copies;
  if (!stager_.background() || !GenerationSet::CopiesOf(*health_.previous(), &copies).ok()) {
    MountRollback(nullptr);  // staged here (or refused here, naming why)
    return;
  }
  // Fresh copies of the previous build's libraries are made off the kernel thread, as a
  // reload's are: the copy grows with the build, and clients are served meanwhile.
  rollback_staging_ = true;
  const std::string dir = health_.previous()->dir;
  stager_.Run(
      [copies, copy_dir = generations_.copy_dir(), prefix = generations_.CopyPrefix()] {
        const TimePoint t0 = RealNow();
        StagedBuild staged;
        staged.files = StageFiles(copies, {}, copy_dir, prefix);
        staged.ms = MillisSince(t0);
        return staged;
      },
      stager_.deadline(),
      [this, dir](StagedBuild* staged) {
        rollback_staging_ = false;
        StagedBuild late;
        if (staged == nullptr) {
          late.status = Status::Cancelled(BuildStager::Timeout(dir, stager_.deadline()));
          staged = &late;
        }
        if (mounted_ != nullptr || !health_.rollback_due()) {
          Rollback();  // a reload came first: the rollback waits for it, or is moot
          return;
        }
        MountRollback(staged);
      });
}

void GenerationSwap::MountRollback(StagedBuild* staged) {
  HealthWindow::Failed f = health_.TakeRollback();
  Generation& bad = *f.bad;
  Generation& previous = *f.previous;
  SwapReport r;
  r.reason = "health: " + std::to_string(f.errors) + " errors in " + bad.name + " within " +
             fmt::format("{:g}", ToSeconds(f.window)) + " s of its swap";
  r.previous = bad.name;
  r.build = previous.build_id;
  r.rollback = true;
  MarkFailed(bad.build_id, r.reason);
  // The previous build, from fresh copies of the libraries it kept resident, mounted in this
  // task; the swap is the next one (clients are served between them, as for any reload).
  std::unique_ptr<Generation> g = generations_.NewGeneration(previous.build_id);
  r.generation = g->name;
  r.stage = "mount";
  const TimePoint t0 = RealNow();
  in_swap_ = true;
  Status s = staged != nullptr ? staged->status : Status::Ok();
  if (s.ok()) {
    s = generations_.MountCopiesOf(previous, *g, staged != nullptr ? &staged->files : nullptr);
  }
  in_swap_ = false;
  r.staged_ms = staged != nullptr ? staged->ms : 0;
  r.load_ms = MillisSince(t0) + r.staged_ms;
  generations_.ReleaseLater(&previous);
  if (!s.ok()) {
    r.error = s.message() + " (" + bad.name + " serves on)";
    generations_.ReleaseLater(std::move(g));
    Finish(r);
    return;
  }
  mounted_ = std::move(g);
  mount_report_ = std::move(r);
  rollback_states_ = std::move(f.previous_states);
  PrimeForSwap();
  kernel_.scheduler().Schedule([this] { SwapMounted(); }, Priority::kKernel,
                               TaskOrigin::Named("rollback"));
}

void GenerationSwap::RunPendingRollback() {
  if (std::exchange(rollback_pending_, false)) {
    kernel_.scheduler().Schedule([this] { Rollback(); }, Priority::kKernel,
                                 TaskOrigin::Named("rollback"));
  }
}

}  // namespace molt::kernel::loader
