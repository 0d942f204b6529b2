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
    names.emplace(p.instance->name(), p.instance->file());
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
    const molt_plugin_info& info = lib->info();
    const std::string source = lib->source();
    if (Status s = Register(info, source, std::move(lib)); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

Status PluginHost::Register(const molt_plugin_info& info, const std::string& source,
                            std::unique_ptr<Library> library) {
  auto instance = std::make_shared<abi::PluginInstance>(shared_, info, source);
  if (Status s = kernel_.RegisterService(instance); !s.ok()) {
    return s.Prefixed("plugin file \"" + source + "\"");
  }
  LogScope("Loader").Info("loaded plugin \"{}\" {} from {}", info.name, info.version, source);
  plugins_.push_back({std::move(library), std::move(instance)});
  return Status::Ok();
}

std::string PluginHost::Holder(const std::string& name) const {
  for (const Plugin& p : plugins_) {
    if (p.instance->name() == name) {
      return p.instance->file();
    }
  }
  return "";
}

Status PluginHost::AddStatic(molt_plugin_entry_fn entry, const std::string& where) {
  if (entry == nullptr) {
    return Status::InvalidArgument("the entry function is NULL");
  }
  const molt_plugin_info* info = nullptr;
  try {
    info = entry();
  } catch (...) {
    return Status::InvalidArgument(where + ": the entry function threw");
  }
  Result<molt_plugin_info> descriptor = ReadDescriptor(info, where, kind_);
  if (!descriptor.ok()) {
    return descriptor.status();
  }
  if (std::string holder = Holder(descriptor->name); !holder.empty()) {
    return Status::AlreadyExists("plugin file \"" + where + "\": name \"" + descriptor->name +
                                 "\" is already used by \"" + holder +
                                 "\": plugin names must be unique");
  }
  return Register(*descriptor, where, nullptr);
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
    if (it->library && !it->library->Unload()) {
      ++retired;
    }
  }
  plugins_.clear();
  return retired;
}

}  // namespace molt::kernel::loader
