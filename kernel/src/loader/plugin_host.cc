// SPDX-License-Identifier: Apache-2.0
// PluginHost: all-or-nothing loading of a plugin set, and the swap of generations.
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

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;

double MillisSince(TimePoint t0) {
  return std::chrono::duration<double, std::milli>(RealNow() - t0).count();
}

std::string_view KindText(std::int32_t kind) {
  return kind == MOLT_PLUGIN_KIND_SERVICE ? "service" : "controller";
}

abi::PluginInstance* InstanceOf(Service* s) { return dynamic_cast<abi::PluginInstance*>(s); }

boost::json::array Strings(const std::vector<std::string>& items) {
  return boost::json::array(items.begin(), items.end());
}

// Milliseconds to the microsecond: what a report's reader needs of a duration.
double Ms(double ms) { return std::round(ms * 1000) / 1000; }

}  // namespace

boost::json::object SwapReport::ToJson() const {
  return {{"swap", ok ? "ok" : "failed"},
          {"reason", reason},
          {"build", build},
          {"generation", generation},
          {"previous", previous},
          {"serving", serving},
          {"ok", ok},
          {"stage", stage},
          {"load_ms", Ms(load_ms)},
          {"init_ms", Ms(init_ms)},
          {"stop_ms", Ms(stop_ms)},
          {"hard_stopped", Strings(hard_stopped)},
          {"swap_ms", Ms(swap_ms)},
          {"hold_ms", Ms(hold_ms())},
          {"error", error},
          {"restored", restored},
          {"rollback", rollback},
          {"retired", Strings(retired)},
          {"retired_libraries", retired_libraries}};
}

std::string SwapReport::Json() const { return boost::json::serialize(ToJson()); }

PluginHost::PluginHost(Kernel& kernel, std::string copy_dir, std::int32_t kind)
    : kernel_(kernel), copy_dir_(std::move(copy_dir)), kind_(kind), shared_(kernel) {
  generations_.push_back(std::make_unique<Generation>());
  serving_ = generations_.back().get();
  shared_.set_reload([this](std::string reason) {
    if (serving_->dir.empty()) {
      return Status::Unsupported(
          "the serving generation was not loaded from a directory: there is nothing to reload");
    }
    RequestReload(serving_->dir, std::move(reason));
    return Status::Ok();
  });
  kernel_.AddStatsSection("generations",
                          [this](boost::json::object& section) { section = StatsObject(); });
}

