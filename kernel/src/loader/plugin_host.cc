// SPDX-License-Identifier: Apache-2.0
// PluginHost: the composition of the loader's parts (plugin_host.h), the boot generation's
// loading, its stats and its self-tests.
#include "kernel/src/loader/plugin_host.h"

#include <algorithm>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <utility>

#include "kernel/src/abi/host_api.h"
#include "kernel/src/core/logger.h"

namespace molt::kernel::loader {

PluginHost::PluginHost(Kernel& kernel, std::string copy_dir, std::int32_t kind)
    : kernel_(kernel),
      shared_(kernel, abi::CoreHostApi()),
      generations_(kernel, shared_, std::move(copy_dir), kind),
      stager_(kernel),
      last_known_good_(kernel.loop()),
      health_(kernel.scheduler(),
              HealthWindow::Verdicts{
                  [this] { swap_.Rollback(); },
                  [this](Generation* previous) { generations_.ReleaseLater(previous); },
                  [this](const Generation& good) { last_known_good_.Save(good); }}),
      swap_(kernel, shared_, generations_, health_, stager_),
      reloads_(kernel.scheduler(), generations_, swap_, stager_) {
  shared_.set_reload([this](std::string reason) { return ReloadForPlugin(std::move(reason)); });
  kernel_.AddStatsSection("generations",
                          [this](boost::json::object& section) { section = StatsObject(); });
}

PluginHost::~PluginHost() {
  last_known_good_.Wait(kLastKnownGoodWait);  // the copy it reads is unloaded below
  stager_.Abandon();                          // a stage still running answers no one
  kernel_.RemoveStatsSection("generations");
  UnloadAll();
}

Status PluginHost::ReloadForPlugin(std::string reason) {
  const Generation& serving = generations_.serving();
  if (serving.dir.empty()) {
    return Status::Unsupported(
        "the serving generation was not loaded from a directory: there is nothing to reload");
  }
  RequestReload(serving.dir, std::move(reason), nullptr, Trigger::kAutomatic);
  return Status::Ok();
}

Status PluginHost::LoadDirectory(const std::string& dir) {
  return generations_.LoadStaged(
      dir, StageBuild(dir, generations_.copy_dir(), generations_.CopyPrefix()));
}

void PluginHost::LoadDirectoryInBackground(const std::string& dir, Duration deadline,
                                           Callback<void(Status)> done) {
  stager_.Run(StageBuildJob(dir, generations_.copy_dir(), generations_.CopyPrefix()), deadline,
              [this, dir, deadline, done = std::move(done)](StagedBuild* staged) {
                done(staged != nullptr ? generations_.LoadStaged(dir, std::move(*staged))
                                       : Status::Cancelled(BuildStager::Timeout(dir, deadline)));
              });
}

void PluginHost::set_background_staging(Duration deadline) {
  stager_.set_deadline(deadline);
  last_known_good_.set_background(deadline != Duration::max());
}

void PluginHost::set_stage_hook_for_testing(std::function<void()> hook) {
  stager_.set_hook_for_testing(hook);
  last_known_good_.set_hook_for_testing(std::move(hook));
}

void PluginHost::BeginHealthWindow() {
  if (!health_.active() && !generations_.serving().plugins.empty()) {
    health_.Start(generations_.serving(), nullptr, {});
  }
}

std::size_t PluginHost::UnloadAll() {
  swap_.Discard();
  health_.Clear();
  return generations_.UnloadAll();
}

boost::json::object PluginHost::StatsObject() const {
  const Generation& serving = generations_.serving();
  boost::json::array plugins;
  for (const Plugin& p : serving.plugins) {
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
  for (const auto& [build, why] : swap_.failed_builds()) {
    failed.push_back(boost::json::string(build));
  }
  boost::json::array history;
  for (const GenerationSwap::Record& r : swap_.history()) {
    history.push_back({{"time_ms", r.time_ms}, {"report", r.report.ToJson()}});
  }
  return {{"serving", serving.name},
          {"build", serving.build_id},
          {"plugins", std::move(plugins)},
          {"on_probation", health_.active()},
          {"window_errors", health_.errors()},
          {"resident", generations_.resident()},
          {"swaps", swap_.swaps()},
          {"failed_swaps", swap_.failures()},
          {"rollbacks", swap_.rollbacks()},
          {"retired_libraries", generations_.retired_libraries()},
          {"failed_builds", std::move(failed)},
          {"stuck_callbacks", boost::json::array(shared_.stuck().begin(), shared_.stuck().end())},
          {"history", std::move(history)}};
}

bool PluginHost::SelfTestRun::ok() const {
  return error.ok() &&
         std::all_of(tests.begin(), tests.end(), [](const auto& t) { return t.status.ok(); });
}

std::vector<PluginHost::SelfTestRun> PluginHost::RunSelfTests() {
  std::vector<SelfTestRun> runs;
  for (Service* s : kernel_.services().boot_order()) {
    abi::PluginInstance* inst = GenerationSet::InstanceOf(s);
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

}  // namespace molt::kernel::loader
