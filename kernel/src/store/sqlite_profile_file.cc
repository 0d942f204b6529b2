// SPDX-License-Identifier: Apache-2.0
// SqliteProfileFile: the profile database's file, its layout, its transactions and its WAL
// (sqlite_profile_file.h). The WAL is checkpointed when the store's thread says its queue is
// quiet (Checkpoint), never inside a commit.
#include "kernel/src/store/sqlite_profile_file.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <utility>

#include "kernel/src/store/sqlite_prepared.h"

namespace molt::kernel::store {

namespace {

constexpr const char* kProfileTables = R"sql(
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

}  // namespace

SqliteProfileFile::SqliteProfileFile(std::string path, SqliteOptions options)
    : path_(std::move(path)), options_(std::move(options)) {}

SqliteProfileFile::~SqliteProfileFile() {
  begin_.reset();  // finalized before the close
  commit_.reset();
  rollback_.reset();
  sqlite3_close_v2(db_);
}

Status SqliteProfileFile::Open() {
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
  if (version > kLayout) {
    return Status::FailedPrecondition(fmt::format(
        "the profile database \"{}\" has layout {}, newer than this build's ({}): run the Molt "
        "release that wrote it, or restore a backup made for this one",
        path_, version, kLayout));
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
  MOLT_RETURN_IF_ERROR(Upgrade(version));
  SetMaxPageCount(options_.max_page_count);
  // Checkpoints run when the queue is idle (Checkpoint()), not inside a commit: SQLite's
  // automatic one would hold a transaction (a burst of joins) for the whole copy. Setting a
  // WAL hook turns the automatic checkpoint off.
  sqlite3_wal_hook(
      db_,
      [](void* self, sqlite3*, const char*, int pages) {
        static_cast<SqliteProfileFile*>(self)->wal_pages_ = pages;
        return SQLITE_OK;
      },
      this);
  MOLT_RETURN_IF_ERROR(Prepare(&begin_, "BEGIN IMMEDIATE"));
  MOLT_RETURN_IF_ERROR(Prepare(&commit_, "COMMIT"));
  return Prepare(&rollback_, "ROLLBACK");
}

Status SqliteProfileFile::Upgrade(int version) {
  if (version == 1) {  // layout 1 -> 2: the backup schedule in the row
    if (Status s = Exec("ALTER TABLE profiles ADD COLUMN backup_at_ms INTEGER NOT NULL DEFAULT 0");
        !s.ok()) {
      return s;
    }
  }
  MOLT_RETURN_IF_ERROR(Exec(kProfileTables));
  if (version < kLayout) {
    if (Status s = Exec(fmt::format("PRAGMA user_version={}", kLayout).c_str()); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

Status SqliteProfileFile::Prepare(std::unique_ptr<SqlitePrepared>* into, const char* sql) {
  auto st = std::make_unique<SqlitePrepared>();
  if (int rc = st->Prepare(db_, sql); rc != SQLITE_OK) {
    return Refused(rc, "cannot be used");
  }
  *into = std::move(st);
  return Status::Ok();
}

void SqliteProfileFile::Checkpoint(bool idle) {
  if (wal_pages_ >= (idle ? kIdleCheckpointPages : kBusyCheckpointPages)) {
    sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    wal_pages_ = 0;
  }
}

void SqliteProfileFile::SetMaxPageCount(std::uint32_t pages) {
  // 0 lifts the cap: SQLite's own maximum.
  const std::string sql = fmt::format("PRAGMA max_page_count={}", pages == 0 ? 4294967294u : pages);
  (void)Exec(sql.c_str());
}

int SqliteProfileFile::changes() const { return sqlite3_changes(db_); }

Status SqliteProfileFile::Failure(int rc, const std::string& what) const {
  const std::string text =
      fmt::format("{}: {}", what, db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
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

Status SqliteProfileFile::Refused(int rc, const char* what) const {
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

Status SqliteProfileFile::Pragma(const char* sql, int* out) {
  std::string text;
  Status s = PragmaText(sql, &text);
  *out = s.ok() ? std::atoi(text.c_str()) : 0;
  return s;
}

Status SqliteProfileFile::PragmaText(const char* sql, std::string* out) {
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

Status SqliteProfileFile::Exec(const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  return rc == SQLITE_OK ? Status::Ok() : Refused(rc, "cannot be set up");
}

Status SqliteProfileFile::Begin() {
  const int rc = begin_->Bind().Step();
  begin_->Reset();
  return rc == SQLITE_DONE ? Status::Ok() : Failure(rc, "starting a transaction");
}

Status SqliteProfileFile::Commit(const std::string& what) {
  const int rc = commit_->Bind().Step();
  commit_->Reset();
  if (rc == SQLITE_DONE) {
    return Status::Ok();
  }
  return Rollback(Failure(rc, what));
}

Status SqliteProfileFile::Rollback(Status why) {
  if (sqlite3_get_autocommit(db_) == 0) {
    (void)rollback_->Bind().Step();
    rollback_->Reset();
  }
  return why;
}

}  // namespace molt::kernel::store
