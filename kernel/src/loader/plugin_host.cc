// SPDX-License-Identifier: Apache-2.0
// PluginHost: all-or-nothing loading of a plugin set, its stats, and unloading. The swap of
// generations is in generation_swap.cc, the health window and the last known good build in
// health_window.cc.
#include "kernel/src/loader/plugin_host.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <molt/scope_exit.h>

#include <algorithm>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/loader/build_archive.h"

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;

}  // namespace

abi::PluginInstance* PluginHost::InstanceOf(Service* s) {
  return dynamic_cast<abi::PluginInstance*>(s);
}

PluginHost::PluginHost(Kernel& kernel, std::string copy_dir, std::int32_t kind)
    : kernel_(kernel),
      copy_dir_(std::move(copy_dir)),
      kind_(kind),
      shared_(kernel),
      stage_link_(std::make_shared<StageLink>()) {
  stage_link_->host = this;
  generations_.push_back(std::make_unique<Generation>());
  serving_ = generations_.back().get();
  shared_.set_reload([this](std::string reason) {
    if (serving_->dir.empty()) {
      return Status::Unsupported(
          "the serving generation was not loaded from a directory: there is nothing to reload");
    }
    RequestReload(serving_->dir, std::move(reason), nullptr, Trigger::kAutomatic);
    return Status::Ok();
  });
  kernel_.AddStatsSection("generations",
                          [this](boost::json::object& section) { section = StatsObject(); });
}

PluginHost::~PluginHost() {
  WaitForLastKnownGood(kLastKnownGoodWait);  // the copy it reads is unloaded below
  {
    std::lock_guard<std::mutex> lock(stage_link_->mu);
    stage_link_->host = nullptr;  // a stage still running answers no one
  }
  for (auto& [id, stage] : stages_) {
    stage.timer.Cancel();
  }
  kernel_.RemoveStatsSection("generations");
  UnloadAll();
}

boost::json::object PluginHost::StatsObject() const {
  boost::json::array plugins;
  for (const Plugin& p : serving_->plugins) {
    boost::json::array uses;
    for (const auto& [service, name] : p.instance->interfaces_used()) {
      uses.push_back({{"service", service}, {"interface", name}});
    }
    plugins.push_back({{"name", p.instance->name()},
                       {"version", p.instance->info().version},
                       {"errors", p.instance->callback_errors()},
                       {"uses", std::move(uses)}});
  }
  boost::json::array failed;
  for (const auto& [build, why] : failed_builds_) {
    failed.push_back(boost::json::string(build));
  }
  boost::json::array history;
  for (const SwapRecord& r : history_) {
    history.push_back({{"time_ms", r.time_ms}, {"report", r.report.ToJson()}});
  }
  return {{"serving", serving_->name},
          {"build", serving_->build_id},
          {"plugins", std::move(plugins)},
          {"on_probation", probation_.has_value()},
          {"window_errors", probation_ ? probation_->errors : 0},
          {"resident", generations_.size()},
          {"swaps", swaps_},
          {"failed_swaps", failures_},
          {"rollbacks", rollbacks_},
          {"retired_libraries", retired_libraries_},
          {"failed_builds", std::move(failed)},
          {"stuck_callbacks", boost::json::array(shared_.stuck().begin(), shared_.stuck().end())},
          {"history", std::move(history)}};
}

PluginHost::Generation& PluginHost::Boot(const std::string& build_id) {
  if (serving_->name.empty()) {
    serving_->build_id = build_id;
    serving_->name = build_id + "#" + std::to_string(next_number_++);
  }
  return *serving_;
}

std::unique_ptr<PluginHost::Generation> PluginHost::NewGeneration(const std::string& build_id) {
  auto g = std::make_unique<Generation>();
  g->build_id = build_id;
  g->name = build_id + "#" + std::to_string(next_number_++);
  g->services = std::make_unique<ServiceManager>();
  return g;
}

Status PluginHost::LoadDirectory(const std::string& dir) {
  return LoadStaged(dir, StageBuild(dir, copy_dir_, CopyPrefix()));
}

void PluginHost::LoadDirectoryInBackground(const std::string& dir, Duration deadline,
                                           Callback<void(Status)> done) {
  StageThen(StageOf(dir), deadline,
            [this, dir, deadline, done = std::move(done)](StagedBuild* staged) {
              done(staged != nullptr ? LoadStaged(dir, std::move(*staged))
                                     : Status::Cancelled(StageTimeout(dir, deadline)));
            });
}

