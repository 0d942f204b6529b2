// SPDX-License-Identifier: Apache-2.0
// The swap of generations (plugin_host.h, "Swaps"): the gate, mounting a build dormant, the swap
// itself (export, stop, adopt, import, start, replay), restoring the previous generation when the
// new one fails, the queue of requested reloads, and each swap's report.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <molt/scope_exit.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/loader/build_archive.h"
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
  for (const Plugin& p : serving_->plugins) {
    if (p.instance->in_callback()) {
      return Status::FailedPrecondition(
          "a reload from inside plugin \"" + p.instance->label() +
          "\"'s callback is refused (the swap would stop the code that is running): a " +
          (kind_ == MOLT_PLUGIN_KIND_SERVICE ? "service" : "controller") +
          " asks with reload_request, which swaps on a later step");
    }
  }
  for (Service* s : kernel_.services().boot_order()) {
    abi::PluginInstance* inst = InstanceOf(s);
    if (inst == nullptr || &inst->shared() != &shared_) {
      return Status::FailedPrecondition("service \"" + s->name() +
                                        "\" is not one of this host's plugins: a swap replaces "
                                        "the whole service set, so it cannot run here");
    }
  }
  return Status::Ok();
}

void PluginHost::PrimeForSwap() {
  if (callback_deadline_ != Duration::max()) {
    // The swap's first export does not wait for the runner's thread to wake.
    shared_.runner().Prime(std::chrono::milliseconds(100));
  }
}

void PluginHost::MarkFailed(const std::string& build_id, const std::string& why) {
  failed_builds_[build_id] = why;
}

PluginHost::StagedBuild PluginHost::StageBuild(const std::string& dir, const std::string& copy_dir,
                                               const std::string& prefix) {
  const TimePoint t0 = RealNow();
  StagedBuild staged;
  Result<BuildSource> source = BuildSource::Open(dir, copy_dir);
  if (!source.ok()) {
    staged.status = source.status();
    return staged;
  }
  Result<Build> build = ReadBuild(source->dir());
  if (!build.ok()) {
    staged.status = build.status();
    return staged;
  }
  staged.build = std::move(build).value();
  staged.files = StageFiles(staged.build.files, staged.build.entries, copy_dir, prefix);
  staged.ms = MillisSince(t0);
  return staged;  // the unpacked build file goes with `source`: the copies are what opens
}

std::unique_ptr<PluginHost::Generation> PluginHost::MountBuild(const std::string& dir,
                                                               SwapReport& r, Trigger trigger,
                                                               StagedBuild* staged) {
  r.stage = "mount";
  const TimePoint t0 = RealNow();
  StagedBuild inline_staged;
  if (staged == nullptr) {
    inline_staged = StageBuild(dir, copy_dir_, CopyPrefix());
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
  std::unique_ptr<Generation> g = NewGeneration(build->id);
  g->dir = dir;
  g->health_errors = build->health_errors;
  g->health_window_seconds = build->health_window_seconds;
  for (const std::string& w : build->warnings) {
    LogScope("Generations").Warn("{}", w);
  }
  r.generation = g->name;
  Status s = Open(*g, std::move(staged->files), build->entries, true);
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
    ReleaseLater(std::move(g));
    return nullptr;
  }
  return g;
}

Status PluginHost::Activate(Generation& g, const States& states, std::string* stage) {
  const std::vector<Service*> order = g.services->boot_order();
  *stage = "adopt";
  for (Service* s : order) {
    abi::PluginInstance* inst = InstanceOf(s);
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
    abi::PluginInstance* inst = InstanceOf(s);
    if (auto it = states.find(inst->name()); it != states.end()) {
      MOLT_RETURN_IF_ERROR(inst->ImportState(it->second.first, it->second.second));
    }
  }
  *stage = "start";
  MOLT_RETURN_IF_ERROR(g.services->StartAll());
  *stage = "replay";
  for (Service* s : order) {
    InstanceOf(s)->Replay();
  }
  return Status::Ok();
}

