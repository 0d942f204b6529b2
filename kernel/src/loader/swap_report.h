// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/swap_report.h
//
// SwapReport: what one generation swap did (DESIGN.md §6: "one JSON swap report per swap"). The
// swap fills it stage by stage (generation_swap.h), logs it as one JSON line, keeps it in the
// swap history and hands it to whoever asked (plugin_host.h). Included by the loader's swap, the
// plugin host and the server's callers of a reload (server/, admin/).
//
// Thread safety: a plain value.
#ifndef MOLT_KERNEL_LOADER_SWAP_REPORT_H_
#define MOLT_KERNEL_LOADER_SWAP_REPORT_H_

#include <boost/json/fwd.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace molt::kernel::loader {

// What one swap did: logged as one JSON line, returned to whoever asked.
struct SwapReport {
  std::string reason;      // "SIGHUP", "test", ...
  std::string build;       // the build id it loaded
  std::string generation;  // the generation it mounted ("" when the mount failed early)
  std::string previous;    // the generation that served before
  std::string serving;     // the generation serving afterwards
  bool ok = false;
  // The last stage reached: gate, mount, export, stop, adopt, import, start, replay, done.
  std::string stage;
  double load_ms = 0;  // read the build, copy, hash, open, check descriptors
  // Of load_ms, what ran off the kernel thread: the read, copies and hashes of a background
  // stage (set_background_staging); 0 when staged on the kernel thread.
  double staged_ms = 0;
  double init_ms = 0;  // every init of the mounted generation
  double stop_ms = 0;  // the old generation's stops and the release of what they held
  // Old instances whose stop() did not run: the soft stop took longer than its bound.
  std::vector<std::string> hard_stopped;
  double swap_ms = 0;  // export through replay
  // The whole time the kernel thread served no one for this swap: from the start of its task
  // (the swap's; a direct Reload()'s, mount included) to the hand-off of this report. What can
  // wait (unloading the old libraries, this report's log line) runs in later tasks of its own.
  double hold_ms = 0;
  std::string error;
  bool restored = false;             // an import or start failure restored the previous one
  bool rollback = false;             // the health window rolled back to the previous build
  std::vector<std::string> retired;  // kernel objects no instance of the new one adopted
  // Old instances whose code still runs on worker threads (their libraries unload afterwards).
  std::vector<std::string> held;
  // The state each plugin handed to its successor (export_state), in boot order: what import_state
  // was given (a plugin that exported nothing is not listed).
  struct Handed {
    std::string plugin;
    std::uint32_t state_version = 0;
    std::size_t bytes = 0;
  };
  std::vector<Handed> handed;
  // The report as one JSON object (the swap's log line, the swap history); Json() serialized.
  // Durations are rounded to the microsecond.
  boost::json::object ToJson() const;
  std::string Json() const;
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_SWAP_REPORT_H_
