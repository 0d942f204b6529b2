// SPDX-License-Identifier: Apache-2.0
// SqliteDb: the SQL of the profile store. Statements are prepared once, at Open(); a load and a
// batch are each one BEGIN IMMEDIATE transaction. The WAL is checkpointed when the store's thread
// says its queue is quiet (Checkpoint), never inside a commit.
#include "kernel/src/store/sqlite_db.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace molt::kernel::store {

namespace {

// The database layout this build writes (PRAGMA user_version).
// 1: profiles; 2: + profiles.backup_at_ms, profile_backups, profile_transactions.
constexpr int kSchema = 2;

constexpr const char* kCreate = R"sql(
CREATE TABLE IF NOT EXISTS profiles (
  key              TEXT PRIMARY KEY NOT NULL,
  data             TEXT,
  schema_version   INTEGER NOT NULL DEFAULT 0,
  revision         INTEGER NOT NULL DEFAULT 0,
  lease_owner      TEXT,
  lease_token      INTEGER NOT NULL DEFAULT 0,
  lease_expires_ms INTEGER NOT NULL DEFAULT 0,
  updated_ms       INTEGER NOT NULL DEFAULT 0,
  backup_at_ms     INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS profile_backups (
  key              TEXT NOT NULL,
  slot             INTEGER NOT NULL,
  data             TEXT NOT NULL,
  schema_version   INTEGER NOT NULL,
  revision         INTEGER NOT NULL,
  taken_ms         INTEGER NOT NULL,
  PRIMARY KEY (key, slot)
);
CREATE TABLE IF NOT EXISTS profile_transactions (
  id               TEXT PRIMARY KEY NOT NULL,
  keys             TEXT NOT NULL,
  taken_ms         INTEGER NOT NULL
);
)sql";

// A kernel status for an SQLite failure: a full disk or an I/O error is the operating system's
// (kIoError), the rest (a corrupt file, a misuse) kInternal.
Status Failure(sqlite3* db, int rc, const std::string& what) {
  const std::string text =
      fmt::format("{}: {}", what, db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return Status::IoError(text +
                             " (free space on the profile database's disk: the profiles "
                             "stay in memory and are saved again)");
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::IoError(text);
    default:
      return Status::Internal(text);
  }
}

}  // namespace

// One prepared statement, reset after each use.
class SqliteDb::Statement {
 public:
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  int Prepare(sqlite3* db, const char* sql) {
    return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  }
  // Resets and binds: text for strings, integers for integers, NULL for nullopt. Text is bound
  // in place (SQLITE_STATIC), not copied: REQUIRES the arguments to outlive the Step()s that
  // follow, as they do in every caller (Bind(...).Step() in one expression, or arguments that
  // are the caller's parameters). Bindings are cleared only when fewer values than parameters
  // are given: every parameter is rebound otherwise.
  template <class... A>
  Statement& Bind(const A&... args) {
    sqlite3_reset(stmt_);
    if (static_cast<int>(sizeof...(A)) < sqlite3_bind_parameter_count(stmt_)) {
      sqlite3_clear_bindings(stmt_);
    }
    int i = 0;
    (BindOne(++i, args), ...);
    return *this;
  }
  // Binds `keys` to ?first, ?first+1, ... and NULL to the parameters after them (a key that is
  // NULL matches no row). Same lifetime rule as Bind().
  Statement& BindKeys(int first, const std::vector<const std::string*>& keys) {
    sqlite3_reset(stmt_);
    const int count = sqlite3_bind_parameter_count(stmt_);
    int i = first;
    for (const std::string* k : keys) {
      BindOne(i++, *k);
    }
    for (; i <= count; ++i) {
      sqlite3_bind_null(stmt_, i);
    }
    return *this;
  }
  int Step() { return sqlite3_step(stmt_); }
  void Reset() { sqlite3_reset(stmt_); }
  std::int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool Null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  // The column's text in place: valid until the next Step() or Reset().
  std::string_view TextView(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p == nullptr
               ? std::string_view()
               : std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
  }
  std::string Text(int col) const { return std::string(TextView(col)); }

