// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/plugin_host.h
//
// PluginHost: the plugins of one kernel, as generations (DESIGN.md §6). A generation is the set of
// plugin instances loaded from one build (loader/build.h), named "<build id>#<n>"; each plugin's
// identity is (name, generation).
//
// The boot generation: LoadDirectory() / LoadFiles() / AddStatic() load a set all or nothing (an
// operator sees every problem at once: one line per file, naming the cause and the fix) and
// register each instance with the kernel as a service; Kernel::Start() boots them.
//
// A swap, once the kernel runs: Reload(dir) replaces the serving generation under live clients.
//   1. mount dormant: read the build, load private copies (hashes checked on the copy that is
//      opened), check the descriptors against the manifest and the ABI, order by dependencies,
//      run every init. A dormant instance dispatches nothing (abi/plugin_instance.h). With
//      background staging (moltd), reading and copying run on a thread of their own.
//   2. the swap, on the kernel thread with nothing else running (inbound bytes wait in the
//      sockets, so nothing is refused or lost): export_state of the old generation (an error
//      aborts with the old one serving), then each old instance stops in reverse order (its stop()
//      may still answer pending requests; then everything it holds is released, and a request
//      still pending is refused at once, retryable), then the new generation adopts the kernel's
//      objects (a channel by declaring its name: same id, same token buckets), imports the states,
//      starts in order and sees the live sessions; what nobody adopted is retired.
//   3. after the hold, in later tasks: the libraries of what the swap let go are unloaded (their
//      static destructors run there), then the report is logged and handed to the caller. The
//      hold (SwapReport::hold_ms) is the whole of step 2's task, nothing left out.
//   A mount failure leaves the old generation serving; an import or start failure restores the
//   previous generation from a fresh copy of its libraries, with the state it exported. Either
//   way clients stay connected, and the build is marked failed (failed_builds()).
// Every swap logs one JSON line (SwapReport). RequestReload() runs the same on later scheduler
// steps (mount, then the swap on the next step), never nested in a plugin callback; while one is
// queued or running, a newer request replaces the queued one.
//
// Its parts so far: the generations resident and their loading (generation_set.h), a build
// staged on a thread of its own (build_stager.h), the last known good (last_known_good.h).
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_LOADER_PLUGIN_HOST_H_
#define MOLT_KERNEL_LOADER_PLUGIN_HOST_H_

#include <molt/kernel/status.h>

#include <boost/json/fwd.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/loader/build.h"
#include "kernel/src/loader/build_stager.h"
#include "kernel/src/loader/generation_set.h"
#include "kernel/src/loader/last_known_good.h"
#include "kernel/src/loader/swap_report.h"

namespace molt::kernel::loader {

class PluginHost {
 public:
  using Plugin = loader::Plugin;
  // Most state one plugin may hand to the next generation.
  static constexpr std::size_t kMaxStateBytes = 16 << 20;

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

