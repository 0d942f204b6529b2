// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/generation_set.h
//
// GenerationSet: the plugin generations resident in one host (DESIGN.md §6), and how they come
// and go. A generation is the set of plugin instances loaded from one build, named
// "<build id>#<n>"; each plugin's identity is (name, generation). The set loads plugins all or
// nothing (Open: every refused file in one error, one line each, naming the cause and the fix),
// registers each instance (the boot generation's with the kernel, a mounted one's with its own
// ServiceManager, dormant), keeps the serving generation and those resident behind it (the
// health window's way back), and lets them go: stopped at once, their libraries unloaded in a
// later task of its own (ReleaseLater), never inside a swap's hold, since a dlclose runs the
// library's static destructors. Used by the plugin host (plugin_host.h) and its parts: the swap
// (generation_swap.h), the health window (health_window.h), the last known good
// (last_known_good.h).
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_LOADER_GENERATION_SET_H_
#define MOLT_KERNEL_LOADER_GENERATION_SET_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernel/src/abi/abi_shared.h"
#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/loader/build.h"
#include "kernel/src/loader/build_stager.h"
#include "kernel/src/loader/library.h"

namespace molt::kernel::loader {

// One plugin of a generation.
struct Plugin {
  std::unique_ptr<Library> library;  // nullptr: linked into the host (AddStatic)
  std::shared_ptr<abi::PluginInstance> instance;
};

struct Generation {
  std::string build_id;
  std::string name;                 // "<build id>#<n>"
  std::string dir;                  // where it was loaded from ("" for files and static plugins)
  std::uint32_t health_errors = 0;  // from its manifest; 0: the host's default
  double health_window_seconds = 0;
  std::vector<Plugin> plugins;
  // Null for the boot generation, whose instances the kernel's own service set holds.
  std::unique_ptr<ServiceManager> services;
};

// name -> (state_version, bytes) of what a generation's instances exported (export_state).
using States = std::map<std::string, std::pair<std::uint32_t, std::string>>;

class GenerationSet {
 public:
  // `copy_dir` receives the per-instance copies of the libraries; it is created when missing and
  // emptied of our copies as generations unload. `kind` is the plugin kind this host loads.
  GenerationSet(Kernel& kernel, abi::AbiShared& shared, std::string copy_dir, std::int32_t kind);
  GenerationSet(const GenerationSet&) = delete;
  GenerationSet& operator=(const GenerationSet&) = delete;

  // A service of the kernel as the plugin instance it is (null: another kind of service).
  static abi::PluginInstance* InstanceOf(Service* s);

  // The serving generation: an empty one with no name before anything loaded.
  Generation& serving() { return *serving_; }
  const Generation& serving() const { return *serving_; }
  // The generations resident: the serving one, those on probation behind it (not a mounted one,
  // which its swap holds).
  std::size_t resident() const { return generations_.size(); }
  const std::string& copy_dir() const { return copy_dir_; }
  std::int32_t kind() const { return kind_; }
  // A prefix no copy of this set has used (StageFiles()).
  std::string CopyPrefix();
  // The deadline of each callback of the plugins loaded from here on
  // (abi::PluginInstance::set_callback_limit); Duration::max(), the default: none.
  void set_callback_deadline(Duration deadline) { callback_deadline_ = deadline; }
  Duration callback_deadline() const { return callback_deadline_; }
  // Libraries kept mapped because they could not be unloaded, since the start (each is logged).
  std::size_t retired_libraries() const { return retired_libraries_; }

  // --- The boot generation (registered with the kernel) ---
  // What was staged of the build in `dir` (StageBuild()), opened all or nothing. When nothing
  // loaded, the boot generation stays unnamed: another build may still boot.
  Status LoadStaged(const std::string& dir, StagedBuild staged);
  // Loads `files` (no manifest), all or nothing, into the boot generation "local#<n>".
  Status LoadFiles(const std::vector<std::string>& files);
  // Registers a plugin linked into the host: `entry` returns its descriptor, checked like a
  // file's (`where` names it in errors). Its code is never unloaded.
  Status AddStatic(molt_plugin_entry_fn entry, const std::string& where);

  // --- Mounted generations (registered with their own ServiceManager) ---
  // A new generation of `build_id`, named "<build id>#<n>", with a service set of its own.
  std::unique_ptr<Generation> NewGeneration(const std::string& build_id);
  // Opens what was staged into `into` (all or nothing: every refusal of the set in one error,
  // each logged); `entries` is the manifest by file name. `dormant` instances wait for their
  // generation to serve (abi::PluginInstance::set_dormant).
  Status Open(Generation& into, StagedFiles staged,
              const std::map<std::string, BuildEntry>& entries, bool dormant);
  // StageFiles() here, then Open().
  Status Load(Generation& into, const std::vector<std::string>& files,
              const std::map<std::string, BuildEntry>& entries, bool dormant);
  // The private copies of the libraries `from` has loaded, or why there are none to load again.
  static Status CopiesOf(const Generation& from, std::vector<std::string>* copies);
  // Mounts `into` dormant from fresh copies of the libraries `from` has loaded (a restore or a
  // rollback: no static state of a library that ran is reused), from `staged` when they were
  // staged already, and runs every init.
  Status MountCopiesOf(const Generation& from, Generation& into, StagedFiles* staged = nullptr);
  // Makes `g` resident and the serving generation (the kernel serves its service set already).
  Generation& Serve(std::unique_ptr<Generation> g);

  // --- Letting go ---
  // Stops what of `g` still runs now (its names and declarations are free at once), and unloads
  // its libraries in a later task of its own; the first form takes a resident generation out of
  // the set (one not resident is left alone).
  void ReleaseLater(Generation* g);
  void ReleaseLater(std::unique_ptr<Generation> g);
  // Stops every instance still running, then unloads every library: those waiting for their
  // release first, then the resident generations, newest first. Returns how many stay mapped as
  // retired (they could not be unloaded; each is reported).
  std::size_t UnloadAll();
  // Stops every instance of `g` still running, in reverse dependency order (what they hold in
  // the kernel goes now).
  static void StopInstances(Generation& g);

 private:
  // The boot generation, named after `build_id` when it has no name yet.
  Generation& Boot(const std::string& build_id);
  Status Register(Generation& into, const molt_plugin_info& info, const std::string& source,
                  std::unique_ptr<Library> library, bool dormant);
  // The plugin named `name` already present in `g`, as "the file it came from", or "".
  static std::string Holder(const Generation& g, const std::string& name);
  // Stops every instance of `g` still running and unloads its libraries; returns how many stay
  // mapped.
  std::size_t Unload(Generation& g);
  // Unloads what ReleaseLater() let go.
  void ReleaseNow();

  Kernel& kernel_;
  abi::AbiShared& shared_;
  std::string copy_dir_;
  std::int32_t kind_;
  Duration callback_deadline_ = Duration::max();
  std::vector<std::unique_ptr<Generation>> generations_;  // resident: the serving one, ...
  Generation* serving_;
  std::uint64_t next_number_ = 1;
  std::uint64_t next_copy_ = 1;
  std::vector<std::unique_ptr<Generation>> releasing_;  // unloaded by the next ReleaseNow()
  TaskHandle release_task_;
  std::size_t retired_libraries_ = 0;  // libraries kept mapped, since the start
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_GENERATION_SET_H_
