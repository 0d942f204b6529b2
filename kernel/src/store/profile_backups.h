// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_backups.h
//
// ProfileBackups: a profile store's side of the backups (docs/profiles.md, "Backups"). Taking
// them is the database's: a save carries the schedule (ProfileWriter::WriteFor) and the store
// copies the document in the save's transaction. Here: BackupNow(), which has a loaded profile's
// next save take one, and Restore(), which reads a key's backups, newest first, and picks the
// first that decodes under the declaration in force: what a load whose record does not decode or
// migrate is restored from (ProfileLoader).
//
//   MOLT_RETURN_IF_ERROR(backups.BackupNow(session));
//   backups.Restore("PlayerData/ada", "profile \"PlayerData/ada\" (revision 7) is not valid JSON",
//                   [](Result<RestoredDocument> r) { ... });
//
// Thread safety: the kernel thread; Restore's `done` runs on it (the store's deliver function),
// never after this object is gone.
#ifndef MOLT_KERNEL_STORE_PROFILE_BACKUPS_H_
#define MOLT_KERNEL_STORE_PROFILE_BACKUPS_H_

#include <boost/json/value.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "kernel/src/core/callback.h"
#include "kernel/src/store/profile_declaration.h"
#include "kernel/src/store/profile_entries.h"
#include "kernel/src/store/profile_store.h"

namespace molt::kernel::store {

// The backup a broken record is restored from.
struct RestoredDocument {
  boost::json::value doc;  // decoded: migrated, defaults filled
  int slot = 0;
  std::uint64_t revision = 0;
  WallMillis taken = 0;
  std::string where;  // "backup slot 1 of profile \"PlayerData/ada\" (revision 6)"
};

class ProfileBackups {
 public:
  ProfileBackups(ProfileStore& store, ProfileEntries& entries,
                 const ProfileDeclaration& declaration);
  ProfileBackups(const ProfileBackups&) = delete;
  ProfileBackups& operator=(const ProfileBackups&) = delete;

  // Backs the session's document up at its next save (autosave, SaveAll, the final save);
  // kFailedPrecondition while it is not loaded.
  Status BackupNow(net::SessionId session);
  // The newest backup of `key` that decodes (newer schema versions than the declaration's are
  // passed over), for a load that failed for `why`. The error, when none does or they cannot be
  // read, is the text the load fails with: `why` and the reason.
  void Restore(const std::string& key, std::string why,
               Callback<void(Result<RestoredDocument>)> done);

 private:
  // The first of `backups` (newest first) that decodes, or why none does.
  Result<RestoredDocument> Newest(const std::string& key, const std::string& why,
                                  const std::vector<Backup>& backups) const;

  ProfileStore& store_;
  ProfileEntries& entries_;
  const ProfileDeclaration& declaration_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // completions after the end
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_BACKUPS_H_