 private:
  void BindOne(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void BindOne(int i, const std::optional<std::string>& v) {
    if (v) {
      BindOne(i, *v);
    } else {
      sqlite3_bind_null(stmt_, i);
    }
  }
  template <class I>
    requires std::is_integral_v<I>
  void BindOne(int i, I v) {
    sqlite3_bind_int64(stmt_, i, static_cast<sqlite3_int64>(v));
  }
  sqlite3_stmt* stmt_ = nullptr;
};

SqliteDb::SqliteDb(std::string path, SqliteOptions options)
    : path_(std::move(path)), options_(std::move(options)) {}

SqliteDb::~SqliteDb() {
  for (std::unique_ptr<Statement>* st : statements_) {
    st->reset();  // finalized before the close
  }
  sqlite3_close_v2(db_);
}

Status SqliteDb::Open() {
  const std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    return Status::NotFound(fmt::format(
        "cannot open the profile database \"{}\": the directory {} does not exist (create it, "
        "or point profiles.database or --data at one that does)",
        path_, dir.string()));
  }
  int rc =
      sqlite3_open_v2(path_.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    return Refused(rc, "cannot be opened");
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, static_cast<int>(options_.busy_timeout.count()));
  // The first statement reads the header: a file that is not a database fails here.
  int version = 0;
  MOLT_RETURN_IF_ERROR(Pragma("PRAGMA user_version", &version));
  if (version > kSchema) {
    return Status::FailedPrecondition(fmt::format(
        "the profile database \"{}\" has layout {}, newer than this build's ({}): run the Molt "
        "release that wrote it, or restore a backup made for this one",
        path_, version, kSchema));
  }
  std::string mode;
  MOLT_RETURN_IF_ERROR(PragmaText("PRAGMA journal_mode=WAL", &mode));
  if (mode != "wal" && !(path_ == kInMemory && mode == "memory")) {
    return Status::FailedPrecondition(fmt::format(
        "the profile database \"{}\" cannot use WAL mode (journal_mode is \"{}\"): put it on "
        "a local filesystem that supports shared memory",
        path_, mode));
  }
  if (Status s =
          Exec(options_.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
      !s.ok()) {
    return s;
  }
  if (version == 1) {  // layout 1 -> 2: the backup schedule in the row
    if (Status s = Exec("ALTER TABLE profiles ADD COLUMN backup_at_ms INTEGER NOT NULL DEFAULT 0");
        !s.ok()) {
      return s;
    }
  }
  MOLT_RETURN_IF_ERROR(Exec(kCreate));
  if (version < kSchema) {
    if (Status s = Exec(fmt::format("PRAGMA user_version={}", kSchema).c_str()); !s.ok()) {
      return s;
    }
  }
  SetMaxPageCount(options_.max_page_count);
  // Checkpoints run when the queue is idle (Checkpoint()), not inside a commit: SQLite's
  // automatic one would hold a transaction (a burst of joins) for the whole copy. Setting a
  // WAL hook turns the automatic checkpoint off.
  sqlite3_wal_hook(
      db_,
      [](void* self, sqlite3*, const char*, int pages) {
        static_cast<SqliteDb*>(self)->wal_pages_ = pages;
        return SQLITE_OK;
      },
      this);
  return Prepare();
}

void SqliteDb::Checkpoint(bool idle) {
  if (wal_pages_ >= (idle ? kIdleCheckpointPages : kBusyCheckpointPages)) {
    sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    wal_pages_ = 0;
  }
}

void SqliteDb::SetMaxPageCount(std::uint32_t pages) {
  // 0 lifts the cap: SQLite's own maximum.
  const std::string sql = fmt::format("PRAGMA max_page_count={}", pages == 0 ? 4294967294u : pages);
  (void)Exec(sql.c_str());
}

LoadResult SqliteDb::Load(const std::string& key, const std::string& owner,
                          std::chrono::milliseconds ttl) {
  LoadResult r;
  if (Status s = Begin(); !s.ok()) {
    r.status = s.Prefixed(fmt::format("profile \"{}\": load", key));
    return r;
  }
  r = Acquire(key, owner, ttl, options_.now());
  if (r.status.ok()) {
    r.status = Commit(fmt::format("profile \"{}\": load", key));
    if (!r.status.ok()) {
      r.record = Record{};
    }
  } else {
    r.status = Rollback(std::move(r.status));  // busy too: the transaction ends either way
  }
  return r;
}

std::vector<LoadResult> SqliteDb::LoadMany(const std::vector<LoadArgs>& loads) {
  std::vector<LoadResult> out;
  if (Begin().ok()) {
    const WallMillis now = options_.now();
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
        Commit("loading profiles").ok()) {
      return out;
    }
    (void)Rollback(Status::Ok());
  }
  out.clear();
  for (const LoadArgs& l : loads) {
    out.push_back(Load(l.key, l.owner, l.ttl));
  }
  return out;
}

