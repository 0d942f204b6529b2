// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_entry.h
//
// ProfileEntry: what a profile store keeps in memory for one profile (a session's, or a manual
// key's): its document, lease token and versions, where its load is, its snapshots, and whether
// a transaction holds it; beside it the states a profile goes through and the counters a store
// keeps. Every part of the driver (Profiles, profiles.h) works on entries, which ProfileEntries
// (profile_entries.h) holds: the loader fills them, the writer and the autosave save them, the
// snapshots and the transactions change them.
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILE_ENTRY_H_
#define MOLT_KERNEL_STORE_PROFILE_ENTRY_H_

#include <boost/json/value.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/net/session.h"
#include "kernel/src/store/profile_store.h"

namespace molt::kernel::store {

enum class ProfileState { kNone, kPending, kLoaded, kFailed, kLost };

inline std::string_view ProfileStateName(ProfileState state) {
  switch (state) {
    case ProfileState::kNone:
      return "none";
    case ProfileState::kPending:
      return "pending";
    case ProfileState::kLoaded:
      return "loaded";
    case ProfileState::kFailed:
      return "failed";
    case ProfileState::kLost:
      return "lost";
  }
  return "?";
}

// A snapshot of a loaded profile (in memory, the newest ProfileSnapshots::kKept per profile).
struct SnapshotInfo {
  std::uint64_t id = 0;
  std::string label;
  WallMillis taken = 0;
};

// The counters of one profile store (Profiles::stats()).
struct ProfileStats {
  std::uint64_t loaded = 0;
  std::uint64_t load_failures = 0;
  std::uint64_t lease_waits = 0;  // loads that found the lease held and waited
  std::uint64_t saves = 0;        // documents written
  std::uint64_t save_failures = 0;
  std::uint64_t refused = 0;       // documents `validate` refused
  std::uint64_t lost = 0;          // leases lost to another host
  std::uint64_t restored = 0;      // loads restored from a backup
  std::uint64_t transactions = 0;  // committed
};

// Ends a session with the reason shown to its player (what Profiles gives its parts:
// Network::Kick).
using ProfileKick = std::function<void(net::SessionId session, std::string reason)>;

// The ids of manual keys (Profiles::LoadKey) start here: never a session's.
inline constexpr net::SessionId kManualKeyIds = net::SessionId{1} << 62;

struct ProfileEntry {
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
  bool manual() const { return session >= kManualKeyIds; }
  bool dirty() const { return version != saved_version; }
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_ENTRY_H_
