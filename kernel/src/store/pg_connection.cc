// SPDX-License-Identifier: Apache-2.0
// PgConnection: one libpq connection, its statements, and its failures as kernel statuses
// (pg_connection.h).
#include "kernel/src/store/pg_connection.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <poll.h>

#include <cstdlib>
#include <regex>

namespace molt::kernel::store {

namespace {

// libpq's text on one line: its line breaks and indents (a message continued, a DETAIL) become
// single spaces, the trailing newline goes.
std::string Trimmed(const char* text) {
  std::string out;
  for (const char* p = text != nullptr ? text : ""; *p != '\0'; ++p) {
    const bool space = *p == '\n' || *p == '\t' || *p == ' ';
    if (!space) {
      out += *p;
    } else if (!out.empty() && out.back() != ' ') {
      out += ' ';
    }
  }
  while (!out.empty() && out.back() == ' ') {
    out.pop_back();
  }
  return out;
}

}  // namespace

// --- PgParams ------------------------------------------------------------------------------------

PgParams& PgParams::Text(std::string_view v) {
  values_.emplace_back(v);
  nulls_.push_back(false);
  return *this;
}

PgParams& PgParams::Bytes(std::string_view v) {
  Text(v);
  formats_.resize(values_.size(), 0);
  formats_.back() = 1;
  binary_ = true;
  return *this;
}

std::vector<int> PgParams::Lengths() const {
  std::vector<int> out;
  for (const std::string& v : values_) {
    out.push_back(static_cast<int>(v.size()));
  }
  return out;
}

std::vector<int> PgParams::Formats() const {
  std::vector<int> out = formats_;
  out.resize(values_.size(), 0);
  return out;
}

PgParams& PgParams::Optional(const std::optional<std::string>& v) {
  if (v) {
    return Text(*v);
  }
  values_.emplace_back();
  nulls_.push_back(true);
  return *this;
}

PgParams& PgParams::Array(const std::vector<std::string_view>& items) {
  std::string out = "{";
  for (std::string_view item : items) {
    out += out.size() > 1 ? ",\"" : "\"";
    for (char c : item) {
      if (c == '"' || c == '\\') {
        out += '\\';
      }
      out += c;
    }
    out += '"';
  }
  out += '}';
  return Text(out);
}

std::vector<const char*> PgParams::Pointers() const {
  std::vector<const char*> p;
  for (std::size_t i = 0; i < values_.size(); ++i) {
    p.push_back(nulls_[i] ? nullptr : values_[i].c_str());
  }
  return p;
}

// --- PgRows --------------------------------------------------------------------------------------

PgRows::~PgRows() { PQclear(r_); }
int PgRows::size() const { return PQntuples(r_); }
bool PgRows::Null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
std::string PgRows::Text(int row, int col) const {
  return std::string(PQgetvalue(r_, row, col), static_cast<std::size_t>(PQgetlength(r_, row, col)));
}
std::int64_t PgRows::Int(int row, int col) const {
  return std::strtoll(PQgetvalue(r_, row, col), nullptr, 10);
}
std::int64_t PgRows::affected() const { return std::strtoll(PQcmdTuples(r_), nullptr, 10); }
std::string PgRows::Bytes(int row, int col) const {
  std::size_t n = 0;
  unsigned char* raw =
      PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(r_, row, col)), &n);
  if (raw == nullptr) {
    return std::string();
  }
  std::string out(reinterpret_cast<const char*>(raw), n);
  PQfreemem(raw);
  return out;
}

// --- PgConnection --------------------------------------------------------------------------------

PgConnection::PgConnection(std::string url, std::string what, int connect_timeout_seconds)
    : url_(std::move(url)),
      what_(std::move(what)),
      connect_timeout_seconds_(connect_timeout_seconds) {}

PgConnection::~PgConnection() {
  if (conn_ != nullptr) {
    PQfinish(conn_);
  }
}

