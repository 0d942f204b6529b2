// SPDX-License-Identifier: Apache-2.0
// PgDb: the SQL of the profile store on PostgreSQL (pg_db.h). Statements are prepared once per
// connection; a load is one statement, a batch one transaction.
#include "kernel/src/store/pg_db.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>

namespace molt::kernel::store {

namespace {

// The layout this build writes (molt_schema, name 'profiles').
constexpr int kSchema = 1;
// Loads one statement takes (a burst of joins).
constexpr std::size_t kChunk = 256;

constexpr const char* kCreate = R"sql(
CREATE TABLE IF NOT EXISTS molt_profiles (
  key              TEXT PRIMARY KEY,
  data             TEXT,
  schema_version   INTEGER NOT NULL DEFAULT 0,
  revision         BIGINT NOT NULL DEFAULT 0,
  lease_owner      TEXT,
  lease_token      BIGINT NOT NULL DEFAULT 0,
  lease_expires_ms BIGINT NOT NULL DEFAULT 0,
  updated_ms       BIGINT NOT NULL DEFAULT 0,
  backup_at_ms     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS molt_profiles_lease_owner ON molt_profiles (lease_owner)
  WHERE lease_owner IS NOT NULL;
CREATE TABLE IF NOT EXISTS molt_profile_backups (
  key              TEXT NOT NULL,
  slot             INTEGER NOT NULL,
  data             TEXT NOT NULL,
  schema_version   INTEGER NOT NULL,
  revision         BIGINT NOT NULL,
  taken_ms         BIGINT NOT NULL,
  PRIMARY KEY (key, slot)
);
CREATE TABLE IF NOT EXISTS molt_profile_transactions (
  id               TEXT PRIMARY KEY,
  keys             TEXT NOT NULL,
  taken_ms         BIGINT NOT NULL
);
)sql";

// The columns a row is read from, in ReadRow's order.
constexpr const char* kRow =
    "data, schema_version, revision, COALESCE(lease_owner, ''), lease_token, lease_expires_ms, "
    "updated_ms";

}  // namespace

namespace {

// Columns `first`.. of `row`, in kRow's order, into `rec` (all but the key).
void ReadRow(const PgRows& rows, int row, int first, Record& rec) {
  if (!rows.Null(row, first)) {
    rec.data = rows.Text(row, first);
  }
  rec.schema_version = static_cast<std::uint32_t>(rows.Int(row, first + 1));
  rec.revision = static_cast<std::uint64_t>(rows.Int(row, first + 2));
  rec.lease.owner = rows.Text(row, first + 3);
  rec.lease.token = static_cast<std::uint64_t>(rows.Int(row, first + 4));
  rec.lease.expires = rows.Int(row, first + 5);
  rec.updated = rows.Int(row, first + 6);
}

}  // namespace

PgDb::PgDb(std::string url, PgOptions options)
    : db_(std::move(url), "the profile database", options.connect_timeout_seconds),
      options_(std::move(options)) {
  db_.set_statements(Statements());
}

PgDb::~PgDb() = default;

std::string PgDb::Redacted(const std::string& url) { return PgConnection::Redacted(url); }

Status PgDb::Open() {
  MOLT_RETURN_IF_ERROR(db_.Connect(/*prepare=*/false));
  MOLT_RETURN_IF_ERROR(db_.CreateTables("profiles", kSchema, kCreate, "the profile tables"));
  return db_.Prepare();  // on the tables now there
}

std::vector<std::pair<std::string, std::string>> PgDb::Statements() {
  const std::string acquire = fmt::format(
      "INSERT INTO molt_profiles AS p (key, lease_owner, lease_token, lease_expires_ms, "
      "updated_ms) SELECT k, $2, 1, $3::bigint, $4::bigint FROM unnest($1::text[]) AS k "
      "ON CONFLICT (key) DO UPDATE SET lease_owner = EXCLUDED.lease_owner, lease_token = "
      "p.lease_token + 1, lease_expires_ms = EXCLUDED.lease_expires_ms, updated_ms = "
      "EXCLUDED.updated_ms WHERE p.lease_owner IS NULL OR p.lease_expires_ms <= $4::bigint "
      "RETURNING p.key, {}",
      kRow);
  const std::string select = fmt::format("SELECT {} FROM molt_profiles WHERE key = $1", kRow);
  return {
      {"acquire", acquire},
      {"holders",
       "SELECT key, COALESCE(lease_owner, ''), lease_token, lease_expires_ms FROM molt_profiles "
       "WHERE key = ANY($1::text[])"},
      {"select", select},
      // One write: conditional on the lease token (and on the lease still being held).
      {"write",
       "UPDATE molt_profiles SET "
       "data = CASE WHEN $4::boolean THEN $3::text ELSE data END, "
       "schema_version = CASE WHEN $4::boolean THEN $5::integer ELSE schema_version END, "
       "revision = revision + CASE WHEN $4::boolean THEN 1 ELSE 0 END, "
       "lease_expires_ms = CASE WHEN $7::boolean THEN 0 WHEN $6::bigint > 0 THEN $6::bigint "
       "ELSE lease_expires_ms END, "
       "lease_owner = CASE WHEN $7::boolean THEN NULL ELSE lease_owner END, "
       "updated_ms = $8::bigint "
       "WHERE key = $1 AND lease_token = $2::bigint AND lease_owner IS NOT NULL "
       "RETURNING revision, backup_at_ms"},
      {"backup_slots", "SELECT slot, taken_ms FROM molt_profile_backups WHERE key = $1"},
      {"backup_put",
       "INSERT INTO molt_profile_backups (key, slot, data, schema_version, revision, taken_ms) "
       "VALUES ($1, $2::integer, $3, $4::integer, $5::bigint, $6::bigint) ON CONFLICT (key, "
       "slot) DO UPDATE SET data = EXCLUDED.data, schema_version = EXCLUDED.schema_version, "
       "revision = EXCLUDED.revision, taken_ms = EXCLUDED.taken_ms"},
      {"backup_at", "UPDATE molt_profiles SET backup_at_ms = $2::bigint WHERE key = $1"},
      {"backups",
       "SELECT slot, data, schema_version, revision, taken_ms FROM molt_profile_backups WHERE "
       "key = $1 ORDER BY taken_ms DESC, revision DESC"},
      {"txn",
       "INSERT INTO molt_profile_transactions (id, keys, taken_ms) VALUES ($1, $2, $3::bigint) "
       "ON CONFLICT (id) DO NOTHING RETURNING id"},
      {"owners",
       "SELECT lease_owner, COUNT(*) FROM molt_profiles WHERE lease_owner IS NOT NULL AND "
       "lease_expires_ms > $1::bigint GROUP BY lease_owner"},
      {"end_leases",
       "UPDATE molt_profiles SET lease_owner = NULL, lease_expires_ms = 0 WHERE lease_owner = "
       "$1"},
  };
}

std::vector<LoadResult> PgDb::LoadMany(const std::vector<LoadArgs>& loads) {
  std::vector<LoadResult> out(loads.size());
  if (Status s = db_.Connected(); !s.ok()) {
    for (std::size_t i = 0; i < loads.size(); ++i) {
      out[i].status = s.Prefixed(fmt::format("profile \"{}\": load", loads[i].key));
    }
    return out;
  }
  const WallMillis now = options_.now();
  // Runs of loads that share the owner and the lease time, each key once, go in one statement.
  for (std::size_t first = 0; first < loads.size();) {
    std::vector<const LoadArgs*> group = {&loads[first]};
    std::vector<LoadResult*> results = {&out[first]};
    std::size_t next = first + 1;
    while (next < loads.size() && group.size() < kChunk &&
           loads[next].owner == loads[first].owner && loads[next].ttl == loads[first].ttl &&
           std::none_of(group.begin(), group.end(),
                        [&](const LoadArgs* l) { return l->key == loads[next].key; })) {
      group.push_back(&loads[next]);
      results.push_back(&out[next]);
      ++next;
    }
    if (Status s = AcquireChunk(group, now, results); !s.ok()) {
      for (std::size_t i = 0; i < group.size(); ++i) {
        *results[i] = LoadResult{};
        results[i]->status = s.Prefixed(fmt::format("profile \"{}\": load", group[i]->key));
      }
    }
    first = next;
  }
  return out;
}

Status PgDb::AcquireChunk(const std::vector<const LoadArgs*>& loads, WallMillis now,
                          std::vector<LoadResult*>& out) {
  const std::string& owner = loads[0]->owner;
  const WallMillis expires = now + loads[0]->ttl.count();
  std::vector<std::size_t> left(loads.size());
  for (std::size_t i = 0; i < loads.size(); ++i) {
    left[i] = i;
  }
  // A lease released between the acquire and the look at its holder is tried again; three
  // rounds settle any real contention.
  for (int round = 0; round < 3 && !left.empty(); ++round) {
    std::vector<std::string_view> keys;
    for (std::size_t i : left) {
      keys.push_back(loads[i]->key);
    }
    MOLT_ASSIGN_OR_RETURN(
        PgRows taken, db_.Run("acquire", PgParams().Array(keys).Text(owner).Int(expires).Int(now),
                              "taking the leases of a burst of loads"));
    std::vector<bool> got(loads.size(), false);
    for (int row = 0; row < taken.size(); ++row) {
      const std::string key = taken.Text(row, 0);
      for (std::size_t i : left) {
        if (!got[i] && loads[i]->key == key) {
          got[i] = true;
          Record& rec = out[i]->record;
          rec = Record{};
          rec.key = key;
          ReadRow(taken, row, 1, rec);
          out[i]->status = Status::Ok();
          break;
        }
      }
    }
    std::vector<std::size_t> busy;
    for (std::size_t i : left) {
      if (!got[i]) {
        busy.push_back(i);
      }
    }
    if (busy.empty()) {
      return Status::Ok();
    }
    keys.clear();
    for (std::size_t i : busy) {
      keys.push_back(loads[i]->key);
    }
    MOLT_ASSIGN_OR_RETURN(PgRows holders, db_.Run("holders", PgParams().Array(keys),
                                                  "reading the holders of leased profiles"));
    left.clear();
    for (std::size_t i : busy) {
      bool held = false;
      for (int row = 0; row < holders.size(); ++row) {
        if (holders.Text(row, 0) != loads[i]->key) {
          continue;
        }
        const Lease lease{holders.Text(row, 1), static_cast<std::uint64_t>(holders.Int(row, 2)),
                          holders.Int(row, 3)};
        if (Held(lease, now)) {
          *out[i] = LeasedElsewhere(loads[i]->key, lease);
          held = true;
        }
      }
      if (!held) {
        left.push_back(i);  // released meanwhile: take it in the next round
      }
    }
  }
  for (std::size_t i : left) {
    *out[i] = LoadResult{};
    out[i]->status = Status::IoError(fmt::format(
        "profile \"{}\": its lease kept changing hands while it was taken: load it again",
        loads[i]->key));
  }
  return Status::Ok();
}

Status PgDb::Write(const std::vector<store::Write>& batch, std::vector<WriteResult>& results) {
  results.assign(batch.size(), WriteResult{});
  const std::string what = "saving profiles";
  MOLT_RETURN_IF_ERROR(FailAll(db_.Connected(), results));
  MOLT_RETURN_IF_ERROR(FailAll(db_.Begin(what), results));
  const WallMillis now = options_.now();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (Status s = WriteOne(batch[i], now, results[i]); !s.ok()) {
      return FailAll(db_.Rollback(std::move(s)), results);
    }
  }
  return FailAll(db_.Commit(what), results);
}

