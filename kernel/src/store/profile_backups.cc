// SPDX-License-Identifier: Apache-2.0
// Profiles' backups (docs/profiles.md, "Backups"): BackupNow(), which has the next save take one,
// and the restore of a load whose record does not decode or migrate, from the newest backup that
// does. Taking them is the store's: a save carries the schedule (WriteFor, profiles.cc) and the
// store copies the document in the save's transaction (sqlite_db.cc).
//
// These are member functions of Profiles defined in a file of their own, not a class of their
// own: the restore is a step of the driver's load (it runs between OnLoaded and Loaded or Fail,
// with the lease the load took, and decodes with the driver's spec and defaults), and BackupNow
// marks the driver's per-profile state (profile_entry.h). A separate class would reach all of it
// through a back-reference to Profiles: a seam in name only.
#include <fmt/format.h>

#include <boost/json/value.hpp>
#include <utility>
#include <vector>

#include "kernel/src/store/profile_entry.h"
#include "kernel/src/store/profiles.h"

namespace molt::kernel::store {

namespace json = boost::json;

Status Profiles::BackupNow(net::SessionId session) {
  Entry* e = Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is not loaded", spec_.name, session));
  }
  e->backup_now = true;
  return Status::Ok();
}

void Profiles::Restore(net::SessionId session, std::uint64_t token, std::string why) {
  Entry* e = Find(session);
  e->loading = true;  // the session leaving meanwhile is seen when the backups arrive
  store_.ListBackups(e->key, [this, alive = std::weak_ptr<bool>(alive_), session, token,
                              why = std::move(why)](Result<std::vector<Backup>> backups) {
    Entry* e = alive.lock() ? Find(session) : nullptr;
    if (e == nullptr) {
      return;
    }
    e->loading = false;
    if (e->left || draining_) {
      store_.Write({{.key = e->key, .token = token, .release = true}},
                   [](Status, std::vector<WriteResult>) {});
      entries_.erase(session);
      return;
    }
    if (!backups.ok()) {
      return Fail(session,
                  why + "; its backups cannot be read either: " + backups.status().message());
    }
    for (const Backup& b : *backups) {
      const std::string where =
          fmt::format("backup slot {} of profile \"{}\" (revision {})", b.slot, e->key, b.revision);
      bool changed = false;
      Result<json::value> doc = b.schema_version <= spec_.schema_version
                                    ? Decode(b.data, b.schema_version, where, &changed)
                                    : Result<json::value>(Status::FailedPrecondition("newer"));
      if (!doc.ok()) {
        continue;
      }
      ++stats_.restored;
      log_.Warn(
          "{}; restored from {}, taken {:.0f} s ago (saved over the bad record at the next "
          "save)",
          why, where, static_cast<double>(WallNow() - b.taken) / 1000);
      const Value args[] = {Value::Handle(session), Value::String(spec_.name), Value::Int(b.slot),
                            Value::Int(static_cast<std::int64_t>(b.revision))};
      kernel_.bus().Publish("Kernel.ProfileRestored", args);
      return Loaded(*e, std::move(doc).value(), true);  // dirty: the next save replaces the record
    }
    Fail(session, fmt::format("{}; no readable backup of it ({} kept): fix the record with the "
                              "sqlite3 tool (docs/profiles.md)",
                              why, backups->size()));
  });
}

}  // namespace molt::kernel::store
