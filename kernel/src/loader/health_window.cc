// SPDX-License-Identifier: Apache-2.0
// The health window (plugin_host.h): a new generation serves on probation, the previous one
// resident behind it; errors attributed to it past the threshold roll back; passing the window
// makes its build the last known good (last_known_good.h).
#include <optional>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/loader/plugin_host.h"

namespace molt::kernel::loader {

// --- The health window ---

void PluginHost::BeginHealthWindow() {
  if (!probation_ && !generations_.serving().plugins.empty()) {
    StartProbation(generations_.serving(), nullptr, {});
  }
}

void PluginHost::StartProbation(Generation& g, Generation* previous, States previous_states) {
  Probation p;
  p.gen = &g;
  p.previous = previous;
  p.previous_states = std::move(previous_states);
  p.threshold = g.health_errors != 0 ? g.health_errors : health_errors_;
  p.window = g.health_window_seconds != 0 ? Seconds(g.health_window_seconds) : health_window_;
  p.timer = kernel_.scheduler().After(
      p.window, [this] { PassProbation(); }, Priority::kKernel, TaskOrigin::Named("health window"));
  probation_ = std::move(p);
  ListenForErrors(g);
}

void PluginHost::ListenForErrors(Generation& g) {
  for (const Plugin& plugin : g.plugins) {
    plugin.instance->set_error_listener([this, gen = &g] { OnError(gen); });
  }
}

void PluginHost::SilenceProbation() {
  if (probation_) {
    for (const Plugin& plugin : probation_->gen->plugins) {
      plugin.instance->set_error_listener(nullptr);
    }
  }
}

void PluginHost::ResumeProbation(const Generation& from, Generation& to) {
  if (!probation_ || probation_->gen != &from) {
    return;
  }
  probation_->gen = &to;
  ListenForErrors(to);
  LogScope("Generations")
      .Info("generation {} serves out the health window of {} ({} errors so far, threshold {})",
            to.name, from.name, probation_->errors, probation_->threshold);
}

Generation* PluginHost::DropProbation() {
  if (!probation_) {
    return nullptr;
  }
  Probation p = std::move(*probation_);
  probation_.reset();
  p.timer.Cancel();
  for (const Plugin& plugin : p.gen->plugins) {
    plugin.instance->set_error_listener(nullptr);
  }
  return p.previous;
}

void PluginHost::OnError(const Generation* g) {
  if (!probation_ || probation_->gen != g || probation_->rolling_back) {
    return;  // errors of other generations never count
  }
  if (++probation_->errors < probation_->threshold) {
    return;
  }
  probation_->rolling_back = true;
  if (probation_->previous == nullptr) {
    LogScope("Generations")
        .Error(
            "generation {} reached {} errors in its health window: it is not recorded as "
            "last known good (there is no earlier build to roll back to)",
            g->name, probation_->errors);
    return;
  }
  // Never inside the plugin callback that failed: the rollback is a kernel task of its own.
  kernel_.scheduler().Schedule([this] { Rollback(); }, Priority::kKernel,
                               TaskOrigin::Named("rollback"));
}

void PluginHost::PassProbation() {
  if (!probation_) {
    return;
  }
  Probation p = std::move(*probation_);
  probation_.reset();
  for (const Plugin& plugin : p.gen->plugins) {
    plugin.instance->set_error_listener(nullptr);
  }
  if (p.previous != nullptr) {
    generations_.ReleaseLater(p.previous);
  }
  LogScope("Generations")
      .Info("generation {} passed its health window ({} errors, threshold {})", p.gen->name,
            p.errors, p.threshold);
  if (!p.rolling_back) {
    last_known_good_.Save(*p.gen);
  }
}

void PluginHost::Rollback() {
  if (rollback_staging_) {
    return;  // under way: the previous build's libraries are being copied
  }
  if (in_swap_ || mounted_ != nullptr) {  // wait while busy: it runs once the swap is over
    if (!std::exchange(rollback_pending_, true)) {
      LogScope("Generations")
          .Info("the health-window rollback of {} waits for the swap in progress",
                probation_ ? probation_->gen->name : std::string("(none)"));
    }
    return;
  }
  if (!probation_ || !probation_->rolling_back) {
    LogScope("Generations")
        .Info(
            "the health-window rollback is moot: a later swap replaced the generation it was for");
    return;
  }
  probation_->timer.Cancel();  // the window's verdict is in: it cannot pass now
  std::vector<std::string> copies;
  if (!stager_.background() || !GenerationSet::CopiesOf(*probation_->previous, &copies).ok()) {
    MountRollback(nullptr);  // staged here (or refused here, naming why)
    return;
  }
  // Fresh copies of the previous build's libraries are made off the kernel thread, as a
  // reload's are: the copy grows with the build, and clients are served meanwhile.
  rollback_staging_ = true;
  const std::string dir = probation_->previous->dir;
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
        if (mounted_ != nullptr || !probation_ || !probation_->rolling_back) {
          Rollback();  // a reload came first: the rollback waits for it, or is moot
          return;
        }
        MountRollback(staged);
      });
}

void PluginHost::MountRollback(StagedBuild* staged) {
  Probation p = std::move(*probation_);
  probation_.reset();
  Generation& bad = *p.gen;
  Generation& previous = *p.previous;
  SwapReport r;
  r.reason = "health: " + std::to_string(p.errors) + " errors in " + bad.name + " within " +
             fmt::format("{:g}", ToSeconds(p.window)) + " s of its swap";
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
  rollback_states_ = std::move(p.previous_states);
  PrimeForSwap();
  kernel_.scheduler().Schedule([this] { SwapMounted(); }, Priority::kKernel,
                               TaskOrigin::Named("rollback"));
}

void PluginHost::RunPendingRollback() {
  if (std::exchange(rollback_pending_, false)) {
    kernel_.scheduler().Schedule([this] { Rollback(); }, Priority::kKernel,
                                 TaskOrigin::Named("rollback"));
  }
}

}  // namespace molt::kernel::loader
