// SPDX-License-Identifier: Apache-2.0
// GenerationSet: loading plugin sets all or nothing, the resident generations, and letting them
// go (stopped now, unloaded in a later task).
#include "kernel/src/loader/generation_set.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "kernel/src/core/logger.h"

namespace molt::kernel::loader {

abi::PluginInstance* GenerationSet::InstanceOf(Service* s) {
  return dynamic_cast<abi::PluginInstance*>(s);
}

GenerationSet::GenerationSet(Kernel& kernel, abi::AbiShared& shared, std::string copy_dir,
                             std::int32_t kind)
    : kernel_(kernel), shared_(shared), copy_dir_(std::move(copy_dir)), kind_(kind) {
  generations_.push_back(std::make_unique<Generation>());
  serving_ = generations_.back().get();
}

std::string GenerationSet::CopyPrefix() { return std::to_string(next_copy_++) + "."; }

Generation& GenerationSet::Boot(const std::string& build_id) {
  if (serving_->name.empty()) {
    serving_->build_id = build_id;
    serving_->name = build_id + "#" + std::to_string(next_number_++);
  }
  return *serving_;
}

std::unique_ptr<Generation> GenerationSet::NewGeneration(const std::string& build_id) {
  auto g = std::make_unique<Generation>();
  g->build_id = build_id;
  g->name = build_id + "#" + std::to_string(next_number_++);
  g->services = std::make_unique<ServiceManager>();
  return g;
}

Status GenerationSet::LoadStaged(const std::string& dir, StagedBuild staged) {
  MOLT_RETURN_IF_ERROR(staged.status);
  const Build& build = staged.build;
  const bool named = serving_->name.empty();
  Generation& g = Boot(build.id);
  Status s = Open(g, std::move(staged.files), build.entries, false);
  if (s.ok()) {
    g.dir = dir;
    g.health_errors = build.health_errors;
    g.health_window_seconds = build.health_window_seconds;
  } else if (named && g.plugins.empty()) {  // nothing loaded: another build may still boot
    g.name.clear();
    g.build_id.clear();
    --next_number_;
  }
  return s;
}

Status GenerationSet::LoadFiles(const std::vector<std::string>& files) {
  Generation& g = Boot("local");
  return Load(g, files, {}, false);
}

Status GenerationSet::Load(Generation& into, const std::vector<std::string>& files,
                           const std::map<std::string, BuildEntry>& entries, bool dormant) {
  return Open(into, StageFiles(files, entries, copy_dir_, CopyPrefix()), entries, dormant);
}

Status GenerationSet::Open(Generation& into, StagedFiles staged,
                           const std::map<std::string, BuildEntry>& entries, bool dormant) {
  namespace fs = std::filesystem;
  MOLT_RETURN_IF_ERROR(staged.status);
  std::vector<std::unique_ptr<Library>> loaded;
  std::vector<std::string> refusals;
  std::map<std::string, std::string> names;  // name -> file, this set and those already loaded
  for (const Plugin& p : into.plugins) {
    names.emplace(p.instance->name(), p.instance->file());
  }
  for (StagedFiles::File& staged_file : staged.files) {
    if (!staged_file.library) {
      refusals.push_back(std::move(staged_file.refusal));
      continue;
    }
    const std::string file = staged_file.library->source();
    auto entry = entries.find(fs::path(file).filename().string());
    const BuildEntry* expected = entry == entries.end() ? nullptr : &entry->second;
    Result<std::unique_ptr<Library>> lib = Library::Open(std::move(*staged_file.library), kind_);
    if (!lib.ok()) {
      refusals.push_back(lib.status().message());
      continue;
    }
    const molt_plugin_info& info = (*lib)->info();
    const std::string name = info.name;
    if (expected != nullptr) {
      std::string mismatch;
      if (!expected->name.empty() && expected->name != name) {
        mismatch = "is named \"" + name + "\"";
      } else if (!expected->version.empty() && expected->version != info.version) {
        mismatch = "has version " + std::string(info.version);
      } else if (!expected->kind.empty() && expected->kind != PluginKindText(info.kind)) {
        mismatch = "is a " + std::string(PluginKindText(info.kind));
      }
      if (!mismatch.empty()) {
        refusals.push_back("plugin file \"" + file + "\" " + mismatch + ", but " + kBuildManifest +
                           " says otherwise: rebuild the manifest from the files");
        continue;
      }
    }
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
    std::string text = std::to_string(refusals.size()) + " of " +
                       std::to_string(staged.files.size()) + " plugin files refused:";
    for (const std::string& r : refusals) {
      text += "\n  " + r;
    }
    return Status::InvalidArgument(std::move(text));  // `loaded` unloads as it goes out of scope
  }
  for (auto& lib : loaded) {
    const molt_plugin_info& info = lib->info();
    const std::string source = lib->source();
    MOLT_RETURN_IF_ERROR(Register(into, info, source, std::move(lib), dormant));
  }
  return Status::Ok();
}

Status GenerationSet::Register(Generation& into, const molt_plugin_info& info,
                               const std::string& source, std::unique_ptr<Library> library,
                               bool dormant) {
  auto instance = std::make_shared<abi::PluginInstance>(shared_, info, source, into.name);
  instance->set_callback_limit(callback_deadline_);
  if (dormant) {
    instance->set_dormant();
  }
  Status s;
  if (into.services != nullptr) {
    instance->set_peers(into.services.get());
    s = into.services->Register(instance);
  } else {
    s = kernel_.RegisterService(instance);
  }
  if (!s.ok()) {
    return s.Prefixed("plugin file \"" + source + "\"");
  }
  LogScope("Loader").Info("loaded plugin \"{}\" {} from {} (generation {})", info.name,
                          info.version, source, into.name);
  into.plugins.push_back({std::move(library), std::move(instance)});
  return Status::Ok();
}

std::string GenerationSet::Holder(const Generation& g, const std::string& name) {
  for (const Plugin& p : g.plugins) {
    if (p.instance->name() == name) {
      return p.instance->file();
    }
  }
  return "";
}

Status GenerationSet::AddStatic(molt_plugin_entry_fn entry, const std::string& where) {
  if (entry == nullptr) {
    return Status::InvalidArgument("the entry function is NULL");
  }
  const molt_plugin_info* info = nullptr;
  try {
    info = entry();
  } catch (...) {
    return Status::InvalidArgument(where + ": the entry function threw");
  }
  MOLT_ASSIGN_OR_RETURN(molt_plugin_info descriptor, ReadDescriptor(info, where, kind_));
  Generation& g = Boot("static");
  if (std::string holder = Holder(g, descriptor.name); !holder.empty()) {
    return Status::AlreadyExists("plugin file \"" + where + "\": name \"" + descriptor.name +
                                 "\" is already used by \"" + holder +
                                 "\": plugin names must be unique");
  }
  return Register(g, descriptor, where, nullptr, false);
}

Status GenerationSet::CopiesOf(const Generation& from, std::vector<std::string>* copies) {
  for (const Plugin& p : from.plugins) {
    if (p.library == nullptr) {
      return Status::Unsupported("plugin \"" + p.instance->name() +
                                 "\" is linked into the host: it cannot be loaded again");
    }
    copies->push_back(p.library->copy());
  }
  return Status::Ok();
}

Status GenerationSet::MountCopiesOf(const Generation& from, Generation& into, StagedFiles* staged) {
  into.dir = from.dir;
  std::vector<std::string> copies;
  MOLT_RETURN_IF_ERROR(CopiesOf(from, &copies));
  Status s =
      staged != nullptr ? Open(into, std::move(*staged), {}, true) : Load(into, copies, {}, true);
  MOLT_RETURN_IF_ERROR(s);
  return into.services->InitAll();
}

Generation& GenerationSet::Serve(std::unique_ptr<Generation> g) {
  generations_.push_back(std::move(g));
  serving_ = generations_.back().get();
  return *serving_;
}

void GenerationSet::ReleaseLater(Generation* g) {
  auto it = std::find_if(generations_.begin(), generations_.end(),
                         [g](const std::unique_ptr<Generation>& x) { return x.get() == g; });
  if (it == generations_.end()) {
    return;
  }
  std::unique_ptr<Generation> owned = std::move(*it);
  generations_.erase(it);
  ReleaseLater(std::move(owned));
}

void GenerationSet::ReleaseLater(std::unique_ptr<Generation> g) {
  StopInstances(*g);
  releasing_.push_back(std::move(g));
  if (!release_task_.Pending()) {
    // Scheduled before a swap's report (GenerationSwap::Finish), so its log line follows the
    // release.
    release_task_ = kernel_.scheduler().Schedule([this] { ReleaseNow(); }, Priority::kKernel,
                                                 TaskOrigin::Named("release generations"));
  }
}

void GenerationSet::ReleaseNow() {
  release_task_ = TaskHandle();
  std::vector<std::unique_ptr<Generation>> gone = std::move(releasing_);
  releasing_.clear();
  for (const std::unique_ptr<Generation>& g : gone) {
    if (const std::size_t retired = Unload(*g); retired > 0) {
      retired_libraries_ += retired;
      LogScope("Generations")
          .Warn("generation {} is released, but {} of its libraries stay mapped (retired)",
                g->name.empty() ? g->build_id : g->name, retired);
    }
  }
}

std::size_t GenerationSet::Unload(Generation& g) {
  StopInstances(g);
  std::size_t retired = 0;
  for (auto it = g.plugins.rbegin(); it != g.plugins.rend(); ++it) {
    if (it->library && !it->instance->pinned_by().empty()) {
      it->library->set_unload_blocker(it->instance->pinned_by());
    }
    if (it->library && it->instance->code_holds() > 0) {
      // Worker jobs still run its code: the last one to return unloads it.
      LogScope("Loader").Info(
          "plugin \"{}\": {} worker job(s) still run its code; its library is unloaded when "
          "they return",
          it->instance->label(), it->instance->code_holds());
      it->instance->AfterCodeHolds(
          [library = std::shared_ptr<Library>(std::move(it->library))] { library->Unload(); });
      continue;
    }
    if (it->library && !it->library->Unload()) {
      ++retired;
    }
  }
  g.plugins.clear();
  return retired;
}

void GenerationSet::StopInstances(Generation& g) {
  // A no-op for those already stopped; in reverse dependency order: one stops once nothing left
  // depends on it, so no exporter stops under its consumers.
  std::vector<abi::PluginInstance*> left;
  for (const Plugin& p : g.plugins) {
    left.push_back(p.instance.get());
  }
  while (!left.empty()) {
    auto free = std::find_if(left.rbegin(), left.rend(), [&](const abi::PluginInstance* i) {
      return std::none_of(left.begin(), left.end(), [&](const abi::PluginInstance* o) {
        const auto& deps = o->dependencies();
        return std::find(deps.begin(), deps.end(), i->name()) != deps.end();
      });
    });
    abi::PluginInstance* next = free != left.rend() ? *free : left.back();  // a cycle: any order
    left.erase(std::find(left.begin(), left.end(), next));
    if (Status s = next->StopWithin(next->callback_limit()); !s.ok()) {
      LogScope("Loader").Warn("plugin \"{}\": stop failed: {}", next->label(), s.message());
    }
  }
}

std::size_t GenerationSet::UnloadAll() {
  release_task_.Cancel();
  std::size_t retired = 0;
  for (auto it = releasing_.rbegin(); it != releasing_.rend(); ++it) {
    retired += Unload(**it);
  }
  releasing_.clear();
  for (auto it = generations_.rbegin(); it != generations_.rend(); ++it) {
    retired += Unload(**it);
  }
  return retired;
}

}  // namespace molt::kernel::loader
