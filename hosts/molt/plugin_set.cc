// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/plugin_set.cc
//
// PluginSet: each library loaded as the loader loads one (kernel/src/loader/library.h), described,
// hashed and unloaded.
#include "hosts/molt/plugin_set.h"

#include <molt/molt.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>

#include "kernel/src/loader/build.h"
#include "kernel/src/loader/library.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;
namespace loader = kernel::loader;

}  // namespace

kernel::Result<PluginSet> PluginSet::Read(const std::string& dir,
                                          const std::vector<std::string>& files) {
  char tmpl[] = "/tmp/molt-build-XXXXXX";
  const char* scratch = ::mkdtemp(tmpl);
  if (scratch == nullptr) {
    return kernel::Status::IoError("cannot create a scratch directory in /tmp");
  }
  PluginSet set;
  std::vector<std::string> refusals;
  std::map<std::string, std::string> names;  // plugin name -> its file
  int n = 0;
  for (const std::string& path : files) {
    const std::string file = fs::path(path).filename().string();
    kernel::Result<std::unique_ptr<loader::Library>> lib =
        loader::Library::Load(path, std::string(scratch) + "/" + std::to_string(n++) + "-" + file,
                              loader::kAnyPluginKind);
    if (!lib.ok()) {
      refusals.push_back(lib.status().message());
      continue;
    }
    const molt_plugin_info& info = (*lib)->info();
    kernel::Result<std::string> sha = loader::Sha256File(path);
    if (!sha.ok()) {
      refusals.push_back(sha.status().message());
      continue;
    }
    PluginEntry p{file,
                  path,
                  *sha,
                  info.name,
                  info.version,
                  loader::PluginKindText(info.kind),
                  std::to_string(MOLT_ABI_MAJOR_OF(info.abi_version)) + "." +
                      std::to_string(MOLT_ABI_MINOR_OF(info.abi_version))};
    set.has_services_ = set.has_services_ || info.kind == MOLT_PLUGIN_KIND_SERVICE;
    (*lib)->Unload();
    if (auto [it, fresh] = names.emplace(p.name, file); !fresh) {
      refusals.push_back("plugin \"" + p.name + "\" is in both \"" + it->second + "\" and \"" +
                         file + "\": plugin names must be unique");
      continue;
    }
    set.plugins_.push_back(std::move(p));
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (!refusals.empty()) {
    std::string text = "cannot build \"" + dir + "\":";
    for (const std::string& r : refusals) {
      text += "\n  " + r;
    }
    return kernel::Status::FailedPrecondition(text);
  }
  return set;
}

std::uint64_t PluginSet::bytes() const {
  std::uint64_t bytes = 0;
  std::error_code ec;
  for (const PluginEntry& p : plugins_) {
    bytes += fs::file_size(p.path, ec);
  }
  return bytes;
}

}  // namespace molt::cli
