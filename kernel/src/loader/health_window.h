// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/health_window.h
//
// HealthWindow: a new generation's probation (DESIGN.md §6, "Health window"). After a swap the
// new generation serves on probation with the previous one resident behind it: errors attributed
// to it (failed callbacks, handlers, tasks, crashed processes, exceptions caught at the ABI: each
// instance's error listener) are counted, and at the threshold (the build's manifest, else the
// host's defaults: 3 within 30 s) the window's verdict is a rollback, which its owner runs in a
// kernel task of its own, never inside the failing callback. A window that passes lets the
// previous generation go and, unless a rollback was due, hands the generation on to be kept as
// the last known good. Errors of any other generation never count, nor those of a generation
// being stopped. The window knows no swap: its owner (plugin_host.h) wires its verdicts to the
// swap (generation_swap.h), the generation set (generation_set.h) and the last known good.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_LOADER_HEALTH_WINDOW_H_
#define MOLT_KERNEL_LOADER_HEALTH_WINDOW_H_

#include <cstdint>
#include <optional>
#include <string>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/loader/generation_set.h"

namespace molt::kernel::loader {

class HealthWindow {
 public:
  // What the window's verdicts call, on the kernel thread.
  struct Verdicts {
    // The errors reached the threshold and a previous build is resident: runs in a kernel task
    // of its own (the window's verdict stays due until TakeRollback()).
    Callback<void()> rollback;
    // The window passed: the generation it kept resident (null: none) may go.
    Callback<void(Generation* previous)> let_go;
    // The window passed with no rollback due: the generation is good (the last known good).
    Callback<void(const Generation& good)> passed;
  };
  // What a window whose verdict is a rollback hands over (TakeRollback()).
  struct Failed {
    Generation* bad = nullptr;       // the generation on probation
    Generation* previous = nullptr;  // the generation to roll back to, still resident
    States previous_states;          // what `previous` exported when it was swapped out
    std::uint32_t errors = 0;
    Duration window{};
  };

  HealthWindow(Scheduler& scheduler, Verdicts verdicts);
  HealthWindow(const HealthWindow&) = delete;
  HealthWindow& operator=(const HealthWindow&) = delete;

  // The threshold and window of a generation whose manifest sets none (3 errors in 30 s unless
  // set).
  void set_defaults(std::uint32_t errors, Duration window) {
    default_errors_ = errors;
    default_window_ = window;
  }

  // Starts `g`'s window: `previous` (null: none, as for the boot generation) stays resident until
  // it ends, with `previous_states`, what it exported when `g` replaced it.
  void Start(Generation& g, Generation* previous, States previous_states);
  // A generation is on probation.
  bool active() const { return probation_.has_value(); }
  // Its errors so far (0 when none is on probation).
  std::uint32_t errors() const { return probation_ ? probation_->errors : 0; }
  // The generation on probation, or null.
  const Generation* generation() const { return probation_ ? probation_->gen : nullptr; }
  // The generation the window would roll back to, or null.
  const Generation* previous() const { return probation_ ? probation_->previous : nullptr; }

  // A swap begins: the generation on probation stops hearing its errors (a generation being
  // stopped never counts), and the window waits for the swap's outcome.
  void Silence();
  // Ends the window without a verdict (a later swap serves); returns the previous generation,
  // for the caller to let go.
  Generation* Drop();
  // A failed swap restored `from`, on probation, as `to`: the window goes on for `to`, with its
  // errors so far, its deadline and the generation it would roll back to.
  void Resume(const Generation& from, Generation& to);

  // The verdict is a rollback, still due: no later swap replaced the generation it was for.
  bool rollback_due() const { return probation_ && probation_->rolling_back; }
  // The verdict is in: the window cannot pass any more (its timer is cancelled).
  void StopTimer();
  // Ends a window whose rollback is due and hands over what the rollback needs.
  // REQUIRES: rollback_due().
  Failed TakeRollback();
  // Ends the window, no verdict, nothing let go (the host unloads everything).
  void Clear();

 private:
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
  // Every instance of `g` reports its errors to the window.
  void ListenForErrors(Generation& g);
  // No instance of `g` reports to the window any more.
  static void StopListening(const Generation& g);
  void OnError(const Generation* g);
  void Pass();

  Scheduler& scheduler_;
  Verdicts verdicts_;
  std::uint32_t default_errors_ = 3;
  Duration default_window_ = std::chrono::seconds(30);
  std::optional<Probation> probation_;
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_HEALTH_WINDOW_H_
