// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/workers/workers_api.h
//
// The workers slots of the host API (ABI 1.6; spec: ActorPool, detached jobs): AttachWorkers()
// adds a layer that runs plugins' jobs on a WorkerPool of its own and hands each result to the
// job's done handler on the kernel thread. Call it before loading plugins; without it the slots
// answer MOLT_ERR_UNSUPPORTED.
//
// What a generation holds here, and what a swap does with it:
//   - done handlers (job_handler) are the instance's: released when it stops;
//   - a job holds its instance and its library (PluginInstance::HoldCode) until no worker runs
//     its function any more, so a swap never unmaps code a worker runs (the swap report names
//     the old instances still held, and the library is unloaded when the last job returns);
//   - a job of an instance that stopped is dropped, counted as such, unless it is detached: then
//     its result goes to the handler of the same name in the plugin's serving instance (a dormant
//     one hears it once it serves), with `inherited` set; none there: dropped, counted.
// While any job runs, every instance's host calls made off the kernel thread take the slow path,
// where a call made from a worker thread is refused (abi/worker_thread.h).
//
// Thread safety: REQUIRES the kernel thread (the slots, stats()).
#ifndef MOLT_KERNEL_WORKERS_WORKERS_API_H_
#define MOLT_KERNEL_WORKERS_WORKERS_API_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/workers/pool.h"

namespace molt::kernel::workers {

struct WorkersOptions {
  std::size_t threads = 0;                      // workers.threads; 0: the cores but one, at least 1
  Duration timeout = std::chrono::seconds(10);  // workers.timeout_seconds: a spec's 0
  std::size_t queue_max = 10000;                // workers.queue_max: jobs waiting, at most
  std::size_t detached_max = 256;               // workers.detached_max: detached jobs at once
};

// The threads a pool gets for `requested` (0: the machine's cores but one, at least 1).
std::size_t WorkerThreads(std::size_t requested);

struct WorkersStats {
  PoolStats pool;
  std::uint64_t handlers = 0;   // done handlers declared now
  std::uint64_t jobs = 0;       // jobs not handed over yet, or still running
  std::uint64_t detached = 0;   // of them, detached
  std::uint64_t delivered = 0;  // results a done handler heard
  std::uint64_t inherited = 0;  // of them, detached results a later generation heard
  std::uint64_t dropped = 0;    // results nobody could hear (their instance stopped)
};

class Workers;

// Adds the layer and installs the slots. The layer is AbiShared's; the reference stays valid as
// long as `shared`.
Workers& AttachWorkers(abi::AbiShared& shared, WorkersOptions options);

class Workers final : public abi::HostLayer {
 public:
  Workers(abi::AbiShared& shared, WorkersOptions options);
  // Closes the pool and waits for the functions running (each within its job's timeout); the
  // holds of jobs whose function still runs past it are kept for good (their libraries stay).
  ~Workers() override;

  void ReleaseOwner(const void* owner) override;
  void Release(const void*, molt_handle_t, std::uint8_t, std::uint32_t) override {}

  // Its snapshot: admin/stats_json.cc renders it as the stats' "workers" section.
  WorkersStats stats() const;
  // Refuses new jobs and cancels those not ended (the server closes): their handlers hear
  // MOLT_ERR_CANCELLED before this returns.
  void Close();

  struct Impl;  // workers_api.cc
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace molt::kernel::workers

#endif  // MOLT_KERNEL_WORKERS_WORKERS_API_H_