Status SqliteDb::Write(const std::vector<store::Write>& batch, std::vector<WriteResult>& results) {
  results.assign(batch.size(), WriteResult{});
  if (Status s = Begin(); !s.ok()) {
    return s.Prefixed("saving profiles");
  }
  const WallMillis now = options_.now();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (Status s = WriteOne(batch[i], now, results[i]); !s.ok()) {
      return FailAll(Rollback(std::move(s)), results);
    }
  }
  return FailAll(Commit("saving profiles"), results);
}

Status SqliteDb::Transact(const std::string& id, const std::vector<store::Write>& batch,
                          std::vector<WriteResult>& results) {
  results.assign(batch.size(), WriteResult{});
  const std::string what = fmt::format("transaction \"{}\"", id);
  if (Status s = Begin(); !s.ok()) {
    return FailAll(s.Prefixed(what), results);
  }
  const WallMillis now = options_.now();
  std::string keys;
  for (const store::Write& w : batch) {
    keys += (keys.empty() ? "" : " ") + w.key;
  }
  const int rc = txn_->Bind(id, keys, now).Step();
  txn_->Reset();
  if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT) {
    return FailAll(Rollback(Status::AlreadyExists(
                       fmt::format("{} was already committed: a replay is refused", what))),
                   results);
  }
  if (rc != SQLITE_DONE) {
    return FailAll(Rollback(Failure(db_, rc, what)), results);
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (Status s = WriteOne(batch[i], now, results[i]); !s.ok()) {
      return FailAll(Rollback(std::move(s)), results);
    }
    if (!results[i].status.ok()) {  // a lost lease: nothing of the transaction is stored
      return FailAll(Rollback(results[i].status), results);
    }
  }
  return FailAll(Commit(what), results);
}

Result<std::vector<Backup>> SqliteDb::Backups(const std::string& key) {
  std::vector<Backup> out;
  Statement& st = backups_->Bind(key);
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    out.push_back(Backup{static_cast<int>(st.Int(0)), st.Text(1),
                         static_cast<std::uint32_t>(st.Int(2)),
                         static_cast<std::uint64_t>(st.Int(3)), st.Int(4)});
  }
  st.Reset();
  if (rc != SQLITE_DONE) {
    return Failure(db_, rc, fmt::format("reading the backups of profile \"{}\"", key));
  }
  return out;
}

Result<Record> SqliteDb::Read(const std::string& key) {
  Result<std::optional<Record>> row = Select(key);
  if (!row.ok()) {
    return row.status().Prefixed(fmt::format("reading profile \"{}\"", key));
  }
  if (!row->has_value()) {
    return Status::NotFound(fmt::format("no profile \"{}\" in {}", key, path_));
  }
  return std::move(**row);
}

Result<std::vector<std::pair<std::string, std::size_t>>> SqliteDb::ReleaseAbandoned(
    const ProfileStore::Abandoned& abandoned) {
  const std::string what = "ending the leases of servers that are gone";
  if (Status s = Begin(); !s.ok()) {
    return s.Prefixed(what);
  }
  std::vector<std::pair<std::string, std::size_t>> ended;
  {
    Statement owners;
    int rc = owners.Prepare(db_,
                            "SELECT lease_owner, COUNT(*) FROM profiles WHERE lease_owner IS NOT "
                            "NULL AND lease_expires_ms > ?1 GROUP BY lease_owner");
    if (rc != SQLITE_OK) {
      return Rollback(Failure(db_, rc, what));
    }
    owners.Bind(options_.now());
    while ((rc = owners.Step()) == SQLITE_ROW) {
      if (std::string owner = owners.Text(0); abandoned(owner)) {
        ended.emplace_back(std::move(owner), static_cast<std::size_t>(owners.Int(1)));
      }
    }
    if (rc != SQLITE_DONE) {
      return Rollback(Failure(db_, rc, what));
    }
  }
  Statement end;
  int rc = end.Prepare(db_,
                       "UPDATE profiles SET lease_owner = NULL, lease_expires_ms = 0 WHERE "
                       "lease_owner = ?1");
  if (rc != SQLITE_OK) {
    return Rollback(Failure(db_, rc, what));
  }
  for (const auto& [owner, count] : ended) {
    if ((rc = end.Bind(owner).Step()) != SQLITE_DONE) {
      return Rollback(Failure(db_, rc, what));
    }
  }
  MOLT_RETURN_IF_ERROR(Commit(what));
  return ended;
}

