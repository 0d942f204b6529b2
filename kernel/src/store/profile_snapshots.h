// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_snapshots.h
//
// ProfileSnapshots: a profile store's snapshots (docs/profiles.md, "Snapshots and
// transactions"): deep copies of a loaded profile's document, kept in memory on its entry for
// this visit only, the newest kKept per profile, with ids that grow per store. A rollback puts
// one back as the document (the snapshot stays for another), saved by the next save like any
// write; a profile in a transaction is not rolled back.
//
//   MOLT_ASSIGN_OR_RETURN(std::uint64_t id, snapshots.Take(session, "before the trade"));
//   MOLT_RETURN_IF_ERROR(snapshots.Rollback(session, id));
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILE_SNAPSHOTS_H_
#define MOLT_KERNEL_STORE_PROFILE_SNAPSHOTS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernel/src/store/profile_declaration.h"
#include "kernel/src/store/profile_entries.h"

namespace molt::kernel::store {

class ProfileSnapshots {
 public:
  // Snapshots kept per profile: taking one more drops the oldest.
  static constexpr std::size_t kKept = 8;

  // `declaration` names the store in errors.
  ProfileSnapshots(ProfileEntries& entries, const ProfileDeclaration& declaration);
  ProfileSnapshots(const ProfileSnapshots&) = delete;
  ProfileSnapshots& operator=(const ProfileSnapshots&) = delete;

  // A deep copy of the session's document; its id. kFailedPrecondition while it is not loaded.
  Result<std::uint64_t> Take(net::SessionId session, std::string label);
  // The snapshots kept, oldest first.
  Result<std::vector<SnapshotInfo>> List(net::SessionId session) const;
  // Puts snapshot `id` back as the document; kNotFound for an evicted or unknown id,
  // kFailedPrecondition while the profile is not loaded or is in a transaction.
  Status Rollback(net::SessionId session, std::uint64_t id);

 private:
  ProfileEntries& entries_;
  const ProfileDeclaration& declaration_;
  std::uint64_t next_ = 1;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_SNAPSHOTS_H_
