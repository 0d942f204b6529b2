// SPDX-License-Identifier: Apache-2.0
// Staging a build: the file system half of a load (StageBuild, StageFiles), and BuildStager,
// which runs it on a thread of its own within a deadline.
#include "kernel/src/loader/build_stager.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

#include "kernel/src/loader/build_archive.h"

namespace molt::kernel::loader {

StagedFiles StageFiles(const std::vector<std::string>& files,
                       const std::map<std::string, BuildEntry>& entries,
                       const std::string& copy_dir, const std::string& prefix) {
  namespace fs = std::filesystem;
  StagedFiles staged;
  std::error_code ec;
  fs::create_directories(copy_dir, ec);
  if (ec) {
    staged.status = Status::IoError("cannot create the plugin copy directory \"" + copy_dir +
                                    "\": " + ec.message());
    return staged;
  }
  std::size_t n = 0;
  for (const std::string& file : files) {
    const std::string base = fs::path(file).filename().string();
    const std::string copy =
        (fs::path(copy_dir) / (prefix + std::to_string(++n) + "-" + base)).string();
    auto entry = entries.find(base);
    Result<StagedLibrary> lib = StagedLibrary::Stage(
        file, copy, entry != entries.end() ? std::string_view(entry->second.sha256) : "");
    staged.files.emplace_back();
    if (lib.ok()) {
      staged.files.back().library.emplace(std::move(lib).value());
    } else {
      staged.files.back().refusal = lib.status().message();
    }
  }
  return staged;
}

StagedBuild StageBuild(const std::string& dir, const std::string& copy_dir,
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

std::function<StagedBuild()> StageBuildJob(std::string dir, std::string copy_dir,
                                           std::string prefix) {
  return [dir = std::move(dir), copy_dir = std::move(copy_dir), prefix = std::move(prefix)] {
    return StageBuild(dir, copy_dir, prefix);
  };
}

BuildStager::BuildStager(Kernel& kernel) : kernel_(kernel), link_(std::make_shared<Link>()) {
  link_->stager = this;
}

BuildStager::~BuildStager() { Abandon(); }

void BuildStager::Abandon() {
  {
    std::lock_guard<std::mutex> lock(link_->mu);
    link_->stager = nullptr;  // a stage still running answers no one
  }
  for (auto& [id, stage] : stages_) {
    stage.timer.Cancel();
  }
}

std::string BuildStager::Timeout(const std::string& dir, Duration deadline) {
  return fmt::format(
      "reading the build in {} took more than {:.0f} s: abandoned (is its disk or file system "
      "stuck?)",
      dir, ToSeconds(deadline));
}

void BuildStager::Run(std::function<StagedBuild()> job, Duration deadline,
                      Callback<void(StagedBuild*)> then) {
  // The thread answers through link_, cut when this stager goes: a stage stuck on a dead file
  // system is abandoned at its deadline, never joined.
  const std::uint64_t id = ++next_id_;
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
  std::thread([link = link_, id, job = std::move(job), hook = hook_] {
    if (hook) {
      hook();
    }
    auto staged = std::make_shared<StagedBuild>(job());
    std::lock_guard<std::mutex> lock(link->mu);
    if (link->stager != nullptr) {
      link->stager->kernel_.loop().Post([link, id, staged] {
        if (link->stager != nullptr) {  // read on the kernel thread, where it is cleared
          link->stager->OnStaged(id, std::move(*staged));
        }
      });
    }
  }).detach();
}

void BuildStager::OnStaged(std::uint64_t id, StagedBuild staged) {
  auto it = stages_.find(id);
  if (it == stages_.end()) {
    return;  // abandoned at its deadline
  }
  it->second.timer.Cancel();
  Callback<void(StagedBuild*)> then = std::move(it->second.then);
  stages_.erase(it);
  then(&staged);
}

}  // namespace molt::kernel::loader