  // --- Swaps ---
  // Who asks for a reload. A build that failed here (failed_builds()) is never taken again by an
  // automatic trigger (--watch, a plugin's reload_request): it would fail the same way. An
  // operator (SIGHUP, the admin API, a direct Reload()) may retry it.
  enum class Trigger { kOperator, kAutomatic };
  // Replaces the serving generation with the build in `dir` (see the top of this file). Refused
  // before the kernel started, while closing, and from inside a swap (use RequestReload).
  SwapReport Reload(const std::string& dir, const std::string& reason,
                    Trigger trigger = Trigger::kOperator);
  // The two halves of Reload(). Mount() loads and initializes the build in `dir` dormant, beside
  // the serving generation (discarding one mounted earlier); on failure it logs the report and
  // returns why. SwapMounted() swaps the mounted generation in and returns the report; `done`
  // (may be null) hears it in a later task, after its log line.
  Status Mount(const std::string& dir, const std::string& reason,
               Trigger trigger = Trigger::kOperator);
  SwapReport SwapMounted(Callback<void(const SwapReport&)> done = nullptr);
  bool mounted() const { return mounted_ != nullptr; }
  // Reload() on later scheduler steps (the mount on one, the swap on the next, so clients are
  // served between them); `done` (may be null) hears the report. Newest wins. A plugin's
  // reload_request (ABI 1.3) lands here, for the directory the serving generation came from.
  void RequestReload(std::string dir, std::string reason,
                     Callback<void(const SwapReport&)> done = nullptr,
                     Trigger trigger = Trigger::kOperator);
  // RequestReload() stages the build on a thread of its own: reading it (unpacking a build file)
  // and copying and hashing each library, the part of a mount that grows with the build's size,
  // so the kernel thread serves on meanwhile; opening, init and the swap then run there as
  // always. A stage past `deadline` (a stuck disk or network file system) is abandoned: its
  // reload fails naming it, the serving generation serves on, and the next reload may run. Off
  // unless set (staged inline, as a client app's controllers are); moltd sets it.
  static constexpr Duration kStageDeadline = std::chrono::seconds(60);
  void set_background_staging(Duration deadline);
  // Tests only: runs on the staging thread before each background stage, a rollback's among
  // them, and before each last-known-good save off the kernel thread (a file system that hangs
  // cannot be caused for real in a test).
  void set_stage_hook_for_testing(std::function<void()> hook);
  // Refuses every later reload: the server is closing.
  void Close() { closing_ = true; }
  // Bounds the old generation's soft stop (its stop() calls, in reverse order) in a swap: once
  // they took this long together, the rest are halted without their stop() (5 s, the spec's
  // STOP_DEADLINE). With a callback deadline (below), a stop() that runs past what is left of it
  // is abandoned and its instance hard-stopped (the report's hard_stopped names both kinds).
  static constexpr Duration kStopBudget = std::chrono::seconds(5);
  void set_stop_budget(Duration budget) { stop_budget_ = budget; }
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

  // --- The health window ---
  // After a swap the new generation is on probation: when errors attributed to it (failed
  // callbacks, handlers, tasks, crashed processes, exceptions caught at the ABI) reach `errors`
  // within `window` of the swap, the previous build, kept resident meanwhile, is restored
  // (rollback). Once the window passes the old libraries are unloaded and the build becomes the
  // last known good. Defaults 3 errors in 30 s; a manifest may set 1..100 errors and 5..300 s.
  void set_health(std::uint32_t errors, Duration window) {
    health_errors_ = errors;
    health_window_ = window;
  }
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
  bool on_probation() const { return probation_.has_value(); }

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
    swap_listener_ = std::move(listener);
  }
  // Build ids that failed here, each with why: a mount, init, import or start failure of its
  // own, or its health window. Never taken again by an automatic trigger (Trigger); a swap to
  // one that succeeds clears its mark.
  const std::map<std::string, std::string>& failed_builds() const { return failed_builds_; }
  abi::AbiShared& shared() { return shared_; }
  // The "generations" section of the kernel's stats (Kernel::StatsObject, the stats_json slot,
  // the admin API's plugins): the serving generation and its plugins with their error counts,
  // the health window, the resident generations, swaps, rollbacks, failed builds, and the newest
  // kHistory swap reports ("history": newest first, each {"time_ms", "report"}). Both roles
  // render it (moltd and libmolt_client swap generations), so it is rendered here, once.
  boost::json::object StatsObject() const;
  // Swaps that ended with a new generation serving, swaps that did not, health-window rollbacks,
  // and the generations resident (serving, on probation, mounted).
  std::uint64_t swaps() const { return swaps_; }
  std::uint64_t failed_swaps() const { return failures_; }
  std::uint64_t rollbacks() const { return rollbacks_; }
  std::size_t resident_generations() const { return generations_.resident(); }
  // Libraries kept mapped because they could not be unloaded, since the start (each is logged).
  std::size_t retired_libraries() const { return generations_.retired_libraries(); }
  static constexpr std::size_t kHistory = 20;

