// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/build_manifest.cc
//
// The build id and molt-build.json, written in the loader's format (kernel/src/loader/build.h).
#include "hosts/molt/build_manifest.h"

#include <boost/json.hpp>

#include "kernel/src/loader/build.h"

namespace molt::cli {
namespace {

namespace json = boost::json;
namespace loader = kernel::loader;

}  // namespace

std::string BuildId(const GitInfo& git, const std::vector<PluginEntry>& plugins) {
  std::string listing;
  for (const PluginEntry& p : plugins) {
    listing += p.file + '\0' + p.sha256 + '\n';
  }
  const std::string hash6 = loader::Sha256Hex(listing).substr(0, 6);
  return !git.in_git ? "nogit-" + hash6
                     : git.commit.substr(0, 7) + (git.dirty ? "-dirty-" : "-") + hash6;
}

BuildManifest MakeManifest(const GitInfo& git, const BuildTarget& target,
                           const std::vector<PluginEntry>& plugins) {
  BuildManifest m;
  m.id = BuildId(git, plugins);
  json::array entries;
  for (const PluginEntry& p : plugins) {
    entries.push_back({{"file", p.file},
                       {"sha256", p.sha256},
                       {"name", p.name},
                       {"version", p.version},
                       {"kind", p.kind},
                       {"abi", p.abi}});
  }
  m.json = json::object{{"build", m.id},
                        {"commit", git.commit},
                        {"dirty", git.dirty},
                        {"branch", target.branch},
                        {"channel", target.channel},
                        {"built_at", git.commit_time},
                        {"protocol", target.protocol}};
  loader::AddHealth(m.json, target.health_errors, target.health_window_seconds);
  m.json["plugins"] = std::move(entries);
  m.text = json::serialize(m.json) + "\n";
  return m;
}

}  // namespace molt::cli