std::string PgConnection::Redacted(const std::string& url) {
  static const std::regex uri(R"(^(postgres(?:ql)?://[^:@/]*:)[^@/]*@)");
  static const std::regex pair(R"((password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*))");
  std::string out = std::regex_replace(url, uri, "$1***@");
  return std::regex_replace(out, pair, "$1***");
}

std::string PgConnection::user() const { return conn_ != nullptr ? PQuser(conn_) : ""; }

Status PgConnection::Connect(bool prepare) {
  if (conn_ != nullptr) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
  in_transaction_ = false;
  const std::string timeout = std::to_string(connect_timeout_seconds_);
  const char* keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
  const char* values[] = {url_.c_str(), timeout.c_str(), "moltd", nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    const std::string why = conn_ != nullptr ? Trimmed(PQerrorMessage(conn_)) : "out of memory";
    if (conn_ != nullptr) {
      PQfinish(conn_);
      conn_ = nullptr;
    }
    return Status::IoError(
        fmt::format("cannot reach {} {}: {} (start PostgreSQL, or correct store.url / --database)",
                    what_, Redacted(url_), why));
  }
  // Errors and notices are ours to report, never libpq's to print on stderr.
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  return prepare ? Prepare() : Status::Ok();
}

Status PgConnection::Connected() {
  if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) {
    return Status::Ok();
  }
  // A server that did not answer a moment ago is not asked again at once: each call would wait
  // for the connect timeout (a server down behind TCP), and callers that run often would queue
  // behind it.
  const std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now();
  if (!last_failure_.ok() && now - failed_at_ < kReconnectGap) {
    return last_failure_;
  }
  Status s = Connect(/*prepare=*/true);
  last_failure_ = s;
  failed_at_ = now;
  return s;
}

Status PgConnection::Prepare() {
  for (const auto& [name, sql] : statements_) {
    PgRows r(PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr));
    if (PQresultStatus(r.r_) != PGRES_COMMAND_OK) {
      return Failure(r.r_, fmt::format("preparing the statement \"{}\"", name));
    }
  }
  return Status::Ok();
}

Status PgConnection::Failure(const pg_result* r, const std::string& what) {
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string code = state != nullptr ? state : "";
  const std::string message =
      Trimmed(r != nullptr && *PQresultErrorMessage(r) != '\0' ? PQresultErrorMessage(r)
                                                               : PQerrorMessage(conn_));
  const std::string text = fmt::format("{}: {}", what, message);
  // Every error the server reports has a SQLSTATE; one without came from libpq: the
  // connection broke under the call ("server closed the connection unexpectedly" after an
  // immediate restart, with PQstatus still CONNECTION_OK).
  if (conn_ != nullptr && code.empty()) {
    PQfinish(conn_);
    conn_ = nullptr;
    in_transaction_ = false;
  }
  if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK || code.starts_with("08") ||
      code.starts_with("57P")) {
    return Status::IoError(text + " (the connection is made again at the next call)");
  }
  if (code.starts_with("53")) {
    return Status::IoError(text + " (the database server is out of disk, memory or connections)");
  }
  if (code == "40001" || code == "40P01") {
    return Status::IoError(text + " (a conflict with another server's transaction)");
  }
  if (code == "42501") {
    return Status::FailedPrecondition(
        fmt::format("{} (the role {} lacks the right: docs/fleet.md, \"Roles\")", text, user()));
  }
  return Status::Internal(text);
}

Result<PgRows> PgConnection::Run(const char* name, const PgParams& params,
                                 const std::string& what) {
  const std::vector<const char*> values = params.Pointers();
  const std::vector<int> lengths = params.binary() ? params.Lengths() : std::vector<int>();
  const std::vector<int> formats = params.binary() ? params.Formats() : std::vector<int>();
  PgRows r(PQexecPrepared(conn_, name, params.size(), values.data(),
                          params.binary() ? lengths.data() : nullptr,
                          params.binary() ? formats.data() : nullptr, 0));
  const ExecStatusType st = PQresultStatus(r.r_);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    return Failure(r.r_, what);
  }
  return r;
}