Status PluginHost::LoadStaged(const std::string& dir, StagedBuild staged) {
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

Status PluginHost::LoadFiles(const std::vector<std::string>& files) {
  Generation& g = Boot("local");
  return Load(g, files, {}, false);
}

PluginHost::StagedFiles PluginHost::StageFiles(const std::vector<std::string>& files,
                                               const std::map<std::string, BuildEntry>& entries,
                                               const std::string& copy_dir,
                                               const std::string& prefix) {
  StagedFiles staged;
  std::error_code ec;
  fs::create_directories(copy_dir, ec);
  if (ec) {
    staged.status = Status::IoError("cannot create the plugin copy directory \"" + copy_dir +
                                    "\": " + ec.message());
    return staged;
  }
  std::size_t n = 0;
  for (const std::string& file : files) {
    const std::string base = fs::path(file).filename().string();
    const std::string copy =
        (fs::path(copy_dir) / (prefix + std::to_string(++n) + "-" + base)).string();
    auto entry = entries.find(base);
    Result<StagedLibrary> lib = StagedLibrary::Stage(
        file, copy, entry != entries.end() ? std::string_view(entry->second.sha256) : "");
    staged.files.emplace_back();
    if (lib.ok()) {
      staged.files.back().library.emplace(std::move(lib).value());
    } else {
      staged.files.back().refusal = lib.status().message();
    }
  }
  return staged;
}

std::string PluginHost::CopyPrefix() { return std::to_string(next_copy_++) + "."; }

Status PluginHost::Load(Generation& into, const std::vector<std::string>& files,
                        const std::map<std::string, BuildEntry>& entries, bool dormant) {
  return Open(into, StageFiles(files, entries, copy_dir_, CopyPrefix()), entries, dormant);
}

Status PluginHost::Open(Generation& into, StagedFiles staged,
                        const std::map<std::string, BuildEntry>& entries, bool dormant) {
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

Status PluginHost::Register(Generation& into, const molt_plugin_info& info,
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

std::string PluginHost::Holder(const Generation& g, const std::string& name) {
  for (const Plugin& p : g.plugins) {
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
  MOLT_ASSIGN_OR_RETURN(molt_plugin_info descriptor, ReadDescriptor(info, where, kind_));
  Generation& g = Boot("static");
  if (std::string holder = Holder(g, descriptor.name); !holder.empty()) {
    return Status::AlreadyExists("plugin file \"" + where + "\": name \"" + descriptor.name +
                                 "\" is already used by \"" + holder +
                                 "\": plugin names must be unique");
  }
  return Register(g, descriptor, where, nullptr, false);
}

std::size_t PluginHost::Unload(Generation& g) {
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

void PluginHost::StopInstances(Generation& g) {
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

bool PluginHost::SelfTestRun::ok() const {
  return error.ok() &&
         std::all_of(tests.begin(), tests.end(), [](const auto& t) { return t.status.ok(); });
}

std::vector<PluginHost::SelfTestRun> PluginHost::RunSelfTests() {
  std::vector<SelfTestRun> runs;
  for (Service* s : kernel_.services().boot_order()) {
    abi::PluginInstance* inst = InstanceOf(s);
    if (inst->info().self_test == nullptr) {
      continue;
    }
    SelfTestRun run{inst->label(), {}, Status::Ok()};
    run.error = inst->SelfTest(&run.tests);
    if (run.tests.empty() && run.error.ok()) {
      continue;  // a self_test that reported none (molt.hpp's default SelfTest)
    }
    if (!run.error.ok()) {
      inst->log().Error("self-tests did not run to the end: {}", run.error.message());
    }
    for (const abi::PluginInstance::SelfTestResult& t : run.tests) {
      if (!t.status.ok()) {
        inst->log().Error("self-test \"{}\" failed: {}", t.name, t.status.message());
      }
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

std::string PluginHost::SelfTestsJson(const std::vector<SelfTestRun>& runs) {
  boost::json::array plugins;
  std::size_t passed = 0;
  std::size_t failed = 0;
  for (const SelfTestRun& run : runs) {
    boost::json::array tests;
    for (const abi::PluginInstance::SelfTestResult& t : run.tests) {
      (t.status.ok() ? passed : failed) += 1;
      tests.push_back({{"name", t.name}, {"ok", t.status.ok()}, {"error", t.status.message()}});
    }
    failed += run.error.ok() ? 0 : 1;
    plugins.push_back(
        {{"plugin", run.plugin}, {"error", run.error.message()}, {"tests", std::move(tests)}});
  }
  return boost::json::serialize(
      boost::json::object{{"passed", passed}, {"failed", failed}, {"plugins", std::move(plugins)}});
}

std::size_t PluginHost::UnloadAll() {
  Discard();
  if (probation_) {
    probation_->timer.Cancel();
    probation_.reset();
  }
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
