// SPDX-License-Identifier: Apache-2.0
// SqliteStore: one thread owns the connection and runs the queued operations in order; results
// go back through the deliver function. Statements are prepared once. A load and a batch are each
// one BEGIN IMMEDIATE transaction: the write lock is taken up front, so two processes never
// deadlock upgrading a read, they wait for each other (busy_timeout).
#include "kernel/src/store/sqlite_store.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>
#include <variant>

#include "kernel/src/core/logger.h"

namespace molt::kernel::store {

WallMillis WallNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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

// "2026-12-01T13:40:00.250Z" for a lease expiry in an error text.
std::string Iso(WallMillis ms) {
  const std::time_t s = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

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

// One prepared statement, reset after each use.
class Statement {
 public:
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  int Prepare(sqlite3* db, const char* sql) {
    return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  }
  // Resets and binds: text for strings, integers for integers, NULL for nullopt.
  template <class... A>
  Statement& Bind(const A&... args) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    int i = 0;
    (BindOne(++i, args), ...);
    return *this;
  }
  int Step() { return sqlite3_step(stmt_); }
  void Reset() { sqlite3_reset(stmt_); }
  std::int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool Null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(stmt_, col));
  }

 private:
  void BindOne(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
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

}  // namespace

// A load waiting for the store's thread.
struct LoadRequest {
  std::string key;
  std::string owner;
  std::chrono::milliseconds ttl{};
  Callback<void(LoadResult)> done;
  std::chrono::steady_clock::time_point called{};
};

// StoreLatency, kept by the store's thread and read from any: atomics.
struct LatencyCounters {
  std::array<std::atomic<std::uint64_t>, kStoreLatencyBounds.size() + 1> counts{};
  std::atomic<std::uint64_t> sum_ns{0};

  void Observe(std::chrono::steady_clock::time_point since) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - since)
                        .count();
    const double seconds = static_cast<double>(ns) / 1e9;
    std::size_t i = 0;
    while (i < kStoreLatencyBounds.size() && seconds > kStoreLatencyBounds[i]) {
      ++i;
    }
    ++counts[i];
    sum_ns += static_cast<std::uint64_t>(ns);
  }
  StoreLatency Read() const {
    StoreLatency l;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      l.counts[i] = counts[i];
    }
    l.sum_seconds = static_cast<double>(sum_ns.load()) / 1e9;
    return l;
  }
};

// The connection and its statements; used by the store's thread only.
class SqliteStore::Db {
 public:
  Db(std::string path, SqliteOptions options)
      : path_(std::move(path)), options_(std::move(options)) {}
  ~Db() {
    for (std::unique_ptr<Statement>* st : statements_) {
      st->reset();  // finalized before the close
    }
    sqlite3_close_v2(db_);
  }

