// SPDX-License-Identifier: Apache-2.0
// ReloadQueue: requested reloads, newest first, staged, mounted and swapped on later steps.
#include "kernel/src/loader/reload_queue.h"

#include <utility>

namespace molt::kernel::loader {

ReloadQueue::ReloadQueue(Scheduler& scheduler, GenerationSet& generations, GenerationSwap& swap,
                         BuildStager& stager)
    : scheduler_(scheduler), generations_(generations), swap_(swap), stager_(stager) {}

void ReloadQueue::Request(std::string dir, std::string reason, Done done,
                          GenerationSwap::Trigger trigger) {
  if (queued_ && queued_->done) {
    SwapReport superseded;
    superseded.reason = queued_->reason;
    superseded.previous = superseded.serving = generations_.serving().name;
    superseded.stage = "gate";
    superseded.error = "superseded by a newer reload request (" + reason + ")";
    queued_->done(superseded);
  }
  queued_ = Entry{std::move(dir), std::move(reason), std::move(done), trigger};
  Schedule();
}

void ReloadQueue::Schedule() {
  if (queued_ && !scheduled_) {
    scheduled_ = true;
    scheduler_.Schedule([this] { RunQueued(); }, Priority::kKernel, TaskOrigin::Named("reload"));
  }
}

void ReloadQueue::RunQueued() {
  scheduled_ = false;
  if (!queued_ || staging_) {
    return;  // a stage in flight runs the queue when it ends
  }
  auto req = std::make_shared<Entry>(std::move(*queued_));
  queued_.reset();
  if (!stager_.background()) {
    MountAndSwap(req, nullptr);
    return;
  }
  staging_ = true;
  stager_.Run(StageBuildJob(req->dir, generations_.copy_dir(), generations_.CopyPrefix()),
              stager_.deadline(), [this, req](StagedBuild* staged) {
                staging_ = false;
                if (staged != nullptr) {
                  MountAndSwap(req, staged);
                } else {
                  SwapReport r;
                  r.reason = req->reason;
                  r.previous = generations_.serving().name;
                  r.stage = "mount";
                  r.error = BuildStager::Timeout(req->dir, stager_.deadline()) +
                            "; the serving generation serves on";
                  swap_.Finish(r, std::move(req->done));
                }
                Schedule();
              });
}

void ReloadQueue::MountAndSwap(const std::shared_ptr<Entry>& req, StagedBuild* staged) {
  if (!swap_.Mount(req->dir, req->reason, req->trigger, staged).ok()) {
    SwapReport r = swap_.TakeMountReport();
    if (req->done) {
      req->done(r);
    }
    return;
  }
  // Clients are served between the mount and the swap: the swap is a step of its own.
  scheduler_.Schedule([this, req] { swap_.SwapMounted(std::move(req->done)); }, Priority::kKernel,
                      TaskOrigin::Named("reload"));
}

}  // namespace molt::kernel::loader