 private:
  struct Request {
    std::string dir;
    std::string reason;
    Callback<void(const SwapReport&)> done;
    Trigger trigger;
  };
  // The refusal of a reload now, or OK.
  Status Gate() const;
  // Mounts the build in `dir` dormant (r's mount fields); nullptr on failure (r.error).
  // `staged`: what StageBuild() made of `dir` elsewhere; null: staged here.
  std::unique_ptr<Generation> MountBuild(const std::string& dir, SwapReport& r, Trigger trigger,
                                         StagedBuild* staged);
  Status MountFrom(const std::string& dir, const std::string& reason, Trigger trigger,
                   StagedBuild* staged);
  // A generation is mounted, its swap a step away: wakes the callback runner (deadlines only).
  void PrimeForSwap();
  // Records that `build_id` failed here, and why.
  void MarkFailed(const std::string& build_id, const std::string& why);
  // Swaps `g` in for the serving generation (r's swap fields), restoring on failure. A rollback
  // passes `fallback`, the states the target build exported when it was swapped out: an
  // instance that cannot read the failing build's state gets its own back.
  void Swap(std::unique_ptr<Generation> g, SwapReport& r, const States* fallback = nullptr);
  // The health window (see set_health).
  struct Probation {
    Generation* gen = nullptr;
    Generation* previous = nullptr;  // resident until the window passes; null: boot generation
    States previous_states;
    std::uint32_t threshold = 0;
    Duration window{};
    std::uint32_t errors = 0;
    TaskHandle timer;
    bool rolling_back = false;
  };
  void StartProbation(Generation& g, Generation* previous, States previous_states);
  // Ends the window without a verdict (a later swap); returns the previous build, for the caller
  // to let go.
  Generation* DropProbation();
  // A swap begins: the generation on probation stops hearing its errors (a generation being
  // stopped never counts), and the window waits for the swap's outcome.
  void SilenceProbation();
  // A failed swap restored `from`, on probation, as `to`: the window goes on for `to`, with its
  // errors so far, its deadline and the build it would roll back to.
  void ResumeProbation(const Generation& from, Generation& to);
  // Every instance of `g` reports its errors to the window.
  void ListenForErrors(Generation& g);
  // A rollback that waited for a swap in progress runs now.
  void RunPendingRollback();
  void OnError(const Generation* g);
  void PassProbation();
  // The window's rollback: fresh copies of the previous build's libraries staged (off the kernel
  // thread with background staging), then MountRollback().
  void Rollback();
  // Mounts the previous build for the rollback from `staged` (null: staged here; a status: the
  // stage failed), its swap the next step.
  void MountRollback(StagedBuild* staged);
  // SwapMounted(), its hold counted from `held_since`.
  SwapReport SwapMountedSince(TimePoint held_since, Callback<void(const SwapReport&)> done);
  // Drops the mounted generation: it never served.
  void Discard();
  // Makes `g` serve: adopt, import `states`, start, replay. `stage` names how far it got.
  Status Activate(Generation& g, const States& states, std::string* stage);
  // Counts the swap and returns its report; its log line, its place in the history and `done`
  // come in a later task.
  SwapReport Finish(SwapReport& r, Callback<void(const SwapReport&)> done = nullptr);
  void RunQueued();
  void ScheduleQueued();
  // Mounts the build of `req` (from `staged`, or staged here), then swaps it in a later step.
  void MountAndSwap(const std::shared_ptr<Request>& req, StagedBuild* staged);

  Kernel& kernel_;
  abi::AbiShared shared_;
  GenerationSet generations_;  // resident: the serving one, ...
  BuildStager stager_;
  LastKnownGood last_known_good_;
  std::map<std::string, std::string> failed_builds_;  // build id -> why
  std::optional<Probation> probation_;
  bool rollback_pending_ = false;  // the window's rollback waits for a swap in progress
  bool rollback_staging_ = false;  // the window's rollback copies the previous build's libraries
  Duration stop_budget_ = kStopBudget;
  std::uint32_t health_errors_ = 3;
  Duration health_window_ = std::chrono::seconds(30);
  std::unique_ptr<Generation> mounted_;  // dormant, waiting for SwapMounted()
  SwapReport mount_report_;
  // Set when mounted_ is a health-window rollback: the states the target exported when it left.
  std::optional<States> rollback_states_;
  std::optional<Request> queued_;
  bool reload_scheduled_ = false;
  bool staging_ = false;         // a queued request's build is being staged
  std::uint64_t swaps_ = 0;      // that ended with a new generation serving
  std::uint64_t failures_ = 0;   // swaps that did not
  std::uint64_t rollbacks_ = 0;  // health-window rollbacks
  struct SwapRecord {
    std::int64_t time_ms;  // when it ended, Unix time
    SwapReport report;
  };
  std::deque<SwapRecord> history_;  // the newest swap reports, newest first
  bool in_swap_ = false;
  bool closing_ = false;
  Callback<void(const SwapReport&)> swap_listener_;
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_PLUGIN_HOST_H_