  Status Open() {
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
    if (Status s = Pragma("PRAGMA user_version", &version); !s.ok()) {
      return s;
    }
    if (version > kSchema) {
      return Status::FailedPrecondition(fmt::format(
          "the profile database \"{}\" has layout {}, newer than this build's ({}): run the Molt "
          "release that wrote it, or restore a backup made for this one",
          path_, version, kSchema));
    }
    std::string mode;
    if (Status s = PragmaText("PRAGMA journal_mode=WAL", &mode); !s.ok()) {
      return s;
    }
    if (mode != "wal") {
      return Status::FailedPrecondition(fmt::format(
          "the profile database \"{}\" cannot use WAL mode (journal_mode is \"{}\"): put it on "
          "a local filesystem that supports shared memory",
          path_, mode));
    }
    if (Status s = Exec(options_.synchronous_full ? "PRAGMA synchronous=FULL"
                                                  : "PRAGMA synchronous=NORMAL");
        !s.ok()) {
      return s;
    }
    if (version == 1) {  // layout 1 -> 2: the backup schedule in the row
      if (Status s =
              Exec("ALTER TABLE profiles ADD COLUMN backup_at_ms INTEGER NOT NULL DEFAULT 0");
          !s.ok()) {
        return s;
      }
    }
    if (Status s = Exec(kCreate); !s.ok()) {
      return s;
    }
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
          static_cast<Db*>(self)->wal_pages_ = pages;
          return SQLITE_OK;
        },
        this);
    return Prepare();
  }

  // Copies the WAL back into the database when it has grown (`idle`: nothing is queued) or has
  // grown too much to wait for an idle moment. PASSIVE: never waits for other connections.
  void Checkpoint(bool idle) {
    if (wal_pages_ >= (idle ? kIdleCheckpointPages : kBusyCheckpointPages)) {
      sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      wal_pages_ = 0;
    }
  }

  void SetMaxPageCount(std::uint32_t pages) {
    // 0 lifts the cap: SQLite's own maximum.
    const std::string sql =
        fmt::format("PRAGMA max_page_count={}", pages == 0 ? 4294967294u : pages);
    (void)Exec(sql.c_str());
  }

  // One load in its own transaction.
  LoadResult Load(const std::string& key, const std::string& owner, std::chrono::milliseconds ttl) {
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

  // Loads that queued up together, in one transaction (a burst of joins commits once). Should
  // the transaction fail, each load is tried in one of its own.
  std::vector<LoadResult> LoadMany(const std::vector<LoadRequest>& loads) {
    std::vector<LoadResult> out;
    if (Begin().ok()) {
      const WallMillis now = options_.now();
      for (const LoadRequest& l : loads) {
        out.push_back(Acquire(l.key, l.owner, l.ttl, now));
        if (!out.back().status.ok() && !out.back().busy()) {
          break;
        }
      }
      if (out.size() == loads.size() &&
          std::all_of(out.begin(), out.end(),
                      [](const LoadResult& r) { return r.status.ok() || r.busy(); }) &&
          Commit("loading profiles").ok()) {
        return out;
      }
      (void)Rollback(Status::Ok());
    }
    out.clear();
    for (const LoadRequest& l : loads) {
      out.push_back(Load(l.key, l.owner, l.ttl));
    }
    return out;
  }

  Status Write(const std::vector<store::Write>& batch, std::vector<WriteResult>& results) {
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

  // Write() as one all-or-nothing transaction recorded under `id`.
  Status Transact(const std::string& id, const std::vector<store::Write>& batch,
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

  Result<std::vector<Backup>> Backups(const std::string& key) {
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

  Result<Record> Read(const std::string& key) {
    Result<std::optional<Record>> row = Select(key);
    if (!row.ok()) {
      return row.status().Prefixed(fmt::format("reading profile \"{}\"", key));
    }
    if (!row->has_value()) {
      return Status::NotFound(fmt::format("no profile \"{}\" in {}", key, path_));
    }
    return std::move(**row);
  }

  Result<std::vector<std::pair<std::string, std::size_t>>> ReleaseAbandoned(
      const Abandoned& abandoned) {
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
    if (Status s = Commit(what); !s.ok()) {
      return s;
    }
    return ended;
  }

 private:
  // `s` for every result when it failed (a failed transaction stored nothing); `s` either way.
  static Status FailAll(Status s, std::vector<WriteResult>& results) {
    if (!s.ok()) {
      for (WriteResult& wr : results) {
        wr = WriteResult{s, 0};
      }
    }
    return s;
  }

  // One write inside the open transaction: `result` is OK (with the revision) or kStale; an
  // error return is the database's (the transaction must roll back).
  Status WriteOne(const store::Write& w, WallMillis now, WriteResult& result) {
    Statement& st = *write_;
    st.Bind(w.key, w.token, w.data, static_cast<std::int64_t>(w.data ? 1 : 0), w.schema_version,
            w.renew_until, static_cast<std::int64_t>(w.release ? 1 : 0), now);
    const int rc = st.Step();
    if (rc == SQLITE_DONE) {
      st.Reset();
      result.status = Status::Stale(fmt::format(
          "profile \"{}\": the lease (token {}) is no longer this host's (another host took it "
          "over, or it was released): this copy is not saved",
          w.key, w.token));
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
      if (Status s = PutBackup(w, kMirrorSlot, result.revision, now); !s.ok()) {
        return s;
      }
    }
    if (w.backup_every > 0 && (w.backup_now || now >= backup_at)) {
      if (Status s = PutBackup(w, OldestSlot(w.key), result.revision, now); !s.ok()) {
        return s;
      }
      const int rc2 = backup_at_->Bind(w.key, now + w.backup_every).Step();
      backup_at_->Reset();
      if (rc2 != SQLITE_DONE) {
        return Failure(db_, rc2, fmt::format("scheduling the backup of profile \"{}\"", w.key));
      }
    }
    return Status::Ok();
  }

  // The slot the next backup of `key` goes to: an empty one, else the oldest.
  int OldestSlot(const std::string& key) {
    WallMillis taken[kBackupSlots];
    std::fill(std::begin(taken), std::end(taken), -1);
    Statement& st = backup_slots_->Bind(key);
    while (st.Step() == SQLITE_ROW) {
      if (const std::int64_t slot = st.Int(0); slot >= 0 && slot < kBackupSlots) {
        taken[slot] = st.Int(1);
      }
    }
    st.Reset();
    return static_cast<int>(std::min_element(std::begin(taken), std::end(taken)) -
                            std::begin(taken));
  }

  Status PutBackup(const store::Write& w, int slot, std::uint64_t revision, WallMillis now) {
    const int rc = backup_put_->Bind(w.key, slot, *w.data, w.schema_version, revision, now).Step();
    backup_put_->Reset();
    return rc == SQLITE_DONE ? Status::Ok()
                             : Failure(db_, rc, fmt::format("backing up profile \"{}\"", w.key));
  }

  // Takes the lease on `key` inside the open transaction (see Load); busy leaves it unchanged.
  LoadResult Acquire(const std::string& key, const std::string& owner,
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
    if (exists && !rec.lease.owner.empty() && rec.lease.expires > now) {
      r.holder = rec.lease;
      r.record = Record{};
      r.status = Status::FailedPrecondition(fmt::format(
          "profile \"{}\" is leased by {} until {} (lease token {}): wait for its release or "
          "expiry, then load it again",
          key, r.holder.owner, Iso(r.holder.expires), r.holder.token));
      return r;
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
  // The row of `key`: nullopt when there is none.
  Result<std::optional<Record>> Select(const std::string& key) {
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
    if (!select.Null(0)) {
      rec.data = select.Text(0);
    }
    rec.schema_version = static_cast<std::uint32_t>(select.Int(1));
    rec.revision = static_cast<std::uint64_t>(select.Int(2));
    rec.lease.owner = select.Text(3);
    rec.lease.token = static_cast<std::uint64_t>(select.Int(4));
    rec.lease.expires = select.Int(5);
    rec.updated = select.Int(6);
    select.Reset();
    return std::optional<Record>(std::move(rec));
  }
  Status Refused(int rc, const char* what) {
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
  Status Pragma(const char* sql, int* out) {
    std::string text;
    Status s = PragmaText(sql, &text);
    *out = s.ok() ? std::atoi(text.c_str()) : 0;
    return s;
  }
  Status PragmaText(const char* sql, std::string* out) {
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
  Status Exec(const char* sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
    sqlite3_free(err);
    return rc == SQLITE_OK ? Status::Ok() : Refused(rc, "cannot be set up");
  }
  Status Prepare() {
    struct {
      std::unique_ptr<Statement>* into;
      const char* sql;
    } const list[] = {
        {&select_,
         "SELECT data, schema_version, revision, COALESCE(lease_owner, ''), lease_token, "
         "lease_expires_ms, updated_ms FROM profiles WHERE key = ?1"},
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
  Status Begin() {
    const int rc = begin_->Bind().Step();
    begin_->Reset();
    return rc == SQLITE_DONE ? Status::Ok() : Failure(db_, rc, "starting a transaction");
  }
  Status Commit(const std::string& what) {
    const int rc = commit_->Bind().Step();
    commit_->Reset();
    if (rc == SQLITE_DONE) {
      return Status::Ok();
    }
    return Rollback(Failure(db_, rc, what));
  }
  // Rolls back the open transaction (if SQLite has not already) and returns `why`.
  Status Rollback(Status why) {
    if (sqlite3_get_autocommit(db_) == 0) {
      (void)rollback_->Bind().Step();
      rollback_->Reset();
    }
    return why;
  }

  std::string path_;
  SqliteOptions options_;
  sqlite3* db_ = nullptr;
  // Pages in the WAL after the last commit (the WAL hook's count).
  int wal_pages_ = 0;
  static constexpr int kIdleCheckpointPages = 1000;   // SQLite's own default threshold
  static constexpr int kBusyCheckpointPages = 16000;  // ~64 MB: checkpoint even under load
  std::unique_ptr<Statement> select_, acquire_, insert_, write_, begin_, commit_, rollback_;
  std::unique_ptr<Statement> backup_slots_, backup_put_, backup_at_, backups_, txn_;
  std::vector<std::unique_ptr<Statement>*> statements_;
};

// The store's thread and its queue.
class SqliteStore::Worker {
 public:
  using Job = Callback<void(Db&)>;
  // Most loads one transaction takes (a burst of joins).
  static constexpr std::size_t kMaxLoadsPerTransaction = 512;

  Worker(std::unique_ptr<Db> db, ProfileStore::Deliver deliver)
      : db_(std::move(db)), deliver_(std::move(deliver)) {
    thread_ = std::thread([this] {
      // Process signals (SIGTERM, SIGHUP) are for the server's signal thread, never this one:
      // a signal taken here would run its default action and end the process.
      sigset_t all;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, nullptr);
      Run();
    });
  }
  ~Worker() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  void Push(Job job) { Enqueue(std::move(job)); }
  void PushLoad(LoadRequest load) { Enqueue(std::move(load)); }
  // Runs `fn` on the store's thread and waits for it (Open and tests: never the kernel's calls).
  template <class F>
  auto Call(F&& fn) {
    using R = decltype(fn(std::declval<Db&>()));
    std::mutex m;
    std::condition_variable cv;
    std::optional<R> out;
    Push([&](Db& db) {
      R r = fn(db);
      std::lock_guard lock(m);
      out.emplace(std::move(r));
      cv.notify_one();
    });
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return out.has_value(); });
    return std::move(*out);
  }
  void Post(std::function<void()> fn) { deliver_(std::move(fn)); }

  std::atomic<std::uint64_t> loads{0}, busy{0}, batches{0}, writes{0}, stale{0}, failures{0};
  LatencyCounters load_latency, write_latency;
  std::size_t queued() const {
    std::lock_guard lock(mu_);
    return queued_;
  }

 private:
  using Item = std::variant<Job, LoadRequest>;

  void Enqueue(Item item) {
    {
      std::lock_guard lock(mu_);
      items_.push_back(std::move(item));
      ++queued_;
    }
    wake_.notify_one();
  }

  void Run() {
    for (;;) {
      Job job;
      std::vector<LoadRequest> loads;
      {
        std::unique_lock lock(mu_);
        // Quiet for a while: the moment for a checkpoint, which then never delays a request.
        if (!wake_.wait_for(lock, kQuiet, [&] { return stopping_ || !items_.empty(); })) {
          lock.unlock();
          db_->Checkpoint(/*idle=*/true);
          continue;
        }
        if (items_.empty()) {
          break;  // stopping, and everything queued ran
        }
        // Loads next to each other in the queue share a transaction; the order of the queue
        // is kept (a load never overtakes a write queued before it).
        while (!items_.empty() && std::holds_alternative<LoadRequest>(items_.front()) &&
               loads.size() < kMaxLoadsPerTransaction) {
          loads.push_back(std::move(std::get<LoadRequest>(items_.front())));
          items_.pop_front();
        }
        if (loads.empty()) {
          job = std::move(std::get<Job>(items_.front()));
          items_.pop_front();
        }
      }
      const std::size_t ran = loads.empty() ? 1 : loads.size();
      if (loads.empty()) {
        job(*db_);
      } else {
        RunLoads(loads);
      }
      {
        std::lock_guard lock(mu_);
        queued_ -= ran;
      }
      db_->Checkpoint(/*idle=*/false);  // only when the WAL grew past the busy threshold
    }
    db_.reset();  // closes the file on this thread (its last checkpoint)
  }

  // How long the queue stays empty before the store thread checkpoints.
  static constexpr std::chrono::milliseconds kQuiet{100};

  void RunLoads(std::vector<LoadRequest>& requests) {
    std::vector<LoadResult> results = db_->LoadMany(requests);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      ++loads;
      load_latency.Observe(requests[i].called);
      if (results[i].busy()) {
        ++busy;
      } else if (!results[i].status.ok()) {
        ++failures;
      }
      auto cb = std::make_shared<Callback<void(LoadResult)>>(std::move(requests[i].done));
      auto r = std::make_shared<LoadResult>(std::move(results[i]));
      deliver_([cb, r] { (*cb)(std::move(*r)); });
    }
  }

  std::unique_ptr<Db> db_;
  ProfileStore::Deliver deliver_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Item> items_;
  std::size_t queued_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

SqliteStore::SqliteStore(std::string path) : path_(std::move(path)) {}

SqliteStore::~SqliteStore() { worker_.reset(); }

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path, Deliver deliver,
                                                       SqliteOptions options) {
  std::unique_ptr<SqliteStore> store(new SqliteStore(path));
  store->worker_ =
      std::make_unique<Worker>(std::make_unique<Db>(path, std::move(options)), std::move(deliver));
  Status s = store->worker_->Call([](Db& db) { return db.Open(); });
  if (!s.ok()) {
    return s;
  }
  LogScope("Profiles").Info("profile database {} open (WAL)", path);
  return store;
}

void SqliteStore::Load(std::string key, std::string owner, std::chrono::milliseconds ttl,
                       Callback<void(LoadResult)> done) {
  worker_->PushLoad(LoadRequest{std::move(key), std::move(owner), ttl, std::move(done),
                                std::chrono::steady_clock::now()});
}

void SqliteStore::Write(std::vector<store::Write> batch,
                        Callback<void(Status, std::vector<WriteResult>)> done) {
  auto cb = std::make_shared<Callback<void(Status, std::vector<WriteResult>)>>(std::move(done));
  auto ops = std::make_shared<std::vector<store::Write>>(std::move(batch));
  worker_->Push([this, ops, cb, called = std::chrono::steady_clock::now()](Db& db) {
    auto results = std::make_shared<std::vector<WriteResult>>();
    auto s = std::make_shared<Status>(db.Write(*ops, *results));
    worker_->write_latency.Observe(called);
    if (s->ok()) {
      ++worker_->batches;
      for (const WriteResult& w : *results) {
        ++(w.status.ok() ? worker_->writes : worker_->stale);
      }
    } else {
      ++worker_->failures;
    }
    worker_->Post([cb, s, results] { (*cb)(std::move(*s), std::move(*results)); });
  });
}

void SqliteStore::Read(std::string key, Callback<void(Result<Record>)> done) {
  auto cb = std::make_shared<Callback<void(Result<Record>)>>(std::move(done));
  worker_->Push([this, key = std::move(key), cb](Db& db) {
    auto r = std::make_shared<Result<Record>>(db.Read(key));
    worker_->Post([cb, r] { (*cb)(std::move(*r)); });
  });
}

void SqliteStore::ListBackups(std::string key, Callback<void(Result<std::vector<Backup>>)> done) {
  auto cb = std::make_shared<Callback<void(Result<std::vector<Backup>>)>>(std::move(done));
  worker_->Push([this, key = std::move(key), cb](Db& db) {
    auto r = std::make_shared<Result<std::vector<Backup>>>(db.Backups(key));
    worker_->Post([cb, r] { (*cb)(std::move(*r)); });
  });
}

void SqliteStore::Transact(std::string id, std::vector<store::Write> batch,
                           Callback<void(Status, std::vector<WriteResult>)> done) {
  auto cb = std::make_shared<Callback<void(Status, std::vector<WriteResult>)>>(std::move(done));
  auto ops = std::make_shared<std::vector<store::Write>>(std::move(batch));
  worker_->Push(
      [this, id = std::move(id), ops, cb, called = std::chrono::steady_clock::now()](Db& db) {
        auto results = std::make_shared<std::vector<WriteResult>>();
        auto s = std::make_shared<Status>(db.Transact(id, *ops, *results));
        worker_->write_latency.Observe(called);
        if (s->ok()) {
          ++worker_->batches;
          worker_->writes += ops->size();
        }
        worker_->Post([cb, s, results] { (*cb)(std::move(*s), std::move(*results)); });
      });
}

void SqliteStore::ReleaseAbandoned(
    Abandoned abandoned,
    Callback<void(Result<std::vector<std::pair<std::string, std::size_t>>>)> done) {
  using Ended = Result<std::vector<std::pair<std::string, std::size_t>>>;
  auto cb = std::make_shared<Callback<void(Ended)>>(std::move(done));
  worker_->Push([this, abandoned = std::move(abandoned), cb](Db& db) {
    auto r = std::make_shared<Ended>(db.ReleaseAbandoned(abandoned));
    worker_->Post([cb, r] { (*cb)(std::move(*r)); });
  });
}

StoreStats SqliteStore::stats() const {
  StoreStats s;
  s.loads = worker_->loads;
  s.busy = worker_->busy;
  s.batches = worker_->batches;
  s.writes = worker_->writes;
  s.stale = worker_->stale;
  s.failures = worker_->failures;
  s.queued = worker_->queued();
  s.load_latency = worker_->load_latency.Read();
  s.write_latency = worker_->write_latency.Read();
  return s;
}

void SqliteStore::SetMaxPageCount(std::uint32_t pages) {
  worker_->Call([pages](Db& db) {
    db.SetMaxPageCount(pages);
    return true;
  });
}

}  // namespace molt::kernel::store
