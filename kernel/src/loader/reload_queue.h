// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/reload_queue.h
//
// ReloadQueue: reloads asked for while the kernel runs (SIGHUP, --watch, the admin API, a
// plugin's reload_request), run on later scheduler steps, never nested in a plugin callback: the
// build staged (on a thread of its own with a background stager, build_stager.h), mounted on one
// step, swapped on the next (generation_swap.h), so clients are served between them. One request
// waits at a time: a newer one replaces it (newest wins), and the replaced one's caller hears a
// report saying it was superseded. Used by the plugin host (plugin_host.h).
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_LOADER_RELOAD_QUEUE_H_
#define MOLT_KERNEL_LOADER_RELOAD_QUEUE_H_

#include <memory>
#include <optional>
#include <string>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/loader/build_stager.h"
#include "kernel/src/loader/generation_set.h"
#include "kernel/src/loader/generation_swap.h"
#include "kernel/src/loader/swap_report.h"

namespace molt::kernel::loader {

class ReloadQueue {
 public:
  using Done = Callback<void(const SwapReport&)>;

  ReloadQueue(Scheduler& scheduler, GenerationSet& generations, GenerationSwap& swap,
              BuildStager& stager);
  ReloadQueue(const ReloadQueue&) = delete;
  ReloadQueue& operator=(const ReloadQueue&) = delete;

  // Swaps in the build in `dir` on later steps; `done` (may be null) hears the report. Replaces
  // a request still waiting (its `done` hears it was superseded).
  void Request(std::string dir, std::string reason, Done done,
               GenerationSwap::Trigger trigger = GenerationSwap::Trigger::kOperator);
  // A request waits, or its build is being staged.
  bool busy() const { return queued_.has_value() || staging_; }

 private:
  struct Entry {
    std::string dir;
    std::string reason;
    Done done;
    GenerationSwap::Trigger trigger;
  };
  void Schedule();
  void RunQueued();
  // Mounts the build of `req` (from `staged`, or staged here), then swaps it in a later step.
  void MountAndSwap(const std::shared_ptr<Entry>& req, StagedBuild* staged);

  Scheduler& scheduler_;
  GenerationSet& generations_;
  GenerationSwap& swap_;
  BuildStager& stager_;
  std::optional<Entry> queued_;
  bool scheduled_ = false;
  bool staging_ = false;  // a queued request's build is being staged
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_RELOAD_QUEUE_H_
