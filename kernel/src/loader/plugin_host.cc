// SPDX-License-Identifier: Apache-2.0
// PluginHost: all-or-nothing loading of a plugin set.
#include "kernel/src/loader/plugin_host.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include "kernel/src/core/logger.h"

namespace molt::kernel::loader {

namespace fs = std::filesystem;

PluginHost::PluginHost(Kernel& kernel, std::string copy_dir, std::int32_t kind)
    : kernel_(kernel), copy_dir_(std::move(copy_dir)), kind_(kind), shared_(kernel) {}

PluginHost::~PluginHost() { UnloadAll(); }

Status PluginHost::LoadDirectory(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::NotFound("plugin directory \"" + dir +
                            "\" does not exist: pass the directory holding the plugin .so files");
  }
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".so") {
      files.push_back(e.path().string());
    }
  }
  if (ec) {
    return Status::IoError("plugin directory \"" + dir + "\" cannot be read: " + ec.message());
  }
  std::sort(files.begin(), files.end());
  return LoadFiles(files);
}

Status PluginHost::LoadFiles(const std::vector<std::string>& files) {
  std::error_code ec;
  fs::create_directories(copy_dir_, ec);
  if (ec) {
    return Status::IoError("cannot create the plugin copy directory \"" + copy_dir_ +
                           "\": " + ec.message());
  }
  std::vector<std::unique_ptr<Library>> loaded;
  std::vector<std::string> refusals;
  std::map<std::string, std::string> names;  // name -> file, this set and those already loaded
  for (const Plugin& p : plugins_) {
    names.emplace(p.library->info().name, p.library->source());
  }
  for (const std::string& file : files) {
    const std::string copy = (fs::path(copy_dir_) / (std::to_string(next_copy_++) + "-" +
                                                     fs::path(file).filename().string()))
                                 .string();
    Result<std::unique_ptr<Library>> lib = Library::Load(file, copy, kind_);
    if (!lib.ok()) {
      refusals.push_back(lib.status().message());
      continue;
    }
    const std::string name = (*lib)->info().name;
    auto [it, fresh] = names.emplace(name, file);
    if (!fresh) {
      refusals.push_back("plugin file \"" + file + "\": name \"" + name +
                         "\" is already used by \"" + it->second +
                         "\": plugin names must be unique");
      continue;
    }
    loaded.push_back(std::move(lib).value());
  }
  if (!refusals.empty()) {
    for (const std::string& r : refusals) {
      LogScope("Loader").Error("{}", r);
    }
    std::string text = std::to_string(refusals.size()) + " of " + std::to_string(files.size()) +
                       " plugin files refused:";
    for (const std::string& r : refusals) {
      text += "\n  " + r;
    }
    return Status::InvalidArgument(std::move(text));  // `loaded` unloads as it goes out of scope
  }
  for (auto& lib : loaded) {
    auto instance = std::make_shared<abi::PluginInstance>(shared_, lib->info(), lib->source());
    if (Status s = kernel_.RegisterService(instance); !s.ok()) {
      return s.Prefixed("plugin file \"" + lib->source() + "\"");
    }
    LogScope("Loader").Info("loaded plugin \"{}\" {} from {}", lib->info().name,
                            lib->info().version, lib->source());
    plugins_.push_back({std::move(lib), std::move(instance)});
  }
  return Status::Ok();
}

std::size_t PluginHost::UnloadAll() {
  std::size_t retired = 0;
  // Reverse load order; every instance is stopped first (a no-op for those already stopped).
  for (auto it = plugins_.rbegin(); it != plugins_.rend(); ++it) {
    Status s = it->instance->Stop();
    if (!s.ok()) {
      LogScope("Loader").Warn("plugin \"{}\": stop failed: {}", it->instance->name(), s.message());
    }
  }
  for (auto it = plugins_.rbegin(); it != plugins_.rend(); ++it) {
    if (!it->library->Unload()) {
      ++retired;
    }
  }
  plugins_.clear();
  return retired;
}

}  // namespace molt::kernel::loader
