// SPDX-License-Identifier: Apache-2.0
// ProfileBackups: a backup asked for, and the backup a broken record is restored from
// (profile_backups.h).
#include "kernel/src/store/profile_backups.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace molt::kernel::store {

namespace json = boost::json;

ProfileBackups::ProfileBackups(ProfileStore& store, ProfileEntries& entries,
                               const ProfileDeclaration& declaration)
    : store_(store), entries_(entries), declaration_(declaration) {}

Status ProfileBackups::BackupNow(net::SessionId session) {
  ProfileEntry* e = entries_.Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is not loaded", declaration_.name(), session));
  }
  e->backup_now = true;
  return Status::Ok();
}

void ProfileBackups::Restore(const std::string& key, std::string why,
                             Callback<void(Result<RestoredDocument>)> done) {
  store_.ListBackups(key, [this, alive = std::weak_ptr<bool>(alive_), key, why = std::move(why),
                           done = std::move(done)](Result<std::vector<Backup>> backups) mutable {
    if (!alive.lock()) {
      return;
    }
    if (!backups.ok()) {
      return done(Status::IoError(
          why + "; its backups cannot be read either: " + backups.status().message()));
    }
    done(Newest(key, why, *backups));
  });
}

Result<RestoredDocument> ProfileBackups::Newest(const std::string& key, const std::string& why,
                                                const std::vector<Backup>& backups) const {
  for (const Backup& b : backups) {
    std::string where =
        fmt::format("backup slot {} of profile \"{}\" (revision {})", b.slot, key, b.revision);
    bool changed = false;
    Result<json::value> doc = b.schema_version <= declaration_.spec().schema_version
                                  ? declaration_.Decode(b.data, b.schema_version, where, &changed)
                                  : Result<json::value>(Status::FailedPrecondition("newer"));
    if (doc.ok()) {
      return RestoredDocument{std::move(doc).value(), b.slot, b.revision, b.taken,
                              std::move(where)};
    }
  }
  return Status::NotFound(
      fmt::format("{}; no readable backup of it ({} kept): fix the record with "
                  "the sqlite3 tool (docs/profiles.md)",
                  why, backups.size()));
}

}  // namespace molt::kernel::store