PluginHost::~PluginHost() {
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
          {"failed_builds", boost::json::array(failed_builds_.begin(), failed_builds_.end())},
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
  MOLT_ASSIGN_OR_RETURN(Build build, ReadBuild(dir));
  const bool named = serving_->name.empty();
  Generation& g = Boot(build.id);
  Status s = Load(g, build.files, build.entries, false);
  if (s.ok()) {
    g.dir = dir;
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

Status PluginHost::Load(Generation& into, const std::vector<std::string>& files,
                        const std::map<std::string, BuildEntry>& entries, bool dormant) {
  std::error_code ec;
  fs::create_directories(copy_dir_, ec);
  if (ec) {
    return Status::IoError("cannot create the plugin copy directory \"" + copy_dir_ +
                           "\": " + ec.message());
  }
  std::vector<std::unique_ptr<Library>> loaded;
  std::vector<std::string> refusals;
  std::map<std::string, std::string> names;  // name -> file, this set and those already loaded
  for (const Plugin& p : into.plugins) {
    names.emplace(p.instance->name(), p.instance->file());
  }
  for (const std::string& file : files) {
    const std::string base = fs::path(file).filename().string();
    const std::string copy =
        (fs::path(copy_dir_) / (std::to_string(next_copy_++) + "-" + base)).string();
    auto entry = entries.find(base);
    const BuildEntry* expected = entry == entries.end() ? nullptr : &entry->second;
    Result<std::unique_ptr<Library>> lib =
        Library::Load(file, copy, kind_, expected != nullptr ? expected->sha256 : "");
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
      } else if (!expected->kind.empty() && expected->kind != KindText(info.kind)) {
        mismatch = "is a " + std::string(KindText(info.kind));
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
    MOLT_RETURN_IF_ERROR(Register(into, info, source, std::move(lib), dormant));
  }
  return Status::Ok();
}

Status PluginHost::Register(Generation& into, const molt_plugin_info& info,
                            const std::string& source, std::unique_ptr<Library> library,
                            bool dormant) {
  auto instance = std::make_shared<abi::PluginInstance>(shared_, info, source, into.name);
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

// --- Swaps ---

Status PluginHost::Gate() const {
  if (!kernel_.started()) {
    return Status::FailedPrecondition(
        "the kernel has not started: load the first generation "
        "with LoadDirectory, then Kernel::Start");
  }
  if (closing_ || kernel_.shutting_down()) {
    return Status::FailedPrecondition("the server is closing: no reload now");
  }
  if (in_swap_) {
    return Status::FailedPrecondition(
        "a swap is in progress: a reload from inside one runs later (RequestReload)");
  }
  for (Service* s : kernel_.services().boot_order()) {
    abi::PluginInstance* inst = InstanceOf(s);
    if (inst == nullptr || &inst->shared() != &shared_) {
      return Status::FailedPrecondition("service \"" + s->name() +
                                        "\" is not one of this host's plugins: a swap replaces "
                                        "the whole service set, so it cannot run here");
    }
  }
  return Status::Ok();
}

std::unique_ptr<PluginHost::Generation> PluginHost::MountBuild(const std::string& dir,
                                                               SwapReport& r) {
  r.stage = "mount";
  const TimePoint t0 = RealNow();
  Result<Build> build = ReadBuild(dir);
  if (!build.ok()) {
    r.error = build.status().message();
    return nullptr;
  }
  r.build = build->id;
  std::unique_ptr<Generation> g = NewGeneration(build->id);
  g->dir = dir;
  g->health_errors = build->health_errors;
  g->health_window_seconds = build->health_window_seconds;
  for (const std::string& w : build->warnings) {
    LogScope("Generations").Warn("{}", w);
  }
  r.generation = g->name;
  Status s = Load(*g, build->files, build->entries, true);
  r.load_ms = MillisSince(t0);
  if (s.ok() && g->plugins.empty()) {
    s = Status::InvalidArgument("plugin directory \"" + dir +
                                "\" holds no plugin: a swap to nothing is refused");
  }
  if (s.ok()) {
    const TimePoint t1 = RealNow();
    s = g->services->InitAll();
    r.init_ms = MillisSince(t1);
  }
  if (!s.ok()) {
    r.error = s.message();
    failed_builds_.insert(build->id);
    r.retired_libraries += Unload(*g);
    return nullptr;
  }
  return g;
}

Status PluginHost::Activate(Generation& g, const States& states, std::string* stage) {
  const std::vector<Service*> order = g.services->boot_order();
  *stage = "adopt";
  for (Service* s : order) {
    abi::PluginInstance* inst = InstanceOf(s);
    inst->Serve();
    Status served;
    shared_.ForEachLayer([&](abi::HostLayer& layer) {
      if (served.ok()) {
        served = layer.Serve(inst);
      }
    });
    MOLT_RETURN_IF_ERROR(served);
  }
  *stage = "import";
  for (Service* s : order) {
    abi::PluginInstance* inst = InstanceOf(s);
    if (auto it = states.find(inst->name()); it != states.end()) {
      MOLT_RETURN_IF_ERROR(inst->ImportState(it->second.first, it->second.second));
    }
  }
  *stage = "start";
  MOLT_RETURN_IF_ERROR(g.services->StartAll());
  *stage = "replay";
  for (Service* s : order) {
    InstanceOf(s)->Replay();
  }
  return Status::Ok();
}

void PluginHost::Swap(std::unique_ptr<Generation> g, SwapReport& r, const States* fallback) {
  const TimePoint t0 = RealNow();
  Generation& old = *serving_;
  ServiceManager& old_set = kernel_.services();
  // A set that failed to boot (moltd swapping in the last known good) is no rollback target.
  const bool old_served = old_set.state() != ServiceManager::State::kFailed;
  r.stage = "export";
  States states;
  for (Service* s : old_set.boot_order()) {
    abi::PluginInstance* inst = InstanceOf(s);
    Result<std::optional<std::string>> state = inst->ExportState(kMaxStateBytes);
    if (!state.ok()) {
      r.error = state.status().message() + " (the swap is aborted; " + old.name + " serves on)";
      failed_builds_.insert(g->build_id);
      r.retired_libraries += Unload(*g);
      r.swap_ms = MillisSince(t0);
      return;
    }
    if (state->has_value()) {
      states[inst->name()] = {inst->info().state_version, std::move(**state)};
    }
  }

  if (fallback != nullptr) {
    // A rollback: older code is never handed state it cannot read; it gets what it exported.
    for (Service* s : g->services->boot_order()) {
      abi::PluginInstance* inst = InstanceOf(s);
      auto it = states.find(inst->name());
      if (it != states.end() && !inst->Reads(it->second.first)) {
        auto own = fallback->find(inst->name());
        LogScope("Generations")
            .Warn(
                "plugin \"{}\" cannot read the state version {} of the build it replaces: it "
                "gets the state it exported itself{}",
                inst->label(), it->second.first, own == fallback->end() ? " (none)" : ", older");
        if (own == fallback->end()) {
          states.erase(it);
        } else {
          it->second = own->second;
        }
      }
    }
  }
  // A swap during a health window ends it: the build it would have rolled back to is let go
  // (unloaded once the hold is over).
  Generation* let_go = DropProbation();

  r.stage = "stop";
  shared_.ForEachLayer([](abi::HostLayer& layer) { layer.BeginHandoff(); });
  const TimePoint t_stop = RealNow();
  old_set.StopAll(nullptr, stop_budget_);
  for (Service* s : old_set.halted()) {
    r.hard_stopped.push_back(s->name());
  }
  r.stop_ms = MillisSince(t_stop);
  if (!r.hard_stopped.empty()) {
    LogScope("Generations")
        .Warn("{} stop took more than {:.3g} s; hard stop of {}", old.name,
              std::chrono::duration<double>(stop_budget_).count(), fmt::join(r.hard_stopped, ", "));
  }

  kernel_.Serve(g->services.get());
  std::string stage;
  Status s = Activate(*g, states, &stage);
  r.stage = stage;
  if (s.ok()) {
    r.ok = true;
    r.stage = "done";
    generations_.push_back(std::move(g));
    serving_ = generations_.back().get();
  } else {
    // Back to the previous build, from fresh copies of its libraries (no static state of a
    // half-run library is reused), with the state it exported.
    r.error = s.message();
    failed_builds_.insert(g->build_id);
    g->services->StopAll();
    std::unique_ptr<Generation> back = NewGeneration(old.build_id);
    Status b = MountCopiesOf(old, *back);
    kernel_.Serve(back->services.get());
    std::string back_stage;
    if (b.ok()) {
      b = Activate(*back, states, &back_stage);
    }
    if (b.ok()) {
      r.restored = true;
    } else {
      r.error += "; restoring " + old.build_id + " failed too: " + b.message() +
                 " (no generation serves: reload a build that works)";
      LogScope("Generations").Error("no generation serves after a failed swap: {}", r.error);
    }
    generations_.push_back(std::move(back));
    serving_ = generations_.back().get();
    r.retired_libraries += Unload(*g);
  }
  shared_.ForEachLayer([&r](abi::HostLayer& layer) {
    for (std::string& line : layer.EndHandoff()) {
      r.retired.push_back(std::move(line));
    }
    layer.SetServing(r.ok || r.restored);  // none serves: new clients are told it is starting
  });
  r.swap_ms = MillisSince(t0);
  if (let_go != nullptr) {
    r.retired_libraries += Release(let_go);
  }
  if (r.ok && fallback == nullptr) {
    // On probation: the old generation stays resident until the window passes.
    StartProbation(*serving_, old_served ? &old : nullptr, std::move(states));
  }
  if (!r.ok || fallback != nullptr || !old_served) {
    r.retired_libraries += Release(&old);
  }
}

Status PluginHost::MountCopiesOf(const Generation& from, Generation& into) {
  into.dir = from.dir;
  std::vector<std::string> copies;
  for (const Plugin& p : from.plugins) {
    if (p.library == nullptr) {
      return Status::Unsupported("plugin \"" + p.instance->name() +
                                 "\" is linked into the host: it cannot be loaded again");
    }
    copies.push_back(p.library->copy());
  }
  if (Status s = Load(into, copies, {}, true); !s.ok()) {
    return s;
  }
  return into.services->InitAll();
}

std::size_t PluginHost::Release(Generation* g) {
  const std::size_t retired = Unload(*g);
  std::erase_if(generations_, [&](const std::unique_ptr<Generation>& x) { return x.get() == g; });
  return retired;
}

// --- The health window ---

void PluginHost::BeginHealthWindow() {
  if (!probation_ && !serving_->plugins.empty()) {
    StartProbation(*serving_, nullptr, {});
  }
}

void PluginHost::StartProbation(Generation& g, Generation* previous, States previous_states) {
  Probation p;
  p.gen = &g;
  p.previous = previous;
  p.previous_states = std::move(previous_states);
  p.threshold = g.health_errors != 0 ? g.health_errors : health_errors_;
  p.window = g.health_window_seconds != 0 ? Seconds(g.health_window_seconds) : health_window_;
  p.timer = kernel_.scheduler().After(
      p.window, [this] { PassProbation(); }, Priority::kKernel, TaskOrigin::Named("health window"));
  for (const Plugin& plugin : g.plugins) {
    plugin.instance->set_error_listener([this, gen = &g] { OnError(gen); });
  }
  probation_ = std::move(p);
}

PluginHost::Generation* PluginHost::DropProbation() {
  if (!probation_) {
    return nullptr;
  }
  Probation p = std::move(*probation_);
  probation_.reset();
  p.timer.Cancel();
  for (const Plugin& plugin : p.gen->plugins) {
    plugin.instance->set_error_listener(nullptr);
  }
  return p.previous;
}

void PluginHost::OnError(const Generation* g) {
  if (!probation_ || probation_->gen != g || probation_->rolling_back) {
    return;  // errors of other generations never count
  }
  if (++probation_->errors < probation_->threshold) {
    return;
  }
  probation_->rolling_back = true;
  if (probation_->previous == nullptr) {
    LogScope("Generations")
        .Error(
            "generation {} reached {} errors in its health window: it is not recorded as "
            "last known good (there is no earlier build to roll back to)",
            g->name, probation_->errors);
    return;
  }
  // Never inside the plugin callback that failed: the rollback is a kernel task of its own.
  kernel_.scheduler().Schedule([this] { Rollback(); }, Priority::kKernel,
                               TaskOrigin::Named("rollback"));
}

void PluginHost::PassProbation() {
  if (!probation_) {
    return;
  }
  Probation p = std::move(*probation_);
  probation_.reset();
  for (const Plugin& plugin : p.gen->plugins) {
    plugin.instance->set_error_listener(nullptr);
  }
  std::size_t retired = 0;
  if (p.previous != nullptr) {
    retired = Release(p.previous);
  }
  LogScope("Generations")
      .Info("generation {} passed its health window ({} errors, threshold {}){}", p.gen->name,
            p.errors, p.threshold,
            retired > 0 ? "; " + std::to_string(retired) + " old libraries stay mapped (retired)"
                        : std::string());
  if (!p.rolling_back) {
    SaveLastKnownGood(*p.gen);
  }
}

void PluginHost::Rollback() {
  if (!probation_ || probation_->previous == nullptr || in_swap_) {
    return;
  }
  Probation p = std::move(*probation_);
  probation_.reset();
  p.timer.Cancel();
  Generation& bad = *p.gen;
  Generation& previous = *p.previous;
  SwapReport r;
  r.reason = "health: " + std::to_string(p.errors) + " errors in " + bad.name + " within " +
             fmt::format("{:g}", ToSeconds(p.window)) + " s of its swap";
  r.previous = bad.name;
  r.build = previous.build_id;
  r.rollback = true;
  failed_builds_.insert(bad.build_id);
  in_swap_ = true;
  ScopeExit done = [this]() noexcept { in_swap_ = false; };
  // The previous build, from fresh copies of the libraries it kept resident.
  std::unique_ptr<Generation> g = NewGeneration(previous.build_id);
  r.generation = g->name;
  r.stage = "mount";
  const TimePoint t0 = RealNow();
  Status s = MountCopiesOf(previous, *g);
  r.load_ms = MillisSince(t0);
  r.retired_libraries += Release(&previous);
  if (!s.ok()) {
    r.error = s.message() + " (" + bad.name + " serves on)";
    r.retired_libraries += Unload(*g);
    Finish(r);
    return;
  }
  Swap(std::move(g), r, &p.previous_states);
  Finish(r);
}

void PluginHost::SaveLastKnownGood(const Generation& g) {
  if (lkg_dir_.empty()) {
    return;
  }
  std::vector<std::string> files;
  std::vector<std::string> names;
  for (const Plugin& p : g.plugins) {
    if (p.library == nullptr) {
      return;  // plugins linked into the host are no build to keep
    }
    files.push_back(p.library->copy());
    names.push_back(fs::path(p.library->source()).filename().string());
  }
  // Written beside, then renamed into place: a crash leaves the old one or the new one.
  std::error_code ec;
  const std::string tmp = lkg_dir_ + ".new";
  const std::string old = lkg_dir_ + ".old";
  fs::remove_all(tmp, ec);
  Status s = WriteBuild(tmp, g.build_id, files, names);
  if (s.ok()) {
    fs::remove_all(old, ec);
    if (fs::exists(lkg_dir_, ec)) {
      fs::rename(lkg_dir_, old, ec);
    }
    fs::rename(tmp, lkg_dir_, ec);
    if (ec) {
      s = Status::IoError("cannot rename \"" + tmp + "\" to \"" + lkg_dir_ + "\": " + ec.message());
    }
    fs::remove_all(old, ec);
  }
  if (!s.ok()) {
    LogScope("Generations")
        .Warn("build {} could not be kept as last known good: {}", g.build_id, s.message());
    return;
  }
  LogScope("Generations")
      .Info("build {} is the last known good (kept in {})", g.build_id, lkg_dir_);
}

SwapReport PluginHost::Finish(SwapReport& r) {
  // "" when no generation serves (a failed swap whose restore failed too).
  r.serving = kernel_.services().state() == ServiceManager::State::kFailed ? "" : serving_->name;
  ++(r.ok ? swaps_ : failures_);
  rollbacks_ += r.rollback && r.ok ? 1 : 0;
  const std::string json = r.Json();
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  history_.push_front({now.count(), r});
  if (history_.size() > kHistory) {
    history_.pop_back();
  }
  LogScope log("Generations");
  if (r.ok) {
    log.Info("{}", json);
  } else {
    log.Error("{}", json);
  }
  return r;
}

Status PluginHost::Mount(const std::string& dir, const std::string& reason) {
  Discard();
  SwapReport r;
  r.reason = reason;
  r.previous = serving_->name;
  r.stage = "gate";
  Status s = Gate();
  if (s.ok()) {
    in_swap_ = true;
    mounted_ = MountBuild(dir, r);
    in_swap_ = false;
    s = mounted_ != nullptr ? Status::Ok() : Status::FailedPrecondition(r.error);
  } else {
    r.error = s.message();
  }
  mount_report_ = s.ok() ? std::move(r) : Finish(r);
  return s;
}

SwapReport PluginHost::SwapMounted() {
  SwapReport r = std::move(mount_report_);
  mount_report_ = SwapReport();
  std::unique_ptr<Generation> g = std::move(mounted_);
  if (g == nullptr) {
    r.stage = "gate";
    r.error = "no generation is mounted: Mount() first";
    return Finish(r);
  }
  if (Status s = Gate(); !s.ok()) {
    r.error = s.message();
    r.retired_libraries += Unload(*g);
    return Finish(r);
  }
  r.previous = serving_->name;
  in_swap_ = true;
  ScopeExit done = [this]() noexcept { in_swap_ = false; };
  Swap(std::move(g), r);
  return Finish(r);
}

void PluginHost::Discard() {
  if (mounted_ != nullptr) {
    Unload(*mounted_);
    mounted_.reset();
  }
}

SwapReport PluginHost::Reload(const std::string& dir, const std::string& reason) {
  if (!Mount(dir, reason).ok()) {
    return std::exchange(mount_report_, SwapReport());
  }
  return SwapMounted();
}

void PluginHost::RequestReload(std::string dir, std::string reason,
                               Callback<void(const SwapReport&)> done) {
  if (queued_ && queued_->done) {
    SwapReport superseded;
    superseded.reason = queued_->reason;
    superseded.previous = superseded.serving = serving_->name;
    superseded.stage = "gate";
    superseded.error = "superseded by a newer reload request (" + reason + ")";
    queued_->done(superseded);
  }
  queued_ = Request{std::move(dir), std::move(reason), std::move(done)};
  if (!reload_scheduled_) {
    reload_scheduled_ = true;
    kernel_.scheduler().Schedule([this] { RunQueued(); }, Priority::kKernel,
                                 TaskOrigin::Named("reload"));
  }
}

void PluginHost::RunQueued() {
  reload_scheduled_ = false;
  if (!queued_) {
    return;
  }
  auto req = std::make_shared<Request>(std::move(*queued_));
  queued_.reset();
  if (!Mount(req->dir, req->reason).ok()) {
    SwapReport r = std::exchange(mount_report_, SwapReport());
    if (req->done) {
      req->done(r);
    }
    return;
  }
  // Clients are served between the mount and the swap: the swap is a step of its own.
  kernel_.scheduler().Schedule(
      [this, req] {
        SwapReport r = SwapMounted();
        if (req->done) {
          req->done(r);
        }
      },
      Priority::kKernel, TaskOrigin::Named("reload"));
}

std::size_t PluginHost::Unload(Generation& g) {
  std::size_t retired = 0;
  // Every instance is stopped first (a no-op for those already stopped), in reverse dependency
  // order: one stops once nothing left depends on it, so no exporter stops under its consumers.
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
    if (Status s = next->Stop(); !s.ok()) {
      LogScope("Loader").Warn("plugin \"{}\": stop failed: {}", next->label(), s.message());
    }
  }
  for (auto it = g.plugins.rbegin(); it != g.plugins.rend(); ++it) {
    if (it->library && !it->instance->pinned_by().empty()) {
      it->library->set_unload_blocker(it->instance->pinned_by());
    }
    if (it->library && !it->library->Unload()) {
      ++retired;
    }
  }
  g.plugins.clear();
  return retired;
}

std::size_t PluginHost::UnloadAll() {
  Discard();
  if (probation_) {
    probation_->timer.Cancel();
    probation_.reset();
  }
  std::size_t retired = 0;
  for (auto it = generations_.rbegin(); it != generations_.rend(); ++it) {
    retired += Unload(**it);
  }
  return retired;
}

}  // namespace molt::kernel::loader