Result<PgRows> PgConnection::Query(const std::string& sql, const std::string& what) {
  PgRows r(PQexec(conn_, sql.c_str()));
  const ExecStatusType st = PQresultStatus(r.r_);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    return Failure(r.r_, what);
  }
  return r;
}

Status PgConnection::Begin(const std::string& what) {
  MOLT_RETURN_IF_ERROR(Exec("BEGIN", what));
  in_transaction_ = true;
  return Status::Ok();
}

Status PgConnection::Commit(const std::string& what) {
  Status s = Exec("COMMIT", what);
  in_transaction_ = false;
  return s;
}

Status PgConnection::CreateTables(std::string_view layout, int version, std::string_view tables,
                                  std::string_view what) {
  const std::string doing = fmt::format("setting up {} in {}", what, Redacted(url_));
  MOLT_RETURN_IF_ERROR(Begin(doing));
  // pg_advisory_xact_lock's key: "molt" in ASCII.
  if (Status s = Exec("SELECT pg_advisory_xact_lock(1836019828)", doing); !s.ok()) {
    return Rollback(s);
  }
  if (Status s = Exec("CREATE TABLE IF NOT EXISTS molt_schema (name TEXT PRIMARY KEY, version "
                      "INTEGER NOT NULL)",
                      doing);
      !s.ok()) {
    return Rollback(s);
  }
  Result<PgRows> found =
      Query(fmt::format("SELECT version FROM molt_schema WHERE name = '{}'", layout), doing);
  if (!found.ok()) {
    return Rollback(found.status());
  }
  if (found->size() > 0 && found->Int(0, 0) > version) {
    return Rollback(Status::FailedPrecondition(fmt::format(
        "{} in {} have layout {}, newer than this build's ({}): run the Molt release that wrote "
        "them on every server",
        what, Redacted(url_), found->Int(0, 0), version)));
  }
  if (Status s = Exec(std::string(tables), doing); !s.ok()) {
    return Rollback(s);
  }
  if (Status s = Exec(fmt::format("INSERT INTO molt_schema (name, version) VALUES ('{}', {}) ON "
                                  "CONFLICT (name) DO UPDATE SET version = {}",
                                  layout, version, version),
                      doing);
      !s.ok()) {
    return Rollback(s);
  }
  return Commit(doing);
}

Status PgConnection::Listen(std::string_view channel) {
  return Exec(fmt::format("LISTEN {}", channel), fmt::format("listening on {}", channel));
}

Result<std::vector<std::string>> PgConnection::Notifications(int timeout_ms) {
  std::vector<std::string> out;
  auto take = [&] {
    while (PGnotify* n = PQnotifies(conn_)) {
      out.emplace_back(n->extra != nullptr ? n->extra : "");
      PQfreemem(n);
    }
  };
  if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    return Status::IoError(fmt::format("{} {}: not connected", what_, Redacted(url_)));
  }
  take();
  if (!out.empty()) {
    return out;
  }
  pollfd p{PQsocket(conn_), POLLIN, 0};
  if (p.fd < 0 || ::poll(&p, 1, timeout_ms) < 0) {
    return Status::IoError(fmt::format("{} {}: no socket to wait on", what_, Redacted(url_)));
  }
  if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0 &&
      (PQconsumeInput(conn_) == 0 || PQstatus(conn_) != CONNECTION_OK)) {
    return Status::IoError(fmt::format("{} {}: the connection was lost: {}", what_, Redacted(url_),
                                       Trimmed(PQerrorMessage(conn_))));
  }
  take();
  return out;
}

Status PgConnection::Rollback(Status why) {
  if (in_transaction_ && conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) {
    (void)Exec("ROLLBACK", "rolling back");
  }
  in_transaction_ = false;
  return why;
}

}  // namespace molt::kernel::store
