// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_autosave.h
//
// ProfileAutosave: a profile store's periodic save (Profiles, profiles.h). Every `autosave`
// period, with ±10% jitter so that hosts that booted together do not write together, one batch
// writes every dirty loaded profile and renews every lease. The batch is built a slice at a time
// (kSlice of kernel-thread time per scheduler step: serializing 10,000 documents at once would
// hold the kernel thread for tens of milliseconds), then written. A batch the store fails (a full
// disk) keeps the profiles dirty and is tried again after the backoff; a row refused for a lost
// lease stops that profile (ProfileWriter::Lose). One pass at a time: a Run() while one is under
// way is taken by it.
//
//   autosave.Arm(spec.autosave);     // the first pass in a period
//   autosave.Run();                  // one now (SaveAll)
//   autosave.Stop();                 // the drain takes over
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILE_AUTOSAVE_H_
#define MOLT_KERNEL_STORE_PROFILE_AUTOSAVE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "kernel/src/core/logger.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/store/profile_declaration.h"
#include "kernel/src/store/profile_entries.h"
#include "kernel/src/store/profile_store.h"
#include "kernel/src/store/profile_writer.h"

namespace molt::kernel::store {

class ProfileAutosave {
 public:
  // The kernel-thread time a pass takes per step while it builds its batch.
  static constexpr Duration kSlice = std::chrono::milliseconds(1);

  ProfileAutosave(Scheduler& scheduler, ProfileStore& store, ProfileEntries& entries,
                  const ProfileDeclaration& declaration, ProfileWriter& writer, ProfileStats& stats,
                  LogScope log);
  // Cancels the next pass (a batch with the store is not waited for).
  ~ProfileAutosave();
  ProfileAutosave(const ProfileAutosave&) = delete;
  ProfileAutosave& operator=(const ProfileAutosave&) = delete;

  // The next pass in `delay` (replacing the one armed); nothing once the store closes.
  void Arm(Duration delay);
  // A pass now, unless one is under way (it takes every write made meanwhile).
  void Run();
  // No more passes: the next is cancelled, a batch being built dropped (the drain writes all).
  void Stop();
  // A pass is building its batch (it arms the next once written).
  bool running() const { return pass_ != nullptr; }

 private:
  struct Pass {
    std::vector<net::SessionId> ids;
    std::size_t next = 0;
    std::vector<Write> batch;
    std::vector<std::pair<net::SessionId, std::uint64_t>> sent;  // (session, version written)
  };
  // Builds on the pass for a slice, then writes it (or continues on the next step).
  void Continue();
  void OnWritten(std::vector<std::pair<net::SessionId, std::uint64_t>> sent, Status batch,
                 std::vector<WriteResult> results);

  Scheduler& scheduler_;
  ProfileStore& store_;
  ProfileEntries& entries_;
  const ProfileDeclaration& declaration_;
  ProfileWriter& writer_;
  ProfileStats& stats_;
  const LogScope log_;
  TaskHandle task_;
  std::unique_ptr<Pass> pass_;                                  // the pass building its batch
  std::uint32_t failed_batches_ = 0;                            // in a row: the backoff step
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // completions after the end
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_AUTOSAVE_H_
