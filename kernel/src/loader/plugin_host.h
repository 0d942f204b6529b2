// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/plugin_host.h
//
// PluginHost: the plugins of one kernel, as generations (DESIGN.md §6), composed of parts with one
// job each:
//   - GenerationSet (generation_set.h): the generations resident, loading a set all or nothing,
//     letting a generation go (stopped now, unloaded in a later task);
//   - BuildStager (build_stager.h): a build read, copied and hashed on a thread of its own;
//   - GenerationSwap (generation_swap.h): the gate, mounting a build dormant, the swap under live
//     clients, restoring the previous build on failure, the health window's rollback, the
//     reports (swap_report.h);
//   - ReloadQueue (reload_queue.h): reloads asked for while the kernel runs, newest wins;
//   - HealthWindow (health_window.h): a new generation's probation, its rollback verdict;
//   - LastKnownGood (last_known_good.h): the build a window passed, kept for a boot that fails.
// The host wires them (the window's verdicts to the swap, the set and the last known good) and
// is what the server, the client library and the test kit see: this API.
//
// The boot generation: LoadDirectory() / LoadFiles() / AddStatic() load a set all or nothing (an
// operator sees every problem at once: one line per file, naming the cause and the fix) and
// register each instance with the kernel as a service; Kernel::Start() boots them.
//
// A swap, once the kernel runs: Reload(dir) replaces the serving generation under live clients
// (mount dormant, then the swap: export, stop, adopt, import, start, replay; generation_swap.h).
// A mount failure leaves the old generation serving; an import or start failure restores the
// previous generation from a fresh copy of its libraries, with the state it exported. Either way
// clients stay connected, and the build is marked failed (failed_builds()). Every swap logs one
// JSON line (SwapReport). RequestReload() runs the same on later scheduler steps (mount, then the
// swap on the next step), never nested in a plugin callback; while one is queued or running, a
// newer request replaces the queued one.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_LOADER_PLUGIN_HOST_H_
#define MOLT_KERNEL_LOADER_PLUGIN_HOST_H_

#include <molt/kernel/status.h>

#include <boost/json/fwd.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/loader/build_stager.h"
#include "kernel/src/loader/generation_set.h"
#include "kernel/src/loader/generation_swap.h"
#include "kernel/src/loader/health_window.h"
#include "kernel/src/loader/last_known_good.h"
#include "kernel/src/loader/reload_queue.h"
#include "kernel/src/loader/swap_report.h"

namespace molt::kernel::loader {

class PluginHost {
 public:
  using Plugin = loader::Plugin;
  using Trigger = GenerationSwap::Trigger;
  // Most state one plugin may hand to the next generation.
  static constexpr std::size_t kMaxStateBytes = GenerationSwap::kMaxStateBytes;

  // `copy_dir` receives the per-instance copies of the libraries; it is created when missing and
  // emptied of our copies as generations unload.
  PluginHost(Kernel& kernel, std::string copy_dir, std::int32_t kind = MOLT_PLUGIN_KIND_SERVICE);
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;
  ~PluginHost();

  // --- The boot generation ---
  // Loads every regular file ending in ".so" in `dir` (and its molt-build.json), in name order.
  Status LoadDirectory(const std::string& dir);
  // LoadDirectory(), its build staged on a thread of its own (a boot with clients waiting:
  // moltd's): `done` hears the outcome on the kernel thread; a stage past `deadline` is abandoned
  // and `done` hears why (Code::kCancelled: nothing is known of the build). Needs the kernel's
  // loop running.
  void LoadDirectoryInBackground(const std::string& dir, Duration deadline,
                                 Callback<void(Status)> done);
  // Loads `files`; all or nothing. On success each plugin is registered with the kernel.
  Status LoadFiles(const std::vector<std::string>& files) { return generations_.LoadFiles(files); }
  // Registers a plugin linked into the host: `entry` returns its descriptor, checked like a
  // file's (`where` names it in errors). Its code is never unloaded.
  Status AddStatic(molt_plugin_entry_fn entry, const std::string& where) {
    return generations_.AddStatic(entry, where);
  }

