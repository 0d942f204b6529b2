// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_final_saves.h
//
// ProfileFinalSaves: how a profile store's profiles end (Profiles, profiles.h). A session's
// final save runs in its last binding (after every ordinary one, so it sees every write a
// plugin made in its own cleanups): one last write with the release of the lease, persisted for
// as long as the store lives, while a rejoin of the same player waits for it (ProfileLoader::Hold).
// A profile still loading is released when its load lands; one in a transaction saves when the
// transaction ends. The drain (the close) does the same for every profile at once, in one batch,
// after the transactions under way: the sessions keep their connection, and their final saves
// later find nothing to do.
//
//   final_saves.FinalSave(session);                              // the session's last binding
//   final_saves.Drain([](std::size_t saved, std::size_t failed) { ... });
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILE_FINAL_SAVES_H_
#define MOLT_KERNEL_STORE_PROFILE_FINAL_SAVES_H_

#include <cstddef>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/store/profile_autosave.h"
#include "kernel/src/store/profile_entries.h"
#include "kernel/src/store/profile_loader.h"
#include "kernel/src/store/profile_transactions.h"
#include "kernel/src/store/profile_writer.h"

namespace molt::kernel::store {

class ProfileFinalSaves {
 public:
  ProfileFinalSaves(ProfileEntries& entries, ProfileLoader& loader, ProfileWriter& writer,
                    ProfileTransactions& transactions, ProfileAutosave& autosave,
                    ProfileStats& stats, LogScope log);
  ProfileFinalSaves(const ProfileFinalSaves&) = delete;
  ProfileFinalSaves& operator=(const ProfileFinalSaves&) = delete;

  // The last write of `session`'s profile and the release of its lease (a failed, lost or
  // never loaded one is only forgotten).
  void FinalSave(net::SessionId session);
  // Final saves of every profile and the release of every lease, in one batch, once no
  // transaction is with the store; `done` hears how many were saved and how many refused.
  // REQUIRES: the entries are closing (ProfileEntries::Close).
  void Drain(Callback<void(std::size_t saved, std::size_t failed)> done);

 private:
  ProfileEntries& entries_;
  ProfileLoader& loader_;
  ProfileWriter& writer_;
  ProfileTransactions& transactions_;
  ProfileAutosave& autosave_;
  ProfileStats& stats_;
  const LogScope log_;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_FINAL_SAVES_H_
