// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/swap_queue.h
//
// SwapQueue: the swaps deploys ask the kernel for, one at a time, in the order asked (a
// deployment's, a pin's or an unpin's). The kernel's side is a function the server installs
// (SwapFn: it posts to the kernel thread and answers from there); each answer comes back to the
// deploy thread, where the job that asked hears it and the next one starts. An answer that
// arrives after the queue is gone (a swap the close outlived) is dropped. Owned by
// deploy::Deploys; Rollouts and Pins enqueue.
//
//   SwapQueue swaps(deploy_thread);
//   swaps.set_swap(kernel_side);  // before the first job
//   swaps.Enqueue({{file, sha, id}, "deploy #12", [](const SwapOutcome& o) { ... }});
//
// Thread safety: Enqueue on the deploy thread; the SwapFn's `done` from any thread.
#ifndef MOLT_KERNEL_DEPLOY_SWAP_QUEUE_H_
#define MOLT_KERNEL_DEPLOY_SWAP_QUEUE_H_

#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "kernel/src/core/serial_thread.h"

namespace molt::kernel::deploy {

// What the kernel did with a build it was asked to serve.
struct SwapOutcome {
  std::string result;  // "swapped", "adopted" (it served already) or "failed"
  std::string reason;  // why it failed
  std::string report;  // the swap report's JSON ("" when adopted)
  // The build itself failed (marked failed here); false for a swap refused at the gate (the
  // server closing, a newer reload).
  bool build_failed = false;
};
// A build for the kernel to serve: its file, the SHA-256 of its manifest, its build id.
struct SwapTarget {
  std::string file;
  std::string sha256;
  std::string build_id;
};
// Serves `target` on the kernel thread (adopted when it serves already); `done` (any thread)
// hears how it went. Installed by the server (Deploys::Start).
using SwapFn = std::function<void(SwapTarget target, std::string reason,
                                  std::function<void(SwapOutcome)> done)>;

class SwapQueue {
 public:
  struct Job {
    SwapTarget target;
    std::string reason;  // the swap report's ("deploy #12", "pin by ana")
    std::function<void(const SwapOutcome&)> finished;  // on the deploy thread
  };

  // `thread`: the deploy thread, which hears every answer.
  explicit SwapQueue(SerialThread& thread) : thread_(thread) {}
  SwapQueue(const SwapQueue&) = delete;
  SwapQueue& operator=(const SwapQueue&) = delete;

  // REQUIRES: before the first Enqueue.
  void set_swap(SwapFn swap) { swap_ = std::move(swap); }
  // Runs `job` once the swaps asked before it finished.
  void Enqueue(Job job);

 private:
  void RunNext();

  SerialThread& thread_;
  SwapFn swap_;
  std::deque<Job> jobs_;  // the first one runs while swapping_
  bool swapping_ = false;
  // Held while this object lives: an answer that comes after it is dropped.
  std::shared_ptr<SwapQueue*> alive_ = std::make_shared<SwapQueue*>(this);
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_SWAP_QUEUE_H_
