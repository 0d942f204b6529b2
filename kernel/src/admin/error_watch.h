// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/error_watch.h
//
// ErrorWatch (spec §12): warnings and errors deduplicated per window, so a crash loop becomes
// one line with a count instead of a flood. It gates the process-wide Logger: the first
// occurrence of a (scope, message) pair in a window is logged as usual, the repeats are counted
// and dropped, and when the window closes (a kernel-priority task every `window`, 30 s by
// default) each repeated pair is logged once more with its count:
//
//   warn  [Hooks] hook "Intent.fx.Say": handler (priority 100) threw: plugin "fx@b#1": ... (x12 in
//   30 s)
//
// and every pair of the window is published once on Kernel.ScriptError(message, trace, source,
// count): `source` is the scope that logged it (a plugin logs as "<plugin>@<generation>", so the
// error is attributed to both), `trace` is "" (the message already names the throw site).
// Distinct pairs per window are bounded (kMaxKeys); past it entries pass unmerged.
//
// Thread safety: the gate runs on any thread that logs (a mutex); the rest on the kernel thread.
#ifndef MOLT_KERNEL_ADMIN_ERROR_WATCH_H_
#define MOLT_KERNEL_ADMIN_ERROR_WATCH_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/core/scheduler.h"

namespace molt::kernel {
class Kernel;
}  // namespace molt::kernel

namespace molt::kernel::admin {

class ErrorWatch {
 public:
  static constexpr Duration kDefaultWindow = std::chrono::seconds(30);
  static constexpr std::size_t kMaxKeys = 1000;

  struct Entry {
    std::string scope;
    std::string message;
    LogLevel level = LogLevel::kWarn;
    std::uint64_t count = 0;  // occurrences in the window, the first included
    std::chrono::system_clock::time_point first, last;
  };
  struct Counts {
    std::uint64_t warnings = 0;  // every warning logged or merged, since the start
    std::uint64_t errors = 0;
    std::uint64_t merged = 0;  // repeats dropped from the log (counted into a summary line)
  };

  ErrorWatch(Kernel& kernel, Duration window = kDefaultWindow);
  ErrorWatch(const ErrorWatch&) = delete;
  ErrorWatch& operator=(const ErrorWatch&) = delete;
  // Logs the open window's summary lines (nothing merged is lost at exit), then removes the gate.
  ~ErrorWatch();

  // The open window's pairs, then the last closed window's, newest first within each.
  std::vector<Entry> Recent() const;
  Counts counts() const;
  Duration window() const { return window_; }

 private:
  // What the gate touches: shared with it, so a thread inside the gate while the watch is
  // destroyed still finds it.
  struct State {
    std::mutex mu;
    std::map<std::string, Entry> open;  // by scope + '\0' + message
    std::vector<Entry> closed;          // the last closed window
    Counts counts;
  };
  static bool Gate(State& state, const LogEntry& entry);
  // Logs a summary line for each repeated pair; publishes Kernel.ScriptError when `publish`.
  void CloseWindow(bool publish);

  Kernel& kernel_;
  const Duration window_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
  TaskHandle task_;
  Logger::Registration gate_;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_ERROR_WATCH_H_
