// SPDX-License-Identifier: Apache-2.0
// ProfileSnapshots: a loaded profile's documents copied and put back (profile_snapshots.h).
#include "kernel/src/store/profile_snapshots.h"

#include <fmt/format.h>

#include <utility>

namespace molt::kernel::store {

ProfileSnapshots::ProfileSnapshots(ProfileEntries& entries, const ProfileDeclaration& declaration)
    : entries_(entries), declaration_(declaration) {}

Result<std::uint64_t> ProfileSnapshots::Take(net::SessionId session, std::string label) {
  ProfileEntry* e = entries_.Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(fmt::format(
        "the {} profile of session {} is {}: there is nothing to snapshot", declaration_.name(),
        session, ProfileStateName(e == nullptr ? ProfileState::kNone : e->state)));
  }
  const std::uint64_t id = next_++;
  e->snapshots.emplace_back(SnapshotInfo{id, std::move(label), WallNow()}, e->doc);
  if (e->snapshots.size() > kKept) {
    e->snapshots.erase(e->snapshots.begin());
  }
  return id;
}

Result<std::vector<SnapshotInfo>> ProfileSnapshots::List(net::SessionId session) const {
  const ProfileEntry* e = entries_.Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is not loaded", declaration_.name(), session));
  }
  std::vector<SnapshotInfo> out;
  for (const auto& [info, doc] : e->snapshots) {
    out.push_back(info);
  }
  return out;
}

Status ProfileSnapshots::Rollback(net::SessionId session, std::uint64_t id) {
  ProfileEntry* e = entries_.Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is not loaded", declaration_.name(), session));
  }
  if (e->in_txn) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is in a transaction: roll back on a later step",
                    declaration_.name(), session));
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
      e->key, kKept));
}

}  // namespace molt::kernel::store
