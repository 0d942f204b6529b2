// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_writer.h
//
// ProfileWriter: how a profile store (Profiles, profiles.h) writes to its ProfileStore. It makes
// a profile's write (WriteFor: its document when changed and valid, with the backup schedule and
// the mirror, the lease renewed, or released on a final save), writes batches until the store
// takes them (Persist: a batch the store fails, a full disk, is tried again after the
// declaration's backoff for as long as the writer lives), and stops a profile whose write found
// its lease lost to another host (Lose: the session is kicked with the reason).
//
//   Write w = writer.WriteFor(entry, /*release=*/true);
//   writer.Persist({std::move(w)}, "the final save of profile \"PlayerData/ada\"",
//                  [](std::vector<WriteResult> results) { ... });
//
// Thread safety: the kernel thread; completions come back on it (the store's deliver function).
#ifndef MOLT_KERNEL_STORE_PROFILE_WRITER_H_
#define MOLT_KERNEL_STORE_PROFILE_WRITER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/store/profile_declaration.h"
#include "kernel/src/store/profile_entry.h"
#include "kernel/src/store/profile_store.h"

namespace molt::kernel::store {

class ProfileWriter {
 public:
  ProfileWriter(Scheduler& scheduler, ProfileStore& store, const ProfileDeclaration& declaration,
                ProfileStats& stats, LogScope log, ProfileKick kick);
  ProfileWriter(const ProfileWriter&) = delete;
  ProfileWriter& operator=(const ProfileWriter&) = delete;

  // The write for `e` in a batch: its document when dirty (or a backup is asked for) and valid,
  // a renewal of the lease, or its release (`release`: the final save). A document the gate
  // refuses is not written (counted, logged; the stored revision stays).
  Write WriteFor(ProfileEntry& e, bool release);
  // Writes `batch` and hands `done` its results once it is stored: a batch the store fails is
  // tried again after the backoff, for as long as this object lives. `what` names it in the
  // warnings.
  void Persist(std::vector<Write> batch, std::string what,
               Callback<void(std::vector<WriteResult>)> done);
  // A write refused for a lost lease (`why`): the profile stops for good, and a session's is
  // kicked.
  void Lose(ProfileEntry& e, const Status& why);

 private:
  // A batch being written until it is stored.
  struct Persisting {
    std::vector<Write> batch;
    std::string what;
    Callback<void(std::vector<WriteResult>)> done;
    std::uint32_t attempt = 0;
  };
  void Send(std::shared_ptr<Persisting> job);

  Scheduler& scheduler_;
  ProfileStore& store_;
  const ProfileDeclaration& declaration_;
  ProfileStats& stats_;
  const LogScope log_;
  const ProfileKick kick_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // completions after the end
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_WRITER_H_
