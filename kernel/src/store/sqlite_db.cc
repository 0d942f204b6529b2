// SPDX-License-Identifier: Apache-2.0
// SqliteDb: the SQL of the profile store on its file (sqlite_profile_file.h). Statements are
// prepared once, at Open(); a load and a batch are each one BEGIN IMMEDIATE transaction.
#include "kernel/src/store/sqlite_db.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <iterator>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "kernel/src/store/sqlite_prepared.h"

namespace molt::kernel::store {

SqliteDb::SqliteDb(std::string path, SqliteOptions options)
    : file_(std::move(path), std::move(options)) {}

SqliteDb::~SqliteDb() = default;  // the statements first, then the file (declared before them)

Status SqliteDb::Open() {
  MOLT_RETURN_IF_ERROR(file_.Open());
  return Prepare();
}

void SqliteDb::Checkpoint(bool idle) { file_.Checkpoint(idle); }

void SqliteDb::SetMaxPageCount(std::uint32_t pages) { file_.SetMaxPageCount(pages); }

LoadResult SqliteDb::Load(const std::string& key, const std::string& owner,
                          std::chrono::milliseconds ttl) {
  LoadResult r;
  if (Status s = file_.Begin(); !s.ok()) {
    r.status = s.Prefixed(fmt::format("profile \"{}\": load", key));
    return r;
  }
  r = Acquire(key, owner, ttl, file_.now());
  if (r.status.ok()) {
    r.status = file_.Commit(fmt::format("profile \"{}\": load", key));
    if (!r.status.ok()) {
      r.record = Record{};
    }
  } else {
    r.status = file_.Rollback(std::move(r.status));  // busy too: the transaction ends either way
  }
  return r;
}

std::vector<LoadResult> SqliteDb::LoadMany(const std::vector<LoadArgs>& loads) {
  std::vector<LoadResult> out;
  if (file_.Begin().ok()) {
    const WallMillis now = file_.now();
    out.resize(loads.size());
    bool failed = false;
    for (std::size_t first = 0; first < loads.size() && !failed; first += kChunk) {
      const std::span<const LoadArgs> chunk(loads.data() + first,
                                            std::min(kChunk, loads.size() - first));
      failed = !AcquireChunk(chunk, now, out.data() + first).ok();
    }
    if (!failed &&
        std::all_of(out.begin(), out.end(),
                    [](const LoadResult& r) { return r.status.ok() || r.busy(); }) &&
        file_.Commit("loading profiles").ok()) {
      return out;
    }
    (void)file_.Rollback(Status::Ok());
  }
  out.clear();
  for (const LoadArgs& l : loads) {
    out.push_back(Load(l.key, l.owner, l.ttl));
  }
  return out;
}

Status SqliteDb::Write(const std::vector<store::Write>& batch, std::vector<WriteResult>& results) {
  results.assign(batch.size(), WriteResult{});
  if (Status s = file_.Begin(); !s.ok()) {
    return s.Prefixed("saving profiles");
  }
  const WallMillis now = file_.now();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (Status s = WriteOne(batch[i], now, results[i]); !s.ok()) {
      return FailAll(file_.Rollback(std::move(s)), results);
    }
  }
  return FailAll(file_.Commit("saving profiles"), results);
}

