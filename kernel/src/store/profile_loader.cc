// SPDX-License-Identifier: Apache-2.0
// ProfileLoader: a profile's load, from the join to loaded or failed, over the store's
// completions (profile_loader.h).
#include "kernel/src/store/profile_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "kernel/src/core/value.h"

namespace molt::kernel::store {

namespace json = boost::json;

ProfileLoader::ProfileLoader(Scheduler& scheduler, Bus& bus, ProfileStore& store, std::string host,
                             ProfileEntries& entries, const ProfileDeclaration& declaration,
                             ProfileBackups& backups, ProfileStats& stats, LogScope log,
                             ProfileKick kick)
    : scheduler_(scheduler),
      bus_(bus),
      store_(store),
      host_(std::move(host)),
      entries_(entries),
      declaration_(declaration),
      backups_(backups),
      stats_(stats),
      log_(std::move(log)),
      kick_(std::move(kick)) {}

void ProfileLoader::Load(net::SessionId session, std::uint32_t attempt) {
  ProfileEntry* e = entries_.Find(session);
  if (e == nullptr) {
    return;
  }
  e->loading = true;
  e->attempt = attempt;
  // The completion's captures fit a Callback's inline storage: no allocation per join.
  store_.Load(e->key, host_,
              std::chrono::duration_cast<std::chrono::milliseconds>(declaration_.spec().lease_ttl),
              [this, alive = std::weak_ptr<bool>(alive_), session](LoadResult r) {
                if (alive.lock()) {
                  OnLoaded(session, std::move(r));
                }
              });
}

void ProfileLoader::RetryWaiting() {
  std::vector<std::pair<net::SessionId, std::uint32_t>> waiting;
  entries_.ForEach([&waiting](ProfileEntry& e) {
    if (!e.loading && e.retry.Cancel()) {
      waiting.emplace_back(e.session, e.attempt + 1);
    }
  });
  for (const auto& [session, attempt] : waiting) {
    Load(session, attempt);
  }
}

void ProfileLoader::Hold(const std::string& key) { releasing_[key]; }

void ProfileLoader::Released(const std::string& key) {
  std::vector<net::SessionId> waiting = std::move(releasing_[key]);
  releasing_.erase(key);
  for (net::SessionId w : waiting) {
    Load(w, 0);
  }
}

void ProfileLoader::OnLoaded(net::SessionId session, LoadResult r) {
  ProfileEntry* e = entries_.Find(session);
  if (e == nullptr) {
    return;
  }
  const std::uint32_t attempt = e->attempt;
  e->loading = false;
  if (LetGoIfGone(*e, r.status, r.record.lease.token)) {
    return;
  }
  if (r.busy()) {
    return WaitForLease(*e, r, attempt);
  }
  if (r.status.code() == Status::Code::kIoError) {
    // The store cannot be reached (a database restarting, a disk error): the session waits with
    // its profile pending and the load is tried again; only what is wrong with the record itself
    // fails it.
    const Duration delay = declaration_.Backoff(attempt);
    log_.Warn("{}; session {} waits with its profile pending, trying again in {:.1f}s",
              r.status.message(), session, ToSeconds(delay));
    return Retry(*e, delay, attempt);
  }
  if (!r.status.ok()) {
    return Fail(session, r.status.message());
  }
  if (!declaration_.attached()) {
    e->parked = std::move(r);  // its migrations and defaults are the next declaration's
    return;
  }
  Open(*e, r.record);
}

bool ProfileLoader::LetGoIfGone(ProfileEntry& e, const Status& load, std::uint64_t token) {
  if (!e.left && !entries_.closing()) {
    return false;
  }
  // The session ended (or the server closes) while it loaded: let the lease go at once.
  if (load.ok()) {
    store_.Write({{.key = e.key, .token = token, .release = true}},
                 [](Status, std::vector<WriteResult>) {});
  }
  entries_.Erase(e.session);
  return true;
}

void ProfileLoader::WaitForLease(ProfileEntry& e, const LoadResult& r, std::uint32_t attempt) {
  ++stats_.lease_waits;
  if (r.holder.owner == host_ && releasing_.count(e.key) != 0) {
    releasing_[e.key].push_back(e.session);  // our own final save: loaded again once it lands
    return;
  }
  const Duration until_expiry =
      std::chrono::milliseconds(std::max<WallMillis>(r.holder.expires - WallNow() + 50, 10));
  const Duration delay = std::min(until_expiry, declaration_.Backoff(attempt));
  log_.Info("{}; session {} waits, trying again in {:.1f}s", r.status.message(), e.session,
            ToSeconds(delay));
  Retry(e, delay, attempt);
}

void ProfileLoader::Retry(ProfileEntry& e, Duration delay, std::uint32_t attempt) {
  e.retry = scheduler_.After(
      delay, [this, session = e.session, attempt] { Load(session, attempt + 1); },
      Priority::kKernel, TaskOrigin::Named("profile load"));
}

void ProfileLoader::Open(ProfileEntry& e, const Record& rec) {
  const ProfileSpec& spec = declaration_.spec();
  e.token = rec.lease.token;
  if (!rec.data) {  // a new profile: the defaults, saved at the next autosave
    return Loaded(e, declaration_.Fresh(), true);
  }
  const std::string where = fmt::format("profile \"{}\" (revision {})", e.key, rec.revision);
  if (rec.schema_version > spec.schema_version) {  // a deploy mismatch: never "restored"
    return Fail(e.session, fmt::format("{} has schema version {}, newer than this build reads "
                                       "({}): deploy the build that wrote it",
                                       where, rec.schema_version, spec.schema_version));
  }
  bool changed = false;
  Result<json::value> doc = declaration_.Decode(*rec.data, rec.schema_version, where, &changed);
  if (!doc.ok()) {
    if (spec.backup_interval > Duration::zero() || spec.mirror) {
      return Restore(e.session, e.token, doc.status().message());
    }
    return Fail(e.session,
                doc.status().message() + ": fix it with the sqlite3 tool (docs/profiles.md)");
  }
  Loaded(e, std::move(doc).value(), changed);
}

void ProfileLoader::Restore(net::SessionId session, std::uint64_t token, std::string why) {
  ProfileEntry* e = entries_.Find(session);
  e->loading = true;         // the session leaving meanwhile is seen when the backups arrive
  std::string reason = why;  // the log's; `why` goes to the backups' errors
  backups_.Restore(e->key, std::move(why),
                   [this, alive = std::weak_ptr<bool>(alive_), session, token,
                    why = std::move(reason)](Result<RestoredDocument> r) {
                     if (alive.lock()) {
                       OnRestored(session, token, why, std::move(r));
                     }
                   });
}

void ProfileLoader::OnRestored(net::SessionId session, std::uint64_t token, const std::string& why,
                               Result<RestoredDocument> r) {
  ProfileEntry* e = entries_.Find(session);
  if (e == nullptr) {
    return;
  }
  e->loading = false;
  if (LetGoIfGone(*e, Status::Ok(), token)) {
    return;
  }
  if (!r.ok()) {
    return Fail(session, r.status().message());
  }
  ++stats_.restored;
  log_.Warn(
      "{}; restored from {}, taken {:.0f} s ago (saved over the bad record at the next "
      "save)",
      why, r->where, static_cast<double>(WallNow() - r->taken) / 1000);
  const Value args[] = {Value::Handle(session), Value::String(declaration_.name()),
                        Value::Int(r->slot), Value::Int(static_cast<std::int64_t>(r->revision))};
  bus_.Publish("Kernel.ProfileRestored", args);
  Loaded(*e, std::move(r->doc), true);  // dirty: the next save replaces the record
}

void ProfileLoader::FinishParked() {
  // Each stays parked until its turn: a ProfileLoaded handler of an earlier one may end a later
  // one's session, whose end then lets go of its lease (ReleaseParked) as for any parked load.
  std::vector<net::SessionId> parked;
  entries_.ForEach([&parked](ProfileEntry& e) {
    if (e.parked) {
      parked.push_back(e.session);
    }
  });
  for (net::SessionId id : parked) {
    ProfileEntry* e = entries_.Find(id);
    if (e == nullptr || !e->parked) {
      continue;  // ended meanwhile
    }
    LoadResult r = std::move(*e->parked);
    e->parked.reset();
    e->attempt = 0;
    OnLoaded(id, std::move(r));
  }
}

void ProfileLoader::ReleaseParked(ProfileEntry& e) {
  if (e.parked && e.parked->status.ok()) {
    store_.Write({{.key = e.key, .token = e.parked->record.lease.token, .release = true}},
                 [](Status, std::vector<WriteResult>) {});
  }
  e.parked.reset();
}

void ProfileLoader::Loaded(ProfileEntry& e, json::value doc, bool changed) {
  e.doc = std::move(doc);
  e.state = ProfileState::kLoaded;
  e.version = changed ? 1 : 0;
  e.saved_version = 0;
  ++stats_.loaded;
  if (e.manual()) {
    if (e.on_load) {
      std::exchange(e.on_load, nullptr)(Status::Ok());
    }
    return;
  }
  const Value args[] = {Value::Handle(e.session), Value::String(declaration_.name())};
  bus_.Publish("Kernel.ProfileLoaded", args);
}

void ProfileLoader::Fail(net::SessionId session, const std::string& why) {
  ProfileEntry* e = entries_.Find(session);
  ++stats_.load_failures;
  e->state = ProfileState::kFailed;
  if (e->manual()) {
    log_.Error("{}", why);
    Callback<void(Status)> done = std::move(e->on_load);
    entries_.Erase(session);
    if (done) {
      done(Status::FailedPrecondition(why));
    }
    return;
  }
  log_.Error("session {}: {}", session, why);
  const Value args[] = {Value::Handle(session), Value::String(declaration_.name()),
                        Value::String(why)};
  bus_.Publish("Kernel.ProfileFailed", args);
  if (declaration_.spec().kick_on_load_failure) {
    kick_(session, "your " + declaration_.name() +
                       " profile could not be loaded; nothing was changed: try again later");
  }
}

}  // namespace molt::kernel::store