Status SqliteDb::WriteOne(const store::Write& w, WallMillis now, WriteResult& result) {
  Statement& st = *write_;
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
    return Failure(db_, rc, fmt::format("saving profile \"{}\"", w.key));
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
      return Failure(db_, rc2, fmt::format("scheduling the backup of profile \"{}\"", w.key));
    }
  }
  return Status::Ok();
}

int SqliteDb::OldestSlot(const std::string& key) {
  WallMillis taken[kBackupSlots];
  std::fill(std::begin(taken), std::end(taken), -1);
  Statement& st = backup_slots_->Bind(key);
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
                           : Failure(db_, rc, fmt::format("backing up profile \"{}\"", w.key));
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
    r.status = Failure(db_, rc, fmt::format("profile \"{}\": taking the lease", key));
  }
  return r;
}

Result<std::optional<Record>> SqliteDb::Select(const std::string& key) {
  Statement& select = *select_;
  select.Bind(key);
  const int rc = select.Step();
  if (rc == SQLITE_DONE) {
    select.Reset();
    return std::optional<Record>();
  }
  if (rc != SQLITE_ROW) {
    select.Reset();
    return Failure(db_, rc, "selecting the row");
  }
  Record rec;
  rec.key = key;
  ReadRow(select, rec);
  select.Reset();
  return std::optional<Record>(std::move(rec));
}

// The columns of kRowColumns, in their order, into `rec` (all but the key).
void SqliteDb::ReadRow(const Statement& st, Record& rec) {
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
  Statement& select = select_many_->BindKeys(1, keys);
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
    return Failure(db_, rc, "selecting the rows of a burst of loads");
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
      return Failure(db_, rc, "taking the leases of a burst of loads");
    }
    if (sqlite3_changes(db_) != static_cast<int>(list->size())) {
      return Status::Internal(fmt::format(
          "taking the leases of a burst of loads changed {} rows where {} were expected",
          sqlite3_changes(db_), list->size()));
    }
  }
  return Status::Ok();
}

Status SqliteDb::Refused(int rc, const char* what) {
  const std::string cause = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  std::string fix = "check the path and its permissions";
  if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT) {
    fix =
        "move it aside (restore a backup of it, or let Molt create a new one) or point "
        "profiles.database or --data at another file";
  }
  return Status::FailedPrecondition(
      fmt::format("the profile database \"{}\" {}: {}: {}", path_, what, cause, fix));
}

Status SqliteDb::Pragma(const char* sql, int* out) {
  std::string text;
  Status s = PragmaText(sql, &text);
  *out = s.ok() ? std::atoi(text.c_str()) : 0;
  return s;
}

Status SqliteDb::PragmaText(const char* sql, std::string* out) {
  sqlite3_stmt* st = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql, -1, &st, nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      *out = p != nullptr ? p : "";
      rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(st);
  return rc == SQLITE_OK ? Status::Ok() : Refused(rc, "cannot be read");
}

Status SqliteDb::Exec(const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  return rc == SQLITE_OK ? Status::Ok() : Refused(rc, "cannot be set up");
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
    std::unique_ptr<Statement>* into;
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
      {&begin_, "BEGIN IMMEDIATE"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
  };
  for (const auto& s : list) {
    auto st = std::make_unique<Statement>();
    if (int rc = st->Prepare(db_, s.sql); rc != SQLITE_OK) {
      return Refused(rc, "cannot be used");
    }
    *s.into = std::move(st);
    statements_.push_back(s.into);
  }
  return Status::Ok();
}

Status SqliteDb::Begin() {
  const int rc = begin_->Bind().Step();
  begin_->Reset();
  return rc == SQLITE_DONE ? Status::Ok() : Failure(db_, rc, "starting a transaction");
}

Status SqliteDb::Commit(const std::string& what) {
  const int rc = commit_->Bind().Step();
  commit_->Reset();
  if (rc == SQLITE_DONE) {
    return Status::Ok();
  }
  return Rollback(Failure(db_, rc, what));
}

Status SqliteDb::Rollback(Status why) {
  if (sqlite3_get_autocommit(db_) == 0) {
    (void)rollback_->Bind().Step();
    rollback_->Reset();
  }
  return why;
}

}  // namespace molt::kernel::store