Status SqliteDb::Transact(const std::string& id, const std::vector<store::Write>& batch,
                          std::vector<WriteResult>& results) {
  results.assign(batch.size(), WriteResult{});
  const std::string what = fmt::format("transaction \"{}\"", id);
  if (Status s = file_.Begin(); !s.ok()) {
    return FailAll(s.Prefixed(what), results);
  }
  const WallMillis now = file_.now();
  std::string keys;
  for (const store::Write& w : batch) {
    keys += (keys.empty() ? "" : " ") + w.key;
  }
  const int rc = txn_->Bind(id, keys, now).Step();
  txn_->Reset();
  if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT) {
    return FailAll(file_.Rollback(Status::AlreadyExists(
                       fmt::format("{} was already committed: a replay is refused", what))),
                   results);
  }
  if (rc != SQLITE_DONE) {
    return FailAll(file_.Rollback(file_.Failure(rc, what)), results);
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (Status s = WriteOne(batch[i], now, results[i]); !s.ok()) {
      return FailAll(file_.Rollback(std::move(s)), results);
    }
    if (!results[i].status.ok()) {  // a lost lease: nothing of the transaction is stored
      return FailAll(file_.Rollback(results[i].status), results);
    }
  }
  return FailAll(file_.Commit(what), results);
}

Result<std::vector<Backup>> SqliteDb::Backups(const std::string& key) {
  std::vector<Backup> out;
  SqlitePrepared& st = backups_->Bind(key);
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    out.push_back(Backup{static_cast<int>(st.Int(0)), st.Text(1),
                         static_cast<std::uint32_t>(st.Int(2)),
                         static_cast<std::uint64_t>(st.Int(3)), st.Int(4)});
  }
  st.Reset();
  if (rc != SQLITE_DONE) {
    return file_.Failure(rc, fmt::format("reading the backups of profile \"{}\"", key));
  }
  return out;
}

Result<Record> SqliteDb::Read(const std::string& key) {
  Result<std::optional<Record>> row = Select(key);
  if (!row.ok()) {
    return row.status().Prefixed(fmt::format("reading profile \"{}\"", key));
  }
  if (!row->has_value()) {
    return Status::NotFound(fmt::format("no profile \"{}\" in {}", key, file_.path()));
  }
  return std::move(**row);
}

Result<std::vector<std::pair<std::string, std::size_t>>> SqliteDb::ReleaseAbandoned(
    const ProfileStore::Abandoned& abandoned) {
  const std::string what = "ending the leases of servers that are gone";
  if (Status s = file_.Begin(); !s.ok()) {
    return s.Prefixed(what);
  }
  std::vector<std::pair<std::string, std::size_t>> ended;
  {
    SqlitePrepared owners;
    int rc = owners.Prepare(file_.handle(),
                            "SELECT lease_owner, COUNT(*) FROM profiles WHERE lease_owner IS NOT "
                            "NULL AND lease_expires_ms > ?1 GROUP BY lease_owner");
    if (rc != SQLITE_OK) {
      return file_.Rollback(file_.Failure(rc, what));
    }
    owners.Bind(file_.now());
    while ((rc = owners.Step()) == SQLITE_ROW) {
      if (std::string owner = owners.Text(0); abandoned(owner)) {
        ended.emplace_back(std::move(owner), static_cast<std::size_t>(owners.Int(1)));
      }
    }
    if (rc != SQLITE_DONE) {
      return file_.Rollback(file_.Failure(rc, what));
    }
  }
  SqlitePrepared end;
  int rc = end.Prepare(file_.handle(),
                       "UPDATE profiles SET lease_owner = NULL, lease_expires_ms = 0 WHERE "
                       "lease_owner = ?1");
  if (rc != SQLITE_OK) {
    return file_.Rollback(file_.Failure(rc, what));
  }
  for (const auto& [owner, count] : ended) {
    if ((rc = end.Bind(owner).Step()) != SQLITE_DONE) {
      return file_.Rollback(file_.Failure(rc, what));
    }
  }
  MOLT_RETURN_IF_ERROR(file_.Commit(what));
  return ended;
}