Status PgDb::Transact(const std::string& id, const std::vector<store::Write>& batch,
                      std::vector<WriteResult>& results) {
  results.assign(batch.size(), WriteResult{});
  const std::string what = fmt::format("transaction \"{}\"", id);
  MOLT_RETURN_IF_ERROR(FailAll(db_.Connected().Prefixed(what), results));
  MOLT_RETURN_IF_ERROR(FailAll(db_.Begin(what), results));
  const WallMillis now = options_.now();
  std::string keys;
  for (const store::Write& w : batch) {
    keys += (keys.empty() ? "" : " ") + w.key;
  }
  Result<PgRows> recorded = db_.Run("txn", PgParams().Text(id).Text(keys).Int(now), what);
  if (!recorded.ok()) {
    return FailAll(db_.Rollback(recorded.status()), results);
  }
  if (recorded->size() == 0) {  // the id is there: committed before (or just now, elsewhere)
    return FailAll(db_.Rollback(Status::AlreadyExists(
                       fmt::format("{} was already committed: a replay is refused", what))),
                   results);
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (Status s = WriteOne(batch[i], now, results[i]); !s.ok()) {
      return FailAll(db_.Rollback(std::move(s)), results);
    }
    if (!results[i].status.ok()) {  // a lost lease: nothing of the transaction is stored
      return FailAll(db_.Rollback(results[i].status), results);
    }
  }
  return FailAll(db_.Commit(what), results);
}

