// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/plugin_set.h
//
// PluginSet: the plugin libraries a build packs (molt build), each described as the manifest
// lists it. Every library is opened from a private copy, as a host would, and its descriptor
// read; a set with a library that is not a plugin, or two plugins of one name, is refused with
// every reason. Included by build_command.cc and build_manifest.h.
#ifndef MOLT_HOSTS_MOLT_PLUGIN_SET_H_
#define MOLT_HOSTS_MOLT_PLUGIN_SET_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <string>
#include <vector>

namespace molt::cli {

// One plugin library as the manifest lists it.
struct PluginEntry {
  std::string file;     // its file name in the build
  std::string path;     // where it is read from
  std::string sha256;   // of the file, hex
  std::string name;     // from its descriptor
  std::string version;  // semver, from its descriptor
  std::string kind;     // "service" or "controller"
  std::string abi;      // "MAJOR.MINOR" it was built against
};

class PluginSet {
 public:
  // Reads `files` (the libraries of the plugin directory `dir`, in the order a build lists them),
  // each through a copy in a scratch directory under /tmp that is removed afterwards. The error
  // names `dir` and every refusal, one a line.
  static kernel::Result<PluginSet> Read(const std::string& dir,
                                        const std::vector<std::string>& files);

  const std::vector<PluginEntry>& plugins() const { return plugins_; }
  // Whether a plugin is a service: then moltd --self-test checks the set and says its protocol.
  bool has_services() const { return has_services_; }
  // The libraries' bytes on disk.
  std::uint64_t bytes() const;

 private:
  std::vector<PluginEntry> plugins_;
  bool has_services_ = false;
};

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_PLUGIN_SET_H_
