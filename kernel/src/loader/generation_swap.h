// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/generation_swap.h
//
// GenerationSwap: replacing the serving generation under live clients (DESIGN.md §6, "Swap").
//   1. the gate: started, not closing, not inside a swap or a plugin callback (Gate()).
//   2. mount dormant (Mount()): read the build, open private copies (hashes checked on the copy
//      that is opened), check the descriptors against the manifest and the ABI, order by
//      dependencies, run every init. A dormant instance dispatches nothing. What was staged off
//      the kernel thread (build_stager.h) is opened here.
//   3. the swap (SwapMounted()), on the kernel thread with nothing else running (inbound bytes
//      wait in the sockets, so nothing is refused or lost), in named steps: export the old
//      generation's states (an error aborts with the old one serving), stop it in reverse order
//      within the stop budget (its stop() may still answer pending requests; then everything it
//      holds is released), then the new generation adopts the kernel's objects (a channel by
//      declaring its name: same id, same token buckets), imports the states, starts in order and
//      sees the live sessions; what nobody adopted is retired.
//   4. after the hold, in later tasks: the libraries of what the swap let go are unloaded, then
//      the report (swap_report.h) is logged, kept in the history and handed to the caller.
// A mount failure leaves the old generation serving; an import or start failure restores the
// previous generation from fresh copies of its libraries, with the state it exported. Either way
// clients stay connected, and the build is marked failed (failed_builds()). The health window's
// rollback (Rollback()) is a swap too: fresh copies of the previous build mounted in one task
// (staged off the kernel thread with a background stager), swapped in the next.
// The swap asks the health window (health_window.h) to silence, drop, resume or start a window;
// it knows nothing of the plugin host that composes them (plugin_host.h).
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_LOADER_GENERATION_SWAP_H_
#define MOLT_KERNEL_LOADER_GENERATION_SWAP_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/loader/build_stager.h"
#include "kernel/src/loader/generation_set.h"
#include "kernel/src/loader/health_window.h"
#include "kernel/src/loader/swap_report.h"

namespace molt::kernel::loader {

class GenerationSwap {
 public:
  // Most state one plugin may hand to the next generation.
  static constexpr std::size_t kMaxStateBytes = 16 << 20;
  // The old generation's soft stop (its stop() calls, in reverse order): once they took this long
  // together, the rest are halted without their stop() (5 s, the spec's STOP_DEADLINE).
  static constexpr Duration kStopBudget = std::chrono::seconds(5);
  // The swap reports kept in the history (newest first).
  static constexpr std::size_t kHistory = 20;

  // Who asks for a swap. A build that failed here (failed_builds()) is never taken again by an
  // automatic trigger (--watch, a plugin's reload_request): it would fail the same way. An
  // operator (SIGHUP, the admin API, a direct Reload()) may retry it.
  enum class Trigger { kOperator, kAutomatic };

  // One swap report in the history.
  struct Record {
    std::int64_t time_ms;  // when it ended, Unix time
    SwapReport report;
  };

  // The parts it works with, all the owner's: the kernel serving the generations, the instances'
  // shared state (the host layers a swap hands off), the generations resident, the health window
  // it starts, silences, drops and resumes, and the stager of a rollback's copies.
  GenerationSwap(Kernel& kernel, abi::AbiShared& shared, GenerationSet& generations,
                 HealthWindow& health, BuildStager& stager);
  GenerationSwap(const GenerationSwap&) = delete;
  GenerationSwap& operator=(const GenerationSwap&) = delete;

  // The refusal of a swap now, or OK.
  Status Gate() const;
  // Mount() then SwapMounted(), the hold counted from the start of the mount. Refused before the
  // kernel started, while closing, and from inside a swap (use a ReloadQueue).
  SwapReport Reload(const std::string& dir, const std::string& reason, Trigger trigger);
  // Loads and initializes the build in `dir` dormant, beside the serving generation (discarding
  // one mounted earlier), from `staged` when it was staged elsewhere (null: staged here). On
  // failure it finishes the report (TakeMountReport()) and returns why.
  Status Mount(const std::string& dir, const std::string& reason, Trigger trigger,
               StagedBuild* staged = nullptr);
  // The report of the last mount, when it failed (once).
  SwapReport TakeMountReport() { return std::exchange(mount_report_, SwapReport()); }
  // Swaps the mounted generation in and returns the report; `done` (may be null) hears it in a
  // later task, after its log line.
  SwapReport SwapMounted(Callback<void(const SwapReport&)> done = nullptr);
  bool mounted() const { return mounted_ != nullptr; }
  // Drops the mounted generation: it never served.
  void Discard();
  // Counts the swap and returns its report; its log line, its place in the history, the listener
  // and `done` come in a later task.
  SwapReport Finish(SwapReport& r, Callback<void(const SwapReport&)> done = nullptr);

