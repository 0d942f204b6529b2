// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/build_stager.h
//
// Staging a build: the part of loading a generation that grows with the build's size and touches
// only the file system (reading the build, unpacking a build file, copying and hashing each
// library: StageBuild, StageFiles), so it may run on any thread. BuildStager runs such a job on a
// thread of its own while the kernel thread serves on, and hands the result back on the kernel
// thread; a job past its deadline (a stuck disk or network file system) is abandoned, never
// joined, and its late result dropped with its copies. Opening what was staged (dlopen, init)
// is GenerationSet's (generation_set.h). Used by the plugin host and its parts.
//
// Thread safety: StageBuild() and StageFiles() are safe on any thread; BuildStager REQUIRES the
// kernel thread (its jobs run on threads of their own).
#ifndef MOLT_KERNEL_LOADER_BUILD_STAGER_H_
#define MOLT_KERNEL_LOADER_BUILD_STAGER_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernel/src/core/kernel.h"
#include "kernel/src/loader/build.h"
#include "kernel/src/loader/library.h"

namespace molt::kernel::loader {

// A set of files staged for GenerationSet::Open(): each library's private copy made and checked,
// or why not.
struct StagedFiles {
  Status status;  // the copy directory could not be made
  struct File {
    std::optional<StagedLibrary> library;
    std::string refusal;  // when there is no library
  };
  std::vector<File> files;  // in the order given
};

// A build read and its files staged.
struct StagedBuild {
  Status status;  // reading the build failed
  Build build;
  StagedFiles files;
  double ms = 0;  // how long it took
};

// Copies and checks `files` into `copy_dir` (created when missing), as "<prefix><n>-<name>".
// `entries` is the manifest by file name (empty: none).
StagedFiles StageFiles(const std::vector<std::string>& files,
                       const std::map<std::string, BuildEntry>& entries,
                       const std::string& copy_dir, const std::string& prefix);
// Reads the build in `dir` (a directory, or a build file unpacked beside `copy_dir`) and stages
// its files.
StagedBuild StageBuild(const std::string& dir, const std::string& copy_dir,
                       const std::string& prefix);
// StageBuild() of `dir` as a job for BuildStager::Run().
std::function<StagedBuild()> StageBuildJob(std::string dir, std::string copy_dir,
                                           std::string prefix);

class BuildStager {
 public:
  // Off unless set: a reload's build is then staged inline, on the kernel thread (a client app's
  // controllers). moltd sets 60 s (PluginHost::kStageDeadline).
  explicit BuildStager(Kernel& kernel);
  BuildStager(const BuildStager&) = delete;
  BuildStager& operator=(const BuildStager&) = delete;
  // Abandon().
  ~BuildStager();

  // The deadline of a background stage; Duration::max() (the default): stage inline.
  void set_deadline(Duration deadline) { deadline_ = deadline; }
  Duration deadline() const { return deadline_; }
  bool background() const { return deadline_ != Duration::max(); }
  // Tests only: runs on the staging thread before each job (a file system that hangs cannot be
  // caused for real in a test).
  void set_hook_for_testing(std::function<void()> hook) { hook_ = std::move(hook); }
  const std::function<void()>& hook() const { return hook_; }

  // Runs `job` (file system work only) on a thread of its own; `then` runs on the kernel thread
  // with what it staged, or with null once `deadline` passed first (the late result is dropped,
  // its copies with it). Needs the kernel's loop running.
  void Run(std::function<StagedBuild()> job, Duration deadline, Callback<void(StagedBuild*)> then);
  // Jobs in flight (their `then` not called yet).
  std::size_t in_flight() const { return stages_.size(); }
  // Every job still running answers no one, and no deadline fires: the owner is going.
  void Abandon();

  // Why a stage of `dir` was abandoned at `deadline`.
  static std::string Timeout(const std::string& dir, Duration deadline);

 private:
  // A job came back (`id` tells it from one abandoned).
  void OnStaged(std::uint64_t id, StagedBuild staged);

  struct Stage {
    Callback<void(StagedBuild*)> then;
    TaskHandle timer;
  };
  // What a job's thread answers through: cut (stager null) when the stager goes.
  struct Link {
    std::mutex mu;
    BuildStager* stager;
  };

  Kernel& kernel_;
  Duration deadline_ = Duration::max();
  std::function<void()> hook_;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, Stage> stages_;  // in flight, by id
  std::shared_ptr<Link> link_;
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_BUILD_STAGER_H_
