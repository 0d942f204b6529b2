// SPDX-License-Identifier: Apache-2.0
// The health window (plugin_host.h): a new generation serves on probation, the previous one
// resident behind it; errors attributed to it past the threshold roll back; passing the window
// makes its build the last known good, kept under the data directory for a boot that fails.
#include <molt/scope_exit.h>

#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/loader/plugin_host.h"

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;

}  // namespace

// --- The health window ---

void PluginHost::BeginHealthWindow() {
  if (!probation_ && !serving_->plugins.empty()) {
    StartProbation(*serving_, nullptr, {});
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

PluginHost::Generation* PluginHost::DropProbation() {
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
    ReleaseLater(p.previous);
  }
  LogScope("Generations")
      .Info("generation {} passed its health window ({} errors, threshold {})", p.gen->name,
            p.errors, p.threshold);
  if (!p.rolling_back) {
    SaveLastKnownGood(*p.gen);
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
  if (stage_deadline_ == Duration::max() || !CopiesOf(*probation_->previous, &copies).ok()) {
    MountRollback(nullptr);  // staged here (or refused here, naming why)
    return;
  }
  // Fresh copies of the previous build's libraries are made off the kernel thread, as a
  // reload's are: the copy grows with the build, and clients are served meanwhile.
  rollback_staging_ = true;
  const std::string dir = probation_->previous->dir;
  StageThen(
      [copies, copy_dir = copy_dir_, prefix = CopyPrefix()] {
        const TimePoint t0 = RealNow();
        StagedBuild staged;
        staged.files = StageFiles(copies, {}, copy_dir, prefix);
        staged.ms = MillisSince(t0);
        return staged;
      },
      stage_deadline_,
      [this, dir](StagedBuild* staged) {
        rollback_staging_ = false;
        StagedBuild late;
        if (staged == nullptr) {
          late.status = Status::Cancelled(StageTimeout(dir, stage_deadline_));
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
  std::unique_ptr<Generation> g = NewGeneration(previous.build_id);
  r.generation = g->name;
  r.stage = "mount";
  const TimePoint t0 = RealNow();
  in_swap_ = true;
  Status s = staged != nullptr ? staged->status : Status::Ok();
  if (s.ok()) {
    s = MountCopiesOf(previous, *g, staged != nullptr ? &staged->files : nullptr);
  }
  in_swap_ = false;
  r.staged_ms = staged != nullptr ? staged->ms : 0;
  r.load_ms = MillisSince(t0) + r.staged_ms;
  ReleaseLater(&previous);
  if (!s.ok()) {
    r.error = s.message() + " (" + bad.name + " serves on)";
    ReleaseLater(std::move(g));
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

void PluginHost::SaveLastKnownGood(const Generation& g) {
  if (lkg_dir_.empty()) {
    return;
  }
  std::vector<BuildFile> files;
  for (const Plugin& p : g.plugins) {
    if (p.library == nullptr) {
      return;  // plugins linked into the host are no build to keep
    }
    const molt_plugin_info& info = p.instance->info();
    files.push_back(
        {p.library->copy(), fs::path(p.library->source()).filename().string(),
         BuildEntry{"", info.name, info.version, std::string(PluginKindText(info.kind))}});
  }
  // Written beside, then exchanged into place in one step: a crash leaves the old one or the new
  // one, each whole, with its health settings.
  auto save = [dir = lkg_dir_, id = g.build_id, files = std::move(files), errors = g.health_errors,
               window = g.health_window_seconds] {
    std::error_code ec;
    const std::string tmp = dir + ".new";
    fs::remove_all(tmp, ec);  // a save a crash cut short
    fs::create_directories(fs::path(dir).parent_path(), ec);
    Status s = WriteBuild(tmp, id, files, errors, window);
    if (s.ok()) {
      s = InstallDirectory(tmp, dir);
    }
    if (!s.ok()) {
      fs::remove_all(tmp, ec);
    }
    return s;
  };
  if (stage_deadline_ == Duration::max()) {
    LogKept(g.build_id, save());
    return;
  }
  // With background staging the copy and its fsyncs (they grow with the build) run on a thread
  // of their own, one save at a time; a save overtaken by a newer one is dropped.
  const std::uint64_t seq = ++lkg_saver_->started;
  {
    std::lock_guard<std::mutex> lock(lkg_saver_->mu);
    ++lkg_saver_->in_flight;
  }
  std::thread([link = stage_link_, saver = lkg_saver_, seq, id = g.build_id, save = std::move(save),
               hook = stage_hook_] {
    if (hook) {
      hook();
    }
    std::optional<Status> s;
    {
      std::lock_guard<std::mutex> write(saver->write_mu);
      if (seq > saver->newest) {
        s = save();
        saver->newest = seq;
      }
    }
    {
      std::lock_guard<std::mutex> lock(saver->mu);
      --saver->in_flight;
    }
    saver->cv.notify_all();
    std::lock_guard<std::mutex> lock(link->mu);
    if (s && link->host != nullptr) {
      link->host->kernel_.loop().Post([link, id, s = *s] {
        if (link->host != nullptr) {
          link->host->LogKept(id, s);
        }
      });
    }
  }).detach();
}

void PluginHost::LogKept(const std::string& build_id, const Status& s) {
  if (!s.ok()) {
    LogScope("Generations")
        .Warn("build {} could not be kept as last known good: {}", build_id, s.message());
    return;
  }
  LogScope("Generations").Info("build {} is the last known good (kept in {})", build_id, lkg_dir_);
}

void PluginHost::WaitForLastKnownGood(Duration limit) {
  std::unique_lock<std::mutex> lock(lkg_saver_->mu);
  lkg_saver_->cv.wait_for(lock, limit, [this] { return lkg_saver_->in_flight == 0; });
}

}  // namespace molt::kernel::loader