Status PgDb::WriteOne(const store::Write& w, WallMillis now, WriteResult& result) {
  MOLT_ASSIGN_OR_RETURN(PgRows row, db_.Run("write",
                                            PgParams()
                                                .Text(w.key)
                                                .Int(static_cast<std::int64_t>(w.token))
                                                .Optional(w.data)
                                                .Bool(w.data.has_value())
                                                .Int(w.schema_version)
                                                .Int(w.renew_until)
                                                .Bool(w.release)
                                                .Int(now),
                                            fmt::format("saving profile \"{}\"", w.key)));
  if (row.size() == 0) {
    result.status = LeaseLost(w.key, w.token);
    return Status::Ok();
  }
  result.revision = static_cast<std::uint64_t>(row.Int(0, 0));
  const WallMillis backup_at = row.Int(0, 1);
  if (!w.data) {
    return Status::Ok();
  }
  if (w.mirror) {
    MOLT_RETURN_IF_ERROR(PutBackup(w, kMirrorSlot, result.revision, now));
  }
  if (w.backup_every > 0 && (w.backup_now || now >= backup_at)) {
    MOLT_ASSIGN_OR_RETURN(PgRows slots, db_.Run("backup_slots", PgParams().Text(w.key),
                                                fmt::format("backing up profile \"{}\"", w.key)));
    WallMillis taken[kBackupSlots];
    std::fill(std::begin(taken), std::end(taken), -1);
    for (int i = 0; i < slots.size(); ++i) {
      if (const std::int64_t slot = slots.Int(i, 0); slot >= 0 && slot < kBackupSlots) {
        taken[slot] = slots.Int(i, 1);
      }
    }
    const int oldest =
        static_cast<int>(std::min_element(std::begin(taken), std::end(taken)) - std::begin(taken));
    MOLT_RETURN_IF_ERROR(PutBackup(w, oldest, result.revision, now));
    MOLT_RETURN_IF_ERROR(db_.Run("backup_at", PgParams().Text(w.key).Int(now + w.backup_every),
                                 fmt::format("scheduling the backup of profile \"{}\"", w.key))
                             .status());
  }
  return Status::Ok();
}