void PluginHost::Swap(std::unique_ptr<Generation> g, SwapReport& r, const States* fallback) {
  const TimePoint t0 = RealNow();
  Generation& old = *serving_;
  ServiceManager& old_set = kernel_.services();
  // A set that failed to boot (moltd swapping in the last known good) is no rollback target.
  const bool old_served = old_set.state() != ServiceManager::State::kFailed;
  r.stage = "export";
  States states;
  for (Service* s : old_set.boot_order()) {
    abi::PluginInstance* inst = InstanceOf(s);
    if (inst->stuck()) {  // its export of an earlier swap never returned: it is not asked again
      LogScope("Generations")
          .Warn("plugin \"{}\" hands over no state: a callback of it was abandoned earlier",
                inst->label());
      continue;
    }
    Result<std::optional<std::string>> state = inst->ExportState(kMaxStateBytes);
    if (!state.ok()) {  // the serving build's failure, not the new one's: nothing is marked
      r.error = state.status().message() + " (the swap is aborted; " + old.name + " serves on)";
      ReleaseLater(std::move(g));
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
      abi::PluginInstance* inst = InstanceOf(s);
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
    if (auto it = states.find(InstanceOf(s)->name()); it != states.end()) {
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
    generations_.push_back(std::move(g));
    serving_ = generations_.back().get();
  } else {
    // Back to the previous build, from fresh copies of its libraries (no static state of a
    // half-run library is reused), with the state it exported.
    r.error = s.message();
    MarkFailed(g->build_id, r.stage + ": " + r.error);
    g->services->StopAll(nullptr, stop_budget_);
    std::unique_ptr<Generation> back = NewGeneration(old.build_id);
    Status b = MountCopiesOf(old, *back);
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
    generations_.push_back(std::move(back));
    serving_ = generations_.back().get();
    ReleaseLater(std::move(g));
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
    ReleaseLater(let_go);
  }
  if (r.ok && fallback == nullptr) {
    // On probation: the old generation stays resident until the window passes.
    StartProbation(*serving_, old_served ? &old : nullptr, std::move(states));
  }
  if (!r.ok || fallback != nullptr || !old_served) {
    ReleaseLater(&old);
  }
}

Status PluginHost::CopiesOf(const Generation& from, std::vector<std::string>* copies) {
  for (const Plugin& p : from.plugins) {
    if (p.library == nullptr) {
      return Status::Unsupported("plugin \"" + p.instance->name() +
                                 "\" is linked into the host: it cannot be loaded again");
    }
    copies->push_back(p.library->copy());
  }
  return Status::Ok();
}

Status PluginHost::MountCopiesOf(const Generation& from, Generation& into, StagedFiles* staged) {
  into.dir = from.dir;
  std::vector<std::string> copies;
  MOLT_RETURN_IF_ERROR(CopiesOf(from, &copies));
  Status s =
      staged != nullptr ? Open(into, std::move(*staged), {}, true) : Load(into, copies, {}, true);
  MOLT_RETURN_IF_ERROR(s);
  return into.services->InitAll();
}

void PluginHost::ReleaseLater(Generation* g) {
  auto it = std::find_if(generations_.begin(), generations_.end(),
                         [g](const std::unique_ptr<Generation>& x) { return x.get() == g; });
  if (it == generations_.end()) {
    return;
  }
  std::unique_ptr<Generation> owned = std::move(*it);
  generations_.erase(it);
  ReleaseLater(std::move(owned));
}

void PluginHost::ReleaseLater(std::unique_ptr<Generation> g) {
  StopInstances(*g);
  releasing_.push_back(std::move(g));
  if (!release_task_.Pending()) {
    // Scheduled before the report (Finish), so a swap's log line follows its release.
    release_task_ = kernel_.scheduler().Schedule([this] { ReleaseNow(); }, Priority::kKernel,
                                                 TaskOrigin::Named("release generations"));
  }
}

void PluginHost::ReleaseNow() {
  release_task_ = TaskHandle();
  std::vector<std::unique_ptr<Generation>> gone = std::move(releasing_);
  releasing_.clear();
  for (const std::unique_ptr<Generation>& g : gone) {
    if (const std::size_t retired = Unload(*g); retired > 0) {
      retired_libraries_ += retired;
      LogScope("Generations")
          .Warn("generation {} is released, but {} of its libraries stay mapped (retired)",
                g->name.empty() ? g->build_id : g->name, retired);
    }
  }
}

SwapReport PluginHost::Finish(SwapReport& r, Callback<void(const SwapReport&)> done) {
  // "" when no generation serves (a failed swap whose restore failed too).
  r.serving = kernel_.services().state() == ServiceManager::State::kFailed ? "" : serving_->name;
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
  r.previous = serving_->name;
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
    ReleaseLater(std::move(g));
    RunPendingRollback();
    return Finish(r, std::move(done));
  }
  r.previous = serving_->name;
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
    ReleaseLater(std::move(mounted_));
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
    superseded.previous = superseded.serving = serving_->name;
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
  if (stage_deadline_ == Duration::max()) {
    MountAndSwap(req, nullptr);
    return;
  }
  staging_ = true;
  StageThen(StageOf(req->dir), stage_deadline_, [this, req](StagedBuild* staged) {
    staging_ = false;
    if (staged != nullptr) {
      MountAndSwap(req, staged);
    } else {
      SwapReport r;
      r.reason = req->reason;
      r.previous = serving_->name;
      r.stage = "mount";
      r.error = StageTimeout(req->dir, stage_deadline_) + "; the serving generation serves on";
      Finish(r, std::move(req->done));
    }
    ScheduleQueued();
  });
}

std::string PluginHost::StageTimeout(const std::string& dir, Duration deadline) {
  return fmt::format(
      "reading the build in {} took more than {:.0f} s: abandoned (is its disk or file system "
      "stuck?)",
      dir, ToSeconds(deadline));
}

std::function<PluginHost::StagedBuild()> PluginHost::StageOf(const std::string& dir) {
  return [dir, copy_dir = copy_dir_, prefix = CopyPrefix()] {
    return StageBuild(dir, copy_dir, prefix);
  };
}

void PluginHost::StageThen(std::function<StagedBuild()> job, Duration deadline,
                           Callback<void(StagedBuild*)> then) {
  // The thread answers through stage_link_, cut when this host goes: a stage stuck on a dead
  // file system is abandoned at its deadline, never joined.
  const std::uint64_t id = ++stage_id_;
  Stage& stage = stages_[id];
  stage.then = std::move(then);
  stage.timer = kernel_.scheduler().After(
      deadline,
      [this, id] {
        auto it = stages_.find(id);
        if (it == stages_.end()) {
          return;
        }
        Callback<void(StagedBuild*)> late = std::move(it->second.then);
        stages_.erase(it);  // its result, when it comes, is dropped, its copies with it
        late(nullptr);
      },
      Priority::kKernel, TaskOrigin::Named("reload"));
  std::thread([link = stage_link_, id, job = std::move(job), hook = stage_hook_] {
    if (hook) {
      hook();
    }
    auto staged = std::make_shared<StagedBuild>(job());
    std::lock_guard<std::mutex> lock(link->mu);
    if (link->host != nullptr) {
      link->host->kernel_.loop().Post([link, id, staged] {
        if (link->host != nullptr) {  // read on the kernel thread, where it is cleared
          link->host->OnStaged(id, std::move(*staged));
        }
      });
    }
  }).detach();
}

void PluginHost::OnStaged(std::uint64_t id, StagedBuild staged) {
  auto it = stages_.find(id);
  if (it == stages_.end()) {
    return;  // abandoned at its deadline
  }
  it->second.timer.Cancel();
  Callback<void(StagedBuild*)> then = std::move(it->second.then);
  stages_.erase(it);
  then(&staged);
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
