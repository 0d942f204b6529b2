// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/worker_thread.h
//
// WorkerThread: marks the thread a plugin's worker job runs on (workers/workers_api.h) for as
// long as the job's function runs. A host call from there is refused (MOLT_ERR_STATE) without
// touching anything: plugin state and kernel state belong to the kernel thread. Only log,
// log_enabled and last_error work there; last_error then reads the refusal.
//
// While jobs are out, the workers layer sets every instance's gate (AbiShared::BeginWorkerJobs):
// a call from another thread than the kernel's takes Guard's slow path, which asks
// OnWorkerThread().
#ifndef MOLT_KERNEL_ABI_WORKER_THREAD_H_
#define MOLT_KERNEL_ABI_WORKER_THREAD_H_

namespace molt::kernel::abi {

inline thread_local bool t_on_worker_thread = false;

class WorkerThread {
 public:
  WorkerThread() { t_on_worker_thread = true; }
  ~WorkerThread() { t_on_worker_thread = false; }
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;
};

inline bool OnWorkerThread() { return t_on_worker_thread; }

// What last_error(ctx) reads on a worker thread.
inline constexpr char kWorkerThreadRefusal[] =
    "host call from a worker thread: a job's function may only compute (log, log_enabled and "
    "last_error excepted); return its result and act on it in the job's done handler";

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_WORKER_THREAD_H_
