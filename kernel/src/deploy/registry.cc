// SPDX-License-Identifier: Apache-2.0
// Registry: builds, branches and deployments in registry.db, build files under builds/.
#include "kernel/src/deploy/registry.h"

#include <sqlite3.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <limits>
#include <utility>

#include "kernel/src/core/clock.h"
#include "kernel/src/loader/build.h"
#include "kernel/src/loader/build_archive.h"
#include "kernel/src/store/sqlite_statement.h"

namespace molt::kernel::deploy {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using Statement = store::SqliteStatement;

constexpr int kLayout = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS builds(
  sha256 TEXT PRIMARY KEY, id TEXT NOT NULL, manifest TEXT NOT NULL, bytes INTEGER NOT NULL,
  added_ms INTEGER NOT NULL, failed_here TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS builds_by_id ON builds(id, added_ms);
CREATE TABLE IF NOT EXISTS branches(
  name TEXT PRIMARY KEY, head TEXT NOT NULL, seq INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
  previous TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS deployments(
  seq INTEGER PRIMARY KEY, branch TEXT NOT NULL, build TEXT NOT NULL, build_id TEXT NOT NULL,
  kind TEXT NOT NULL, by TEXT NOT NULL, message TEXT NOT NULL, at_ms INTEGER NOT NULL,
  sent_ms INTEGER NOT NULL, sig TEXT NOT NULL, sig_fallback TEXT NOT NULL, result TEXT NOT NULL,
  reason TEXT NOT NULL, protocol TEXT NOT NULL, report TEXT NOT NULL);
)sql";

constexpr const char* kBuildColumns = "sha256, id, manifest, bytes, added_ms, failed_here";
constexpr const char* kDeploymentColumns =
    "seq, branch, build, build_id, kind, by, message, at_ms, sent_ms, sig, sig_fallback, result, "
    "reason, protocol, report, rollout";

bool IsHexPrefix(std::string_view s) {
  return s.size() >= 8 && s.size() <= 64 &&
         s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

}  // namespace

namespace {

StoredBuild ReadBuildRow(const auto& st) {
  StoredBuild b;
  b.sha256 = st.Text(0);
  b.id = st.Text(1);
  b.manifest = st.Text(2);
  b.bytes = static_cast<std::uint64_t>(st.Int(3));
  b.added_ms = st.Int(4);
  b.failed_here = st.Text(5);
  return b;
}

Deployment ReadDeploymentRow(const auto& st) {
  Deployment d;
  d.seq = static_cast<std::uint64_t>(st.Int(0));
  d.branch = st.Text(1);
  d.build = st.Text(2);
  d.build_id = st.Text(3);
  d.kind = st.Text(4);
  d.by = st.Text(5);
  d.message = st.Text(6);
  d.at_ms = st.Int(7);
  d.sent_ms = static_cast<std::uint64_t>(st.Int(8));
  d.sig = st.Text(9);
  d.sig_fallback = st.Text(10);
  d.result = st.Text(11);
  d.reason = st.Text(12);
  d.protocol = st.Text(13);
  d.report = st.Text(14);
  d.rollout = static_cast<std::uint32_t>(st.Int(15));
  return d;
}

Branch ReadBranchRow(const auto& st) {
  Branch b;
  b.name = st.Text(0);
  b.head = st.Text(1);
  b.seq = static_cast<std::uint64_t>(st.Int(2));
  b.updated_ms = st.Int(3);
  std::error_code ec;
  const json::value prev = json::parse(st.Text(4), ec);
  if (!ec && prev.is_array()) {
    for (const json::value& p : prev.as_array()) {
      if (const json::object* o = p.if_object(); o != nullptr && o->contains("build")) {
        b.previous.push_back({std::string(o->at("build").as_string()),
                              static_cast<std::uint64_t>(o->at("seq").to_number<std::int64_t>())});
      }
    }
  }
  return b;
}

}  // namespace

std::string StoredBuild::ManifestField(std::string_view key) const {
  std::error_code ec;
  const json::value doc = json::parse(manifest, ec);
  const json::value* v = !ec && doc.is_object() ? doc.as_object().if_contains(key) : nullptr;
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

bool StoredBuild::dirty() const {
  std::error_code ec;
  const json::value doc = json::parse(manifest, ec);
  const json::value* v = !ec && doc.is_object() ? doc.as_object().if_contains("dirty") : nullptr;
  return v != nullptr && v->is_bool() && v->as_bool();
}

json::object StoredBuild::ToJson() const {
  std::error_code ec;
  const json::value doc = json::parse(manifest, ec);
  const json::object empty;
  const json::object& m = !ec && doc.is_object() ? doc.as_object() : empty;
  auto text = [&](std::string_view key) {
    const json::value* v = m.if_contains(key);
    return v != nullptr && v->is_string() ? json::value(v->as_string()) : json::value("");
  };
  json::array plugins;
  if (const json::value* p = m.if_contains("plugins"); p != nullptr && p->is_array()) {
    for (const json::value& e : p->as_array()) {
      if (const json::object* o = e.if_object(); o != nullptr) {
        json::object entry;
        for (const char* key : {"file", "name", "version", "kind", "abi"}) {
          if (const json::value* v = o->if_contains(key); v != nullptr) {
            entry[key] = *v;
          }
        }
        plugins.push_back(std::move(entry));
      }
    }
  }
  return {{"sha256", sha256},
          {"id", id},
          {"branch", text("branch")},
          {"channel", text("channel")},
          {"commit", text("commit")},
          {"dirty", dirty()},
          {"protocol", text("protocol")},
          {"built_at", text("built_at")},
          {"bytes", bytes},
          {"plugins", std::move(plugins)},
          {"added_ms", added_ms},
          {"failed_here", failed_here.empty() ? json::value(nullptr) : json::value(failed_here)}};
}

json::object Deployment::ToJson() const {
  std::error_code ec;
  json::value r = report.empty() ? json::value(nullptr) : json::parse(report, ec);
  if (ec) {
    r = nullptr;
  }
  return {{"seq", seq},
          {"branch", branch},
          {"build", build},
          {"build_id", build_id},
          {"kind", kind},
          {"by", by},
          {"message", message},
          {"at_ms", at_ms},
          {"signed", !sig.empty() || !sig_fallback.empty()},
          {"result", result},
          {"reason", reason},
          {"protocol", protocol},
          {"rollout", rollout},
          {"report", std::move(r)}};
}

Result<std::unique_ptr<Registry>> Registry::Open(const std::string& dir) {
  std::error_code ec;
  for (const char* sub : {"builds", "uploads"}) {
    fs::create_directories(fs::path(dir) / sub, ec);
    if (ec) {
      return Status::IoError("registry \"" + dir + "\": cannot create " + sub + ": " +
                             ec.message());
    }
  }
  const std::string path = (fs::path(dir) / "registry.db").string();
  MOLT_ASSIGN_OR_RETURN(sqlite3 * db, store::OpenSqliteFile(path, "registry"));
  std::unique_ptr<Registry> r(new Registry(dir, db));
  MOLT_RETURN_IF_ERROR(r->Exec(kSchema));
  const std::uint64_t layout = r->Meta("layout");
  if (layout > kLayout) {
    return Status::FailedPrecondition("registry \"" + path + "\" has layout " +
                                      std::to_string(layout) + ", newer than this moltd's " +
                                      std::to_string(kLayout) + ": run a newer moltd");
  }
  // A rollout's share (molt deploy --rollout), added within layout 1: a column with a default,
  // which every reader of layout 1 passes over.
  Statement rollout(db,
                    "SELECT count(*) FROM pragma_table_info('deployments') WHERE name = "
                    "'rollout'");
  if (rollout.Step() == SQLITE_ROW && rollout.Int(0) == 0) {
    MOLT_RETURN_IF_ERROR(
        r->Exec("ALTER TABLE deployments ADD COLUMN rollout INTEGER NOT NULL DEFAULT 100"));
  }
  MOLT_RETURN_IF_ERROR(r->SetMeta("layout", kLayout));
  // Uploads a killed server left half-written.
  for (const fs::directory_entry& e : fs::directory_iterator(r->upload_dir_, ec)) {
    fs::remove_all(e.path(), ec);
  }
  return r;
}

Registry::Registry(std::string dir, sqlite3* db)
    : dir_(std::move(dir)),
      builds_dir_((fs::path(dir_) / "builds").string()),
      upload_dir_((fs::path(dir_) / "uploads").string()),
      db_(db) {}

Registry::~Registry() { sqlite3_close(db_); }

Status Registry::Exec(const char* sql) const {
  return store::ExecSql(db_, sql, "registry", dir_ + "/registry.db");
}

Status Registry::Failed(const char* what) const {
  return Status::IoError(std::string("registry \"") + dir_ + "/registry.db\": " + what + ": " +
                         sqlite3_errmsg(db_));
}

std::uint64_t Registry::Meta(const char* key) const {
  Statement st(db_, "SELECT value FROM meta WHERE key = ?1");
  st.Bind(1, std::string_view(key));
  return st.Step() == SQLITE_ROW ? static_cast<std::uint64_t>(st.Int(0)) : 0;
}

Status Registry::SetMeta(const char* key, std::uint64_t value) const {
  Statement st(db_,
               "INSERT INTO meta(key, value) VALUES(?1, ?2) "
               "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  st.Bind(1, std::string_view(key)).Bind(2, value);
  return st.Step() == SQLITE_DONE ? Status::Ok() : Failed("cannot write meta");
}

std::string Registry::BuildPath(std::string_view sha256) const {
  return (fs::path(builds_dir_) / (std::string(sha256) + ".molt")).string();
}

Result<StoredBuild> Registry::AddBuild(const std::string& file, bool* was_new) {
  std::error_code ec;
  struct Remove {
    const std::string& file;
    ~Remove() {
      std::error_code e;
      fs::remove(file, e);
    }
  } remove{file};
  const std::string scratch = (fs::path(upload_dir_) / "verify").string();
  MOLT_ASSIGN_OR_RETURN(std::string manifest, loader::VerifyBuildFile(file, scratch));
  StoredBuild b;
  b.sha256 = loader::Sha256Hex(manifest);
  if (std::optional<StoredBuild> stored = FindBuild(b.sha256); stored.has_value()) {
    if (was_new != nullptr) {
      *was_new = false;
    }
    return *stored;
  }
  b.manifest = std::move(manifest);
  b.id = b.ManifestField("build");
  b.bytes = fs::file_size(file, ec);
  b.added_ms = WallMs();
  const std::string to = BuildPath(b.sha256);
  MOLT_RETURN_IF_ERROR(loader::SyncPath(file));
  fs::rename(file, to, ec);
  if (ec) {
    return Status::IoError("cannot store the build as " + to + ": " + ec.message());
  }
  MOLT_RETURN_IF_ERROR(loader::SyncPath(builds_dir_));
  Statement st(
      db_, std::string("INSERT INTO builds(") + kBuildColumns + ") VALUES(?1, ?2, ?3, ?4, ?5, '')");
  st.Bind(1, b.sha256).Bind(2, b.id).Bind(3, b.manifest).Bind(4, b.bytes).Bind(5, b.added_ms);
  if (st.Step() != SQLITE_DONE) {
    return Failed("cannot record the build");
  }
  if (was_new != nullptr) {
    *was_new = true;
  }
  return b;
}

Result<Registry::Pruned> Registry::Prune(const std::set<std::string>& keep) {
  std::set<std::string> kept = keep;
  for (const Branch& b : Branches()) {
    kept.insert(b.head);
    for (const Branch::Previous& p : b.previous) {
      kept.insert(p.build);
    }
  }
  for (const Deployment& d : Deployments("", kDeploymentsKept)) {
    kept.insert(d.build);
  }
  std::set<std::string> stored;
  Pruned pruned;
  std::size_t newest = 0;
  for (const StoredBuild& b : Builds(std::numeric_limits<std::size_t>::max())) {
    stored.insert(b.sha256);
    if (newest++ < kNewestBuildsKept || kept.count(b.sha256) > 0) {
      continue;
    }
    Statement st(db_, "DELETE FROM builds WHERE sha256 = ?1");
    st.Bind(1, b.sha256);
    if (st.Step() != SQLITE_DONE) {
      return Failed("cannot remove a pruned build");
    }
    std::error_code ec;
    fs::remove(BuildPath(b.sha256), ec);
    ++pruned.builds;
    pruned.bytes += b.bytes;
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(builds_dir_, ec)) {
    const fs::path& f = e.path();
    if (f.extension() == ".molt" && stored.count(f.stem().string()) == 0) {
      std::error_code rm;
      fs::remove(f, rm);
    }
  }
  return pruned;
}

std::optional<StoredBuild> Registry::FindBuild(std::string_view name) const {
  const std::string base = std::string("SELECT ") + kBuildColumns + " FROM builds ";
  if (IsHexPrefix(name)) {
    Statement st(db_, base + "WHERE substr(sha256, 1, ?2) = ?1 LIMIT 2");
    st.Bind(1, name).Bind(2, static_cast<std::int64_t>(name.size()));
    if (st.Step() == SQLITE_ROW) {
      StoredBuild b = ReadBuildRow(st);
      if (st.Step() != SQLITE_ROW) {  // a prefix names one build, or none
        return b;
      }
    }
  }
  Statement st(db_, base + "WHERE id = ?1 ORDER BY added_ms DESC, rowid DESC LIMIT 1");
  st.Bind(1, name);
  if (st.Step() == SQLITE_ROW) {
    return ReadBuildRow(st);
  }
  return std::nullopt;
}

std::vector<StoredBuild> Registry::Builds(std::size_t limit) const {
  Statement st(db_, std::string("SELECT ") + kBuildColumns +
                        " FROM builds ORDER BY added_ms DESC, rowid DESC LIMIT ?1");
  st.Bind(1, static_cast<std::int64_t>(limit));
  std::vector<StoredBuild> out;
  while (st.Step() == SQLITE_ROW) {
    out.push_back(ReadBuildRow(st));
  }
  return out;
}

Status Registry::MarkFailed(const std::string& sha256, const std::string& why) {
  Statement st(db_, "UPDATE builds SET failed_here = ?2 WHERE sha256 = ?1");
  st.Bind(1, sha256).Bind(2, why.empty() ? std::string("failed") : why);
  return st.Step() == SQLITE_DONE ? Status::Ok() : Failed("cannot mark the build failed");
}

Status Registry::ClearFailed(const std::string& sha256) {
  Statement st(db_, "UPDATE builds SET failed_here = '' WHERE sha256 = ?1");
  st.Bind(1, sha256);
  return st.Step() == SQLITE_DONE ? Status::Ok() : Failed("cannot clear the failed mark");
}

std::uint64_t Registry::last_seq() const { return Meta("last_seq"); }
std::uint64_t Registry::applied_seq() const { return Meta("applied_seq"); }
Status Registry::SetApplied(std::uint64_t seq) { return SetMeta("applied_seq", seq); }
std::uint64_t Registry::mirrored_seq() const { return Meta("fleet_seq"); }
Status Registry::SetMirrored(std::uint64_t seq) { return SetMeta("fleet_seq", seq); }

Result<Deployment> Registry::Record(Deployment d) { return Put(std::move(d), false); }
Result<Deployment> Registry::Mirror(Deployment d) { return Put(std::move(d), true); }

Result<Deployment> Registry::Put(Deployment d, bool mirror) {
  MOLT_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  auto fail = [this](Status s) {
    Exec("ROLLBACK");
    return s;
  };
  const std::uint64_t last = last_seq();
  if (mirror) {
    if (FindDeployment(d.seq).has_value()) {
      return fail(Status::AlreadyExists("#" + std::to_string(d.seq) + " is recorded here"));
    }
  } else if (d.seq == 0) {
    d.seq = last + 1;
  } else if (d.seq <= last) {
    return fail(Status::Rejected("seq " + std::to_string(d.seq) +
                                 " was taken already (the last is #" + std::to_string(last) +
                                 "; the next is " + std::to_string(last + 1) + ")"));
  }
  std::optional<Branch> branch = FindBranch(d.branch);
  if (!branch.has_value() && Branches().size() >= kMaxBranches) {
    return fail(Status::Rejected("the registry holds " + std::to_string(kMaxBranches) +
                                 " branches already: deploy to one of them"));
  }
  if (d.at_ms == 0) {
    d.at_ms = WallMs();
  }
  // A mirrored deployment older than its branch's head (one the fleet recorded while this
  // server caught up from a later head) is kept in the history and moves nothing.
  const bool moves_head = !branch.has_value() || d.seq > branch->seq;
  json::array previous;
  if (branch.has_value()) {
    previous.push_back(json::object{{"build", branch->head}, {"seq", branch->seq}});
    for (const Branch::Previous& p : branch->previous) {
      if (previous.size() >= kPreviousHeads) {
        break;
      }
      previous.push_back(json::object{{"build", p.build}, {"seq", p.seq}});
    }
  }
  Statement head(db_,
                 "INSERT INTO branches(name, head, seq, updated_ms, previous) "
                 "VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(name) DO UPDATE SET head = excluded.head, "
                 "seq = excluded.seq, updated_ms = excluded.updated_ms, previous = "
                 "excluded.previous");
  head.Bind(1, d.branch)
      .Bind(2, d.build)
      .Bind(3, d.seq)
      .Bind(4, d.at_ms)
      .Bind(5, json::serialize(previous));
  if (moves_head && head.Step() != SQLITE_DONE) {
    return fail(Failed("cannot move the head"));
  }
  Statement ins(db_, std::string("INSERT INTO deployments(") + kDeploymentColumns +
                         ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
                         "?15, ?16)");
  ins.Bind(1, d.seq)
      .Bind(2, d.branch)
      .Bind(3, d.build)
      .Bind(4, d.build_id)
      .Bind(5, d.kind)
      .Bind(6, d.by)
      .Bind(7, d.message)
      .Bind(8, d.at_ms)
      .Bind(9, d.sent_ms)
      .Bind(10, d.sig)
      .Bind(11, d.sig_fallback)
      .Bind(12, d.result)
      .Bind(13, d.reason)
      .Bind(14, d.protocol)
      .Bind(15, d.report)
      .Bind(16, static_cast<std::int64_t>(d.rollout));
  if (ins.Step() != SQLITE_DONE) {
    return fail(Failed("cannot record the deployment"));
  }
  Statement trim(db_,
                 "DELETE FROM deployments WHERE seq NOT IN (SELECT seq FROM deployments ORDER BY "
                 "seq DESC LIMIT ?1)");
  trim.Bind(1, static_cast<std::int64_t>(kDeploymentsKept));
  if (trim.Step() != SQLITE_DONE) {
    return fail(Failed("cannot trim the deployments"));
  }
  if (Status s = SetMeta("last_seq", std::max(last, d.seq)); !s.ok()) {
    return fail(s);
  }
  MOLT_RETURN_IF_ERROR(Exec("COMMIT"));
  return d;
}

Status Registry::SetRollout(std::uint64_t seq, std::uint32_t rollout) {
  Statement st(db_, "UPDATE deployments SET rollout = ?2 WHERE seq = ?1");
  st.Bind(1, seq).Bind(2, static_cast<std::int64_t>(rollout));
  return st.Step() == SQLITE_DONE ? Status::Ok() : Failed("cannot widen the rollout");
}

Status Registry::SetResult(std::uint64_t seq, const std::string& result, const std::string& reason,
                           const std::string& report) {
  Statement st(db_, "UPDATE deployments SET result = ?2, reason = ?3, report = ?4 WHERE seq = ?1");
  st.Bind(1, seq).Bind(2, result).Bind(3, reason).Bind(4, report);
  return st.Step() == SQLITE_DONE ? Status::Ok() : Failed("cannot record the result");
}

std::optional<Branch> Registry::FindBranch(std::string_view name) const {
  Statement st(db_, "SELECT name, head, seq, updated_ms, previous FROM branches WHERE name = ?1");
  st.Bind(1, name);
  if (st.Step() == SQLITE_ROW) {
    return ReadBranchRow(st);
  }
  return std::nullopt;
}

std::vector<Branch> Registry::Branches() const {
  Statement st(db_, "SELECT name, head, seq, updated_ms, previous FROM branches ORDER BY name");
  std::vector<Branch> out;
  while (st.Step() == SQLITE_ROW) {
    out.push_back(ReadBranchRow(st));
  }
  return out;
}

std::vector<Deployment> Registry::QueryDeployments(const char* where, std::string_view arg,
                                                   std::int64_t n) const {
  Statement st(db_, std::string("SELECT ") + kDeploymentColumns + " FROM deployments " + where +
                        " ORDER BY seq DESC LIMIT ?2");
  st.Bind(1, arg).Bind(2, n);
  std::vector<Deployment> out;
  while (st.Step() == SQLITE_ROW) {
    out.push_back(ReadDeploymentRow(st));
  }
  return out;
}

std::vector<Deployment> Registry::Deployments(std::string_view branch, std::size_t limit) const {
  return QueryDeployments(branch.empty() ? "WHERE ?1 = ''" : "WHERE branch = ?1", branch,
                          static_cast<std::int64_t>(limit));
}

std::optional<Deployment> Registry::FindDeployment(std::uint64_t seq) const {
  std::vector<Deployment> d =
      QueryDeployments("WHERE seq = CAST(?1 AS INTEGER)", std::to_string(seq), 1);
  if (d.empty()) {
    return std::nullopt;
  }
  return d.front();
}

}  // namespace molt::kernel::deploy
