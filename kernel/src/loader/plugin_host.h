// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/plugin_host.h
//
// PluginHost: the plugins of one kernel. It loads every plugin of a directory (or a list of
// files), refuses the whole set when any file is refused (an operator sees every problem at once:
// one line per file, naming the cause and the fix), checks names are unique, and registers each
// plugin instance with the kernel as a service. UnloadAll() stops what still runs and closes the
// libraries once nothing of them remains reachable.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_LOADER_PLUGIN_HOST_H_
#define MOLT_KERNEL_LOADER_PLUGIN_HOST_H_

#include <molt/kernel/status.h>

#include <memory>
#include <string>
#include <vector>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/loader/library.h"

namespace molt::kernel::loader {

class PluginHost {
 public:
  // `copy_dir` receives the per-instance copies of the libraries; it is created when missing and
  // emptied of our copies by UnloadAll.
  PluginHost(Kernel& kernel, std::string copy_dir, std::int32_t kind = MOLT_PLUGIN_KIND_SERVICE);
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;
  ~PluginHost();

  // Loads every regular file ending in ".so" in `dir`, in name order.
  Status LoadDirectory(const std::string& dir);
  // Loads `files`; all or nothing. On success each plugin is registered with the kernel.
  Status LoadFiles(const std::vector<std::string>& files);

  // Registers a plugin linked into the host: `entry` returns its descriptor, checked like a
  // file's (`where` names it in errors). Its code is never unloaded.
  Status AddStatic(molt_plugin_entry_fn entry, const std::string& where);

  // Stops every instance still running, then unloads every library. Returns how many stay mapped
  // as retired (they could not be unloaded; each is reported).
  std::size_t UnloadAll();

  struct Plugin {
    std::unique_ptr<Library> library;  // nullptr: linked into the host (AddStatic)
    std::shared_ptr<abi::PluginInstance> instance;
  };
  const std::vector<Plugin>& plugins() const { return plugins_; }
  abi::AbiShared& shared() { return shared_; }

 private:
  // The plugin named `name` already present, as "the file it came from", or "".
  std::string Holder(const std::string& name) const;
  Status Register(const molt_plugin_info& info, const std::string& source,
                  std::unique_ptr<Library> library);

  Kernel& kernel_;
  std::string copy_dir_;
  std::int32_t kind_;
  abi::AbiShared shared_;
  std::vector<Plugin> plugins_;
  std::uint64_t next_copy_ = 1;
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_PLUGIN_HOST_H_