Status PgDb::PutBackup(const store::Write& w, int slot, std::uint64_t revision, WallMillis now) {
  return db_
      .Run("backup_put",
           PgParams()
               .Text(w.key)
               .Int(slot)
               .Text(*w.data)
               .Int(w.schema_version)
               .Int(static_cast<std::int64_t>(revision))
               .Int(now),
           fmt::format("backing up profile \"{}\"", w.key))
      .status();
}

Result<std::vector<Backup>> PgDb::Backups(const std::string& key) {
  const std::string what = fmt::format("reading the backups of profile \"{}\"", key);
  MOLT_RETURN_IF_ERROR(db_.Connected().Prefixed(what));
  MOLT_ASSIGN_OR_RETURN(PgRows rows, db_.Run("backups", PgParams().Text(key), what));
  std::vector<Backup> out;
  for (int i = 0; i < rows.size(); ++i) {
    out.push_back(Backup{static_cast<int>(rows.Int(i, 0)), rows.Text(i, 1),
                         static_cast<std::uint32_t>(rows.Int(i, 2)),
                         static_cast<std::uint64_t>(rows.Int(i, 3)), rows.Int(i, 4)});
  }
  return out;
}

Result<Record> PgDb::Read(const std::string& key) {
  const std::string what = fmt::format("reading profile \"{}\"", key);
  MOLT_RETURN_IF_ERROR(db_.Connected().Prefixed(what));
  MOLT_ASSIGN_OR_RETURN(PgRows rows, db_.Run("select", PgParams().Text(key), what));
  if (rows.size() == 0) {
    return Status::NotFound(fmt::format("no profile \"{}\" in {}", key, Redacted(db_.url())));
  }
  Record rec;
  rec.key = key;
  ReadRow(rows, 0, 0, rec);
  return rec;
}

Result<std::vector<std::pair<std::string, std::size_t>>> PgDb::ReleaseAbandoned(
    const ProfileStore::Abandoned& abandoned) {
  const std::string what = "ending the leases of servers that are gone";
  MOLT_RETURN_IF_ERROR(db_.Connected().Prefixed(what));
  MOLT_RETURN_IF_ERROR(db_.Begin(what));
  Result<PgRows> owners = db_.Run("owners", PgParams().Int(options_.now()), what);
  if (!owners.ok()) {
    return db_.Rollback(owners.status());
  }
  std::vector<std::pair<std::string, std::size_t>> ended;
  for (int i = 0; i < owners->size(); ++i) {
    if (std::string owner = owners->Text(i, 0); abandoned(owner)) {
      ended.emplace_back(std::move(owner), static_cast<std::size_t>(owners->Int(i, 1)));
    }
  }
  for (const auto& [owner, count] : ended) {
    if (Status s = db_.Run("end_leases", PgParams().Text(owner), what).status(); !s.ok()) {
      return db_.Rollback(s);
    }
  }
  MOLT_RETURN_IF_ERROR(db_.Commit(what));
  return ended;
}

}  // namespace molt::kernel::store