  // --- Swaps (generation_swap.h) ---
  // Replaces the serving generation with the build in `dir`. Refused before the kernel started,
  // while closing, and from inside a swap (use RequestReload). A build that failed here is never
  // taken again by an automatic trigger (Trigger::kAutomatic: --watch, a plugin's
  // reload_request); an operator (SIGHUP, the admin API, a direct Reload()) may retry it.
  SwapReport Reload(const std::string& dir, const std::string& reason,
                    Trigger trigger = Trigger::kOperator) {
    return swap_.Reload(dir, reason, trigger);
  }
  // The two halves of Reload(). Mount() loads and initializes the build in `dir` dormant, beside
  // the serving generation (discarding one mounted earlier); on failure it logs the report and
  // returns why. SwapMounted() swaps the mounted generation in and returns the report; `done`
  // (may be null) hears it in a later task, after its log line.
  Status Mount(const std::string& dir, const std::string& reason,
               Trigger trigger = Trigger::kOperator) {
    return swap_.Mount(dir, reason, trigger);
  }
  SwapReport SwapMounted(Callback<void(const SwapReport&)> done = nullptr) {
    return swap_.SwapMounted(std::move(done));
  }
  bool mounted() const { return swap_.mounted(); }
  // Reload() on later scheduler steps (the mount on one, the swap on the next, so clients are
  // served between them); `done` (may be null) hears the report. Newest wins. A plugin's
  // reload_request (ABI 1.3) lands here, for the directory the serving generation came from.
  void RequestReload(std::string dir, std::string reason,
                     Callback<void(const SwapReport&)> done = nullptr,
                     Trigger trigger = Trigger::kOperator) {
    reloads_.Request(std::move(dir), std::move(reason), std::move(done), trigger);
  }
  // RequestReload() stages the build on a thread of its own: reading it (unpacking a build file)
  // and copying and hashing each library, the part of a mount that grows with the build's size,
  // so the kernel thread serves on meanwhile; opening, init and the swap then run there as
  // always. A stage past `deadline` (a stuck disk or network file system) is abandoned: its
  // reload fails naming it, the serving generation serves on, and the next reload may run. Off
  // unless set (staged inline, as a client app's controllers are); moltd sets it. The window's
  // rollback stages its copies, and the last known good is saved, off the kernel thread too.
  static constexpr Duration kStageDeadline = std::chrono::seconds(60);
  void set_background_staging(Duration deadline);
  // Tests only: runs on the staging thread before each background stage, a rollback's among
  // them, and before each last-known-good save off the kernel thread (a file system that hangs
  // cannot be caused for real in a test).
  void set_stage_hook_for_testing(std::function<void()> hook);
  // Refuses every later reload: the server is closing.
  void Close() { swap_.Close(); }
  // Bounds the old generation's soft stop (its stop() calls, in reverse order) in a swap: once
  // they took this long together, the rest are halted without their stop() (5 s, the spec's
  // STOP_DEADLINE). With a callback deadline (below), a stop() that runs past what is left of it
  // is abandoned and its instance hard-stopped (the report's hard_stopped names both kinds).
  static constexpr Duration kStopBudget = GenerationSwap::kStopBudget;
  void set_stop_budget(Duration budget) { swap_.set_stop_budget(budget); }
  // The deadline of each init, start, export_state and import_state of the plugins loaded from
  // here on (abi::PluginInstance::set_callback_limit): past it the callback is abandoned and the
  // server keeps serving. An export_state past it abandons the swap (the old generation serves
  // on; its instance is hard-stopped at its next stop); an init past it fails the mount; an
  // import_state or start past it fails the swap, which restores the previous build. Off
  // (Duration::max()) unless set: callbacks then run on the calling thread, as a client app's
  // controllers do. moltd sets it (server.callback_deadline_seconds, 5 s by default).
  static constexpr Duration kCallbackDeadline = std::chrono::seconds(5);
  void set_callback_deadline(Duration deadline) { generations_.set_callback_deadline(deadline); }
  // The callbacks abandoned at their deadline so far, one line each (the stats' stuck_callbacks,
  // /healthz): each may still run, and its library stays mapped for good.
  const std::vector<std::string>& stuck_callbacks() const { return shared_.stuck(); }

