// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/build_manifest.h
//
// A build's id and its manifest, molt-build.json (docs/deploys.md, DESIGN.md §6): the id is
// <commit7>-<hash6> (<commit7>-dirty-<hash6> for a dirty tree, nogit-<hash6> outside git), the
// hash being of what the libraries are, so that the same inputs give the same id and the same
// bytes. Included by build_command.cc.
#ifndef MOLT_HOSTS_MOLT_BUILD_MANIFEST_H_
#define MOLT_HOSTS_MOLT_BUILD_MANIFEST_H_

#include <boost/json/object.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "hosts/molt/git_info.h"
#include "hosts/molt/plugin_set.h"

namespace molt::cli {

// What a build is for, as its flags (or their defaults) say and the spec gate found.
struct BuildTarget {
  std::string branch;
  std::string channel;   // "prod" or "dev"
  std::string protocol;  // the spec gate's hash; "" when the set has no service
  std::uint32_t health_errors = 0;
  double health_window_seconds = 0;
};

struct BuildManifest {
  std::string id;
  boost::json::object json;
  std::string text;  // the JSON and a newline: the manifest's bytes in the build file
};

// The id of a build of `plugins` from the tree `git` describes.
std::string BuildId(const GitInfo& git, const std::vector<PluginEntry>& plugins);

// The manifest of a build of `plugins` from `git`'s tree for `target`.
BuildManifest MakeManifest(const GitInfo& git, const BuildTarget& target,
                           const std::vector<PluginEntry>& plugins);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_BUILD_MANIFEST_H_