Status SqliteDb::WriteOne(const store::Write& w, WallMillis now, WriteResult& result) {
  SqlitePrepared& st = *write_;
  st.Bind(w.key, w.token, w.data, static_cast<std::int64_t>(w.data ? 1 : 0), w.schema_version,
          w.renew_until, static_cast<std::int64_t>(w.release ? 1 : 0), now);
  const int rc = st.Step();
  if (rc == SQLITE_DONE) {
    st.Reset();
    result.status = LeaseLost(w.key, w.token);
    return Status::Ok();
  }
  if (rc != SQLITE_ROW) {
    st.Reset();
    return file_.Failure(rc, fmt::format("saving profile \"{}\"", w.key));
  }
  result.revision = static_cast<std::uint64_t>(st.Int(0));
  const WallMillis backup_at = st.Int(1);
  st.Reset();
  if (!w.data) {
    return Status::Ok();
  }
  if (w.mirror) {
    MOLT_RETURN_IF_ERROR(PutBackup(w, kMirrorSlot, result.revision, now));
  }
  if (w.backup_every > 0 && (w.backup_now || now >= backup_at)) {
    MOLT_RETURN_IF_ERROR(PutBackup(w, OldestSlot(w.key), result.revision, now));
    const int rc2 = backup_at_->Bind(w.key, now + w.backup_every).Step();
    backup_at_->Reset();
    if (rc2 != SQLITE_DONE) {
      return file_.Failure(rc2, fmt::format("scheduling the backup of profile \"{}\"", w.key));
    }
  }
  return Status::Ok();
}

int SqliteDb::OldestSlot(const std::string& key) {
  WallMillis taken[kBackupSlots];
  std::fill(std::begin(taken), std::end(taken), -1);
  SqlitePrepared& st = backup_slots_->Bind(key);
  while (st.Step() == SQLITE_ROW) {
    if (const std::int64_t slot = st.Int(0); slot >= 0 && slot < kBackupSlots) {
      taken[slot] = st.Int(1);
    }
  }
  st.Reset();
  return static_cast<int>(std::min_element(std::begin(taken), std::end(taken)) - std::begin(taken));
}

Status SqliteDb::PutBackup(const store::Write& w, int slot, std::uint64_t revision,
                           WallMillis now) {
  const int rc = backup_put_->Bind(w.key, slot, *w.data, w.schema_version, revision, now).Step();
  backup_put_->Reset();
  return rc == SQLITE_DONE ? Status::Ok()
                           : file_.Failure(rc, fmt::format("backing up profile \"{}\"", w.key));
}

LoadResult SqliteDb::Acquire(const std::string& key, const std::string& owner,
                             std::chrono::milliseconds ttl, WallMillis now) {
  LoadResult r;
  Result<std::optional<Record>> row = Select(key);
  if (!row.ok()) {
    r.status = row.status().Prefixed(fmt::format("profile \"{}\": load", key));
    return r;
  }
  const bool exists = row->has_value();
  Record& rec = r.record;
  if (exists) {
    rec = std::move(**row);
  }
  rec.key = key;
  if (exists && Held(rec.lease, now)) {
    return LeasedElsewhere(key, rec.lease);
  }
  rec.lease = Lease{owner, rec.lease.token + 1, now + ttl.count()};
  rec.updated = now;
  const int rc = (exists ? acquire_ : insert_)
                     ->Bind(key, owner, rec.lease.token, rec.lease.expires, now)
                     .Step();
  if (rc != SQLITE_DONE) {
    r.record = Record{};
    r.status = file_.Failure(rc, fmt::format("profile \"{}\": taking the lease", key));
  }
  return r;
}

Result<std::optional<Record>> SqliteDb::Select(const std::string& key) {
  SqlitePrepared& select = *select_;
  select.Bind(key);
  const int rc = select.Step();
  if (rc == SQLITE_DONE) {
    select.Reset();
    return std::optional<Record>();
  }
  if (rc != SQLITE_ROW) {
    select.Reset();
    return file_.Failure(rc, "selecting the row");
  }
  Record rec;
  rec.key = key;
  ReadRow(select, rec);
  select.Reset();
  return std::optional<Record>(std::move(rec));
}

