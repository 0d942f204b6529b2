// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_entry.h
//
// Profiles::Entry: the state the driver keeps for one profile (a session's, or a manual key's):
// its document, lease token and versions, where its load is, its snapshots, and whether a
// transaction holds it. The driver's member functions are defined in several files, one per job
// (profiles.h says which); each of them works on this state, so it is declared here, once, for
// those files only. Nothing outside kernel/src/store/profile*.cc includes it.
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILE_ENTRY_H_
#define MOLT_KERNEL_STORE_PROFILE_ENTRY_H_

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernel/src/store/profiles.h"

namespace molt::kernel::store {

struct Profiles::Entry {
  net::SessionId session = 0;
  std::string key;
  ProfileState state = ProfileState::kPending;
  boost::json::value doc;
  std::uint64_t token = 0;           // the lease's
  std::uint64_t version = 0;         // bumped by every change
  std::uint64_t saved_version = 0;   // the version the store holds
  bool loading = false;              // a load is with the store
  bool left = false;                 // the session ended while its profile was loading
  TaskHandle retry;                  // the next load attempt while the lease is held elsewhere
  std::uint32_t attempt = 0;         // of the load under way (its backoff)
  std::optional<LoadResult> parked;  // landed while detached: finished by Adopt()
  std::optional<Status> verdict;     // validate's, kept at Detach() for `verdict_version`
  std::uint64_t verdict_version = 0;
  bool backup_now = false;       // the next save also backs the document up
  bool in_txn = false;           // a transaction on it is with the store
  bool leave_after_txn = false;  // the session ended meanwhile: its final save waits
  // Oldest first. A vector, not a deque: libstdc++'s deque allocates 576 bytes when it is made,
  // and every session's entry has this member, snapshots or not.
  std::vector<std::pair<SnapshotInfo, boost::json::value>> snapshots;
  Callback<void(Status)> on_load;  // a manual key's LoadKey: told once it is loaded or failed
  bool manual() const { return session >= kKeyIds; }
  bool dirty() const { return version != saved_version; }
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_ENTRY_H_