  // --- The health window (health_window.h) ---
  // After a swap the new generation is on probation: when errors attributed to it (failed
  // callbacks, handlers, tasks, crashed processes, exceptions caught at the ABI) reach `errors`
  // within `window` of the swap, the previous build, kept resident meanwhile, is restored
  // (rollback). Once the window passes the old libraries are unloaded and the build becomes the
  // last known good. Defaults 3 errors in 30 s; a manifest may set 1..100 errors and 5..300 s.
  void set_health(std::uint32_t errors, Duration window) { health_.set_defaults(errors, window); }
  // Where the last known good build is kept (a directory this host owns; empty: nowhere). With
  // background staging the save (a copy of every library, with fsyncs) runs off the kernel
  // thread; the host's destruction waits for one in flight for at most kLastKnownGoodWait.
  void set_last_known_good_dir(std::string dir) { last_known_good_.set_dir(std::move(dir)); }
  static constexpr Duration kLastKnownGoodWait = LastKnownGood::kWait;
  // Waits for the last-known-good saves in flight, for at most `limit`.
  void WaitForLastKnownGood(Duration limit) { last_known_good_.Wait(limit); }
  // Starts the boot generation's health window (after Kernel::Start): if it passes without
  // reaching the threshold, the boot build becomes the last known good.
  void BeginHealthWindow();
  // The serving generation is in its health window.
  bool on_probation() const { return health_.active(); }

  // Stops every instance still running, then unloads every library. Returns how many stay mapped
  // as retired (they could not be unloaded; each is reported).
  std::size_t UnloadAll();

  // --- Self-tests (ABI 1.8; the spec gate) ---
  // One plugin's own tests, as its self_test reported them.
  struct SelfTestRun {
    std::string plugin;  // its label: "counter@<generation>"
    std::vector<abi::PluginInstance::SelfTestResult> tests;
    Status error;  // the self_test callback itself failed (an error, a throw, its deadline)
    bool ok() const;
  };
  // Runs the own tests of every plugin of the serving generation, in boot order, on this thread
  // (REQUIRES: started): one run per plugin that reported a test or failed. Each failure is
  // logged.
  std::vector<SelfTestRun> RunSelfTests();
  // `runs` as one JSON object: {"passed", "failed", "plugins": [{"plugin", "error", "tests":
  // [{"name", "ok", "error"}]}]} (the test kit's report).
  static std::string SelfTestsJson(const std::vector<SelfTestRun>& runs);

  // The serving generation's plugins, and its name ("" before anything loaded).
  const std::vector<Plugin>& plugins() const { return generations_.serving().plugins; }
  const std::string& generation() const { return generations_.serving().name; }
  // Hears every swap's report, after its log line (the health window's rollbacks too): how the
  // server's deploys learn that a deployed build was rolled back.
  void set_swap_listener(Callback<void(const SwapReport&)> listener) {
    swap_.set_listener(std::move(listener));
  }
  // Build ids that failed here, each with why: a mount, init, import or start failure of its
  // own, or its health window. Never taken again by an automatic trigger (Trigger); a swap to
  // one that succeeds clears its mark.
  const std::map<std::string, std::string>& failed_builds() const { return swap_.failed_builds(); }
  abi::AbiShared& shared() { return shared_; }
  // The "generations" section of the kernel's stats (Kernel::StatsObject, the stats_json slot,
  // the admin API's plugins): the serving generation and its plugins with their error counts,
  // the health window, the resident generations, swaps, rollbacks, failed builds, and the newest
  // kHistory swap reports ("history": newest first, each {"time_ms", "report"}). Both roles
  // render it (moltd and libmolt_client swap generations), so it is rendered here, once.
  boost::json::object StatsObject() const;
  // Swaps that ended with a new generation serving, swaps that did not, health-window rollbacks,
  // and the generations resident (serving, on probation, mounted).
  std::uint64_t swaps() const { return swap_.swaps(); }
  std::uint64_t failed_swaps() const { return swap_.failures(); }
  std::uint64_t rollbacks() const { return swap_.rollbacks(); }
  std::size_t resident_generations() const { return generations_.resident(); }
  // Libraries kept mapped because they could not be unloaded, since the start (each is logged).
  std::size_t retired_libraries() const { return generations_.retired_libraries(); }
  static constexpr std::size_t kHistory = GenerationSwap::kHistory;

 private:
  // The reload_request slot's way here: the serving generation's directory, reloaded on a later
  // step as an automatic trigger.
  Status ReloadForPlugin(std::string reason);

  Kernel& kernel_;
  abi::AbiShared shared_;
  GenerationSet generations_;
  BuildStager stager_;
  LastKnownGood last_known_good_;
  HealthWindow health_;
  GenerationSwap swap_;
  ReloadQueue reloads_;
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_PLUGIN_HOST_H_