  // The health window's rollback (HealthWindow::Verdicts::rollback): fresh copies of the previous
  // build staged (off the kernel thread with a background stager), mounted, then swapped in a
  // task of its own with "rollback": true, each instance handed the state the failing build
  // exports when it reads that format, else the state it exported itself. Waits while another
  // swap is mounted or running; moot once a later swap replaced the generation it was for.
  void Rollback();

  // Refuses every later swap: the server is closing.
  void Close() { closing_ = true; }
  void set_stop_budget(Duration budget) { stop_budget_ = budget; }
  // Hears every swap's report, after its log line (the rollbacks too).
  void set_listener(Callback<void(const SwapReport&)> listener) { listener_ = std::move(listener); }

  // Build ids that failed here, each with why: a mount, init, import or start failure of its own,
  // or its health window. A swap to one that succeeds clears its mark.
  const std::map<std::string, std::string>& failed_builds() const { return failed_builds_; }
  // Records that `build_id` failed here, and why.
  void MarkFailed(const std::string& build_id, const std::string& why);
  // Swaps that ended with a new generation serving, swaps that did not, health-window rollbacks.
  std::uint64_t swaps() const { return swaps_; }
  std::uint64_t failures() const { return failures_; }
  std::uint64_t rollbacks() const { return rollbacks_; }
  // The newest kHistory reports, newest first.
  const std::deque<Record>& history() const { return history_; }

 private:
  // Mounts the build in `dir` dormant (r's mount fields); nullptr on failure (r.error).
  std::unique_ptr<Generation> MountBuild(const std::string& dir, SwapReport& r, Trigger trigger,
                                         StagedBuild* staged);
  // A generation is mounted, its swap a step away: wakes the callback runner (deadlines only).
  void PrimeForSwap();
  // SwapMounted(), its hold counted from `held_since`.
  SwapReport SwapMountedSince(TimePoint held_since, Callback<void(const SwapReport&)> done);

  // --- The swap's steps ---
  // Swaps `g` in for the serving generation (r's swap fields), restoring on failure. A rollback
  // passes `fallback`, the states the target build exported when it was swapped out.
  void Swap(std::unique_ptr<Generation> g, SwapReport& r, const States* fallback);
  // Each old instance's export_state; nullopt when one failed (the swap is aborted: r.error).
  std::optional<States> ExportStates(const Generation& old, SwapReport& r);
  // A rollback: older code is never handed state it cannot read; it gets what it exported.
  static void KeepReadable(const Generation& g, const States& fallback, States& states);
  // Each layer's handoff begins, then the old generation stops within the stop budget.
  void StopOld(const Generation& old, SwapReport& r);
  // The new generation serves, or on failure the previous build is restored (Restore()).
  // Returns the generation the window kept resident that goes now (null: none).
  Generation* ServeNew(std::unique_ptr<Generation> g, const Generation& old, const States& states,
                       SwapReport& r);
  // Back to the previous build, from fresh copies of its libraries (no static state of a half-run
  // library is reused), with the state it exported.
  Generation* Restore(std::unique_ptr<Generation> g, const Generation& old, const States& states,
                      const Status& why, SwapReport& r);
  // Makes `g` serve: adopt, import `states`, start, replay. `stage` names how far it got.
  Status Activate(Generation& g, const States& states, std::string* stage);
  // Each layer's handoff ends: what nobody adopted is retired; whether a generation serves.
  void EndHandoff(SwapReport& r);

  // --- The health window's rollback ---
  // Mounts the previous build for the rollback from `staged` (null: staged here; a status: the
  // stage failed), its swap the next step.
  void MountRollback(StagedBuild* staged);
  // A rollback that waited for a swap in progress runs now.
  void RunPendingRollback();

  Kernel& kernel_;
  abi::AbiShared& shared_;
  GenerationSet& generations_;
  HealthWindow& health_;
  BuildStager& stager_;
  Duration stop_budget_ = kStopBudget;
  std::map<std::string, std::string> failed_builds_;  // build id -> why
  std::unique_ptr<Generation> mounted_;               // dormant, waiting for SwapMounted()
  SwapReport mount_report_;
  // Set when mounted_ is a health-window rollback: the states the target exported when it left.
  std::optional<States> rollback_states_;
  bool rollback_pending_ = false;  // the window's rollback waits for a swap in progress
  bool rollback_staging_ = false;  // the window's rollback copies the previous build's libraries
  bool in_swap_ = false;
  bool closing_ = false;
  std::uint64_t swaps_ = 0;      // that ended with a new generation serving
  std::uint64_t failures_ = 0;   // swaps that did not
  std::uint64_t rollbacks_ = 0;  // health-window rollbacks
  std::deque<Record> history_;   // the newest swap reports, newest first
  Callback<void(const SwapReport&)> listener_;
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_GENERATION_SWAP_H_