// The columns of kRowColumns, in their order, into `rec` (all but the key).
void SqliteDb::ReadRow(const SqlitePrepared& st, Record& rec) {
  if (!st.Null(0)) {
    rec.data = st.Text(0);
  }
  rec.schema_version = static_cast<std::uint32_t>(st.Int(1));
  rec.revision = static_cast<std::uint64_t>(st.Int(2));
  rec.lease.owner = st.Text(3);
  rec.lease.token = static_cast<std::uint64_t>(st.Int(4));
  rec.lease.expires = st.Int(5);
  rec.updated = st.Int(6);
}

Status SqliteDb::AcquireChunk(std::span<const LoadArgs> loads, WallMillis now, LoadResult* out) {
  // One statement of each kind serves the chunk when its loads share the owner and the lease
  // time and no key comes twice (one statement cannot take a key's lease and then see it taken);
  // otherwise each load is taken in turn by Acquire(), in this same transaction.
  bool together = true;
  for (std::size_t i = 0; i < loads.size() && together; ++i) {
    together = loads[i].owner == loads[0].owner && loads[i].ttl == loads[0].ttl;
    for (std::size_t j = 0; j < i && together; ++j) {
      together = loads[j].key != loads[i].key;
    }
  }
  if (!together) {
    for (std::size_t i = 0; i < loads.size(); ++i) {
      out[i] = Acquire(loads[i].key, loads[i].owner, loads[i].ttl, now);
      if (!out[i].status.ok() && !out[i].busy()) {
        return out[i].status;
      }
    }
    return Status::Ok();
  }

  std::vector<const std::string*> keys;
  keys.reserve(loads.size());
  for (const LoadArgs& l : loads) {
    keys.push_back(&l.key);
  }
  std::vector<bool> exists(loads.size(), false);
  SqlitePrepared& select = select_many_->BindKeys(1, keys);
  int rc;
  while ((rc = select.Step()) == SQLITE_ROW) {
    const std::string_view key = select.TextView(kRowColumns);
    for (std::size_t i = 0; i < loads.size(); ++i) {
      if (!exists[i] && loads[i].key == key) {
        exists[i] = true;
        ReadRow(select, out[i].record);
        break;
      }
    }
  }
  select.Reset();
  if (rc != SQLITE_DONE) {
    return file_.Failure(rc, "selecting the rows of a burst of loads");
  }

  const std::string& owner = loads[0].owner;
  const WallMillis expires = now + loads[0].ttl.count();
  std::vector<const std::string*> renewed, created;
  for (std::size_t i = 0; i < loads.size(); ++i) {
    Record& rec = out[i].record;
    if (exists[i] && Held(rec.lease, now)) {
      out[i] = LeasedElsewhere(loads[i].key, rec.lease);
      continue;
    }
    (exists[i] ? renewed : created).push_back(&loads[i].key);
    rec.key = loads[i].key;
    rec.lease = Lease{owner, rec.lease.token + 1, expires};
    rec.updated = now;
  }
  // Both statements take the key's lease as Acquire() does: token + 1 (1 for a new row).
  for (auto [st, list] :
       {std::pair{acquire_many_.get(), &renewed}, {insert_many_.get(), &created}}) {
    if (list->empty()) {
      continue;
    }
    rc = st->Bind(owner, expires, now).BindKeys(4, *list).Step();
    st->Reset();
    if (rc != SQLITE_DONE) {
      return file_.Failure(rc, "taking the leases of a burst of loads");
    }
    if (file_.changes() != static_cast<int>(list->size())) {
      return Status::Internal(fmt::format(
          "taking the leases of a burst of loads changed {} rows where {} were expected",
          file_.changes(), list->size()));
    }
  }
  return Status::Ok();
}

