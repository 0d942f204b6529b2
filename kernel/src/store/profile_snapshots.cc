// SPDX-License-Identifier: Apache-2.0
// Profiles' snapshots (profiles.h, "Snapshots"): deep copies of a loaded profile's document in
// memory, the newest Profiles::kSnapshots per profile, for this visit only; a rollback puts one
// back and is saved by the next save, like any write.
//
// These are member functions of Profiles defined in a file of their own, not a class of their
// own: a snapshot is taken of, and rolled back into, the driver's per-profile state (the Entry
// of profile_entry.h: its document, version and transaction mark), the ids are numbered per store,
// and the calls are the driver's API (the ABI's profile_snapshot, profile_rollback). A separate
// class would reach all of it through a back-reference to Profiles: a seam in name only.
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "kernel/src/store/profile_entry.h"
#include "kernel/src/store/profiles.h"

namespace molt::kernel::store {

Result<std::uint64_t> Profiles::Snapshot(net::SessionId session, std::string label) {
  Entry* e = Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is {}: there is nothing to snapshot", spec_.name,
                    session, ProfileStateName(e == nullptr ? ProfileState::kNone : e->state)));
  }
  const std::uint64_t id = next_snapshot_++;
  e->snapshots.emplace_back(SnapshotInfo{id, std::move(label), WallNow()}, e->doc);
  if (e->snapshots.size() > kSnapshots) {
    e->snapshots.erase(e->snapshots.begin());
  }
  return id;
}

Result<std::vector<SnapshotInfo>> Profiles::Snapshots(net::SessionId session) const {
  const Entry* e = Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is not loaded", spec_.name, session));
  }
  std::vector<SnapshotInfo> out;
  for (const auto& [info, doc] : e->snapshots) {
    out.push_back(info);
  }
  return out;
}

Status Profiles::Rollback(net::SessionId session, std::uint64_t id) {
  Entry* e = Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is not loaded", spec_.name, session));
  }
  if (e->in_txn) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is in a transaction: roll back on a later step",
                    spec_.name, session));
  }
  for (const auto& [info, doc] : e->snapshots) {
    if (info.id == id) {
      e->doc = doc;  // a copy: the snapshot stays for another rollback
      ++e->version;
      return Status::Ok();
    }
  }
  return Status::NotFound(fmt::format(
      "snapshot {} of profile \"{}\" is not kept (unknown, or older than the newest {})", id,
      e->key, kSnapshots));
}

}  // namespace molt::kernel::store