Status SqliteDb::Prepare() {
  // A load reads kRowColumns columns; a burst's statements take kChunk keys each (?1.. for the
  // select; ?4.. after the owner, the expiry and the time for the two that take leases).
  constexpr const char* kRow =
      "SELECT data, schema_version, revision, COALESCE(lease_owner, ''), lease_token, "
      "lease_expires_ms, updated_ms";
  // "?4, ?5, ..." (or "(?4), (?5), ...", rows of VALUES): kChunk parameters from ?first.
  const auto params = [](std::size_t first, const char* each) {
    std::string out;
    for (std::size_t i = 0; i < kChunk; ++i) {
      out += fmt::format(fmt::runtime(each), i == 0 ? "" : ", ", first + i);
    }
    return out;
  };
  const std::string in = params(4, "{}?{}");
  const std::string rows = params(4, "{}(?{})");
  const std::string select = fmt::format("{} FROM profiles WHERE key = ?1", kRow);
  const std::string select_many =
      fmt::format("{}, key FROM profiles WHERE key IN ({})", kRow, params(1, "{}?{}"));
  const std::string acquire_many = fmt::format(
      "UPDATE profiles SET lease_owner = ?1, lease_token = lease_token + 1, lease_expires_ms = "
      "?2, updated_ms = ?3 WHERE key IN ({})",
      in);
  const std::string insert_many = fmt::format(
      "INSERT INTO profiles (key, data, schema_version, revision, lease_owner, lease_token, "
      "lease_expires_ms, updated_ms) SELECT column1, NULL, 0, 0, ?1, 1, ?2, ?3 FROM (VALUES {}) "
      "WHERE column1 IS NOT NULL",
      rows);
  struct {
    std::unique_ptr<SqlitePrepared>* into;
    const char* sql;
  } const list[] = {
      {&select_, select.c_str()},
      {&select_many_, select_many.c_str()},
      {&acquire_many_, acquire_many.c_str()},
      {&insert_many_, insert_many.c_str()},
      {&acquire_,
       "UPDATE profiles SET lease_owner = ?2, lease_token = ?3, lease_expires_ms = ?4, "
       "updated_ms = ?5 WHERE key = ?1"},
      {&insert_,
       "INSERT INTO profiles (key, data, schema_version, revision, lease_owner, lease_token, "
       "lease_expires_ms, updated_ms) VALUES (?1, NULL, 0, 0, ?2, ?3, ?4, ?5)"},
      // One write: conditional on the lease token (and on the lease still being held).
      {&write_,
       "UPDATE profiles SET "
       "data = CASE WHEN ?4 THEN ?3 ELSE data END, "
       "schema_version = CASE WHEN ?4 THEN ?5 ELSE schema_version END, "
       "revision = revision + ?4, "
       "lease_expires_ms = CASE WHEN ?7 THEN 0 WHEN ?6 > 0 THEN ?6 ELSE lease_expires_ms END, "
       "lease_owner = CASE WHEN ?7 THEN NULL ELSE lease_owner END, "
       "updated_ms = ?8 "
       "WHERE key = ?1 AND lease_token = ?2 AND lease_owner IS NOT NULL "
       "RETURNING revision, backup_at_ms"},
      {&backup_slots_, "SELECT slot, taken_ms FROM profile_backups WHERE key = ?1"},
      {&backup_put_,
       "INSERT OR REPLACE INTO profile_backups (key, slot, data, schema_version, revision, "
       "taken_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
      {&backup_at_, "UPDATE profiles SET backup_at_ms = ?2 WHERE key = ?1"},
      {&backups_,
       "SELECT slot, data, schema_version, revision, taken_ms FROM profile_backups WHERE key = "
       "?1 ORDER BY taken_ms DESC, revision DESC"},
      {&txn_, "INSERT INTO profile_transactions (id, keys, taken_ms) VALUES (?1, ?2, ?3)"},
  };
  for (const auto& s : list) {
    MOLT_RETURN_IF_ERROR(file_.Prepare(s.into, s.sql));
  }
  return Status::Ok();
}

}  // namespace molt::kernel::store
