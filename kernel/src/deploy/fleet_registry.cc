// SPDX-License-Identifier: Apache-2.0
// FleetRegistry: the fleet's seq, builds, deployments, heads and results on PostgreSQL
// (fleet_registry.h).
#include "kernel/src/deploy/fleet_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <utility>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/store/pg_connection.h"
#include "kernel/src/store/pg_listener.h"

namespace molt::kernel::deploy {
namespace {

// The layout this build writes (molt_schema, name 'registry').
constexpr int kFleetLayout = 1;
constexpr const char* kFleetTables = R"sql(
CREATE TABLE IF NOT EXISTS molt_registry_seq (
  one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), last_seq BIGINT NOT NULL);
INSERT INTO molt_registry_seq (one, last_seq) VALUES (TRUE, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS molt_builds (
  sha256 TEXT PRIMARY KEY, id TEXT NOT NULL, manifest TEXT NOT NULL, bytes BIGINT NOT NULL,
  added_ms BIGINT NOT NULL, data BYTEA NOT NULL);
CREATE INDEX IF NOT EXISTS molt_builds_by_id ON molt_builds (id, added_ms);
CREATE TABLE IF NOT EXISTS molt_deployments (
  seq BIGINT PRIMARY KEY, branch TEXT NOT NULL, build TEXT NOT NULL, build_id TEXT NOT NULL,
  kind TEXT NOT NULL, by_whom TEXT NOT NULL, message TEXT NOT NULL, at_ms BIGINT NOT NULL,
  sent_ms BIGINT NOT NULL, sig TEXT NOT NULL, sig_fallback TEXT NOT NULL, protocol TEXT NOT NULL,
  rollout INTEGER NOT NULL DEFAULT 100, origin TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS molt_branches (
  name TEXT PRIMARY KEY, head TEXT NOT NULL, seq BIGINT NOT NULL, updated_ms BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS molt_deploy_results (
  seq BIGINT NOT NULL, server_id TEXT NOT NULL, result TEXT NOT NULL, reason TEXT NOT NULL,
  report TEXT NOT NULL, at_ms BIGINT NOT NULL, PRIMARY KEY (seq, server_id));
)sql";

constexpr const char* kFleetDeploymentColumns =
    "seq, branch, build, build_id, kind, by_whom, message, at_ms, sent_ms, sig, sig_fallback, "
    "protocol, rollout";

std::vector<std::pair<std::string, std::string>> FleetStatements() {
  return {
      {"has_build", "SELECT 1 FROM molt_builds WHERE sha256 = $1"},
      {"put_build",
       "INSERT INTO molt_builds (sha256, id, manifest, bytes, added_ms, data) VALUES ($1, $2, $3, "
       "$4::bigint, $5::bigint, $6) ON CONFLICT (sha256) DO NOTHING"},
      {"find_build",
       "SELECT data FROM molt_builds WHERE sha256 = $1 OR (length($1) >= 8 AND sha256 LIKE $1 || "
       "'%' AND $1 ~ '^[0-9a-f]+$') OR id = $1 ORDER BY (sha256 = $1) DESC, added_ms DESC LIMIT "
       "1"},
      {"claim", "SELECT last_seq FROM molt_registry_seq FOR UPDATE"},
      {"set_seq", "UPDATE molt_registry_seq SET last_seq = $1::bigint"},
      {"last_seq", "SELECT last_seq FROM molt_registry_seq"},
      {"branch_seq",
       "SELECT seq, (SELECT count(*) FROM molt_branches) FROM molt_branches WHERE "
       "name = $1 UNION ALL SELECT -1, count(*) FROM molt_branches"},
      {"insert",
       fmt::format("INSERT INTO molt_deployments ({}, origin) VALUES ($1::bigint, $2, $3, $4, $5, "
                   "$6, $7, $8::bigint, $9::bigint, $10, $11, $12, $13::integer, $14)",
                   kFleetDeploymentColumns)},
      {"widen",
       "UPDATE molt_deployments SET rollout = $2::integer WHERE seq = $1::bigint AND rollout < "
       "$2::integer AND seq = (SELECT seq FROM molt_branches WHERE name = "
       "molt_deployments.branch)"},
      {"head",
       "INSERT INTO molt_branches (name, head, seq, updated_ms) VALUES ($1, $2, $3::bigint, "
       "$4::bigint) ON CONFLICT (name) DO UPDATE SET head = EXCLUDED.head, seq = EXCLUDED.seq, "
       "updated_ms = EXCLUDED.updated_ms WHERE molt_branches.seq < EXCLUDED.seq"},
      {"trim", fmt::format("DELETE FROM molt_deployments WHERE seq <= (SELECT last_seq FROM "
                           "molt_registry_seq) - {} AND seq NOT IN (SELECT seq FROM molt_branches)",
                           FleetRegistry::kDeploymentsKept)},
      {"prune",
       fmt::format("DELETE FROM molt_builds WHERE sha256 NOT IN (SELECT build FROM "
                   "molt_deployments) AND sha256 NOT IN (SELECT sha256 FROM molt_builds ORDER "
                   "BY added_ms DESC LIMIT {})",
                   FleetRegistry::kNewestBuildsKept)},
      {"notify", fmt::format("SELECT pg_notify('{}', $1)", FleetRegistry::kChannel)},
      {"since", fmt::format("SELECT {} FROM molt_deployments WHERE seq > $1::bigint ORDER BY seq "
                            "LIMIT $2::bigint",
                            kFleetDeploymentColumns)},
      {"results",
       "SELECT server_id, result, reason, at_ms FROM molt_deploy_results WHERE seq = $1::bigint "
       "ORDER BY server_id"},
      {"result",
       "INSERT INTO molt_deploy_results (seq, server_id, result, reason, report, at_ms) VALUES "
       "($1::bigint, $2, $3, $4, $5, $6::bigint) ON CONFLICT (seq, server_id) DO UPDATE SET "
       "result = EXCLUDED.result, reason = EXCLUDED.reason, report = EXCLUDED.report, at_ms = "
       "EXCLUDED.at_ms"},
  };
}

}  // namespace

FleetRegistry::FleetRegistry(std::string url, std::string server_id)
    : url_(std::move(url)),
      server_id_(std::move(server_id)),
      db_(std::make_unique<store::PgConnection>(url_, "the fleet's registry", 2)) {
  db_->set_statements(FleetStatements());
}

FleetRegistry::~FleetRegistry() { StopWatching(); }

void FleetRegistry::StopWatching() {
  if (watcher_ != nullptr) {
    watcher_->Stop();
  }
}

Status FleetRegistry::Open() {
  MOLT_RETURN_IF_ERROR(db_->Connect(/*prepare=*/false));
  MOLT_RETURN_IF_ERROR(
      db_->CreateTables("registry", kFleetLayout, kFleetTables, "the fleet's registry tables"));
  return db_->Prepare();
}

Status FleetRegistry::PutBuild(const StoredBuild& b, const std::string& file) {
  const std::string what = fmt::format("storing build {} in the fleet's registry", b.id);
  MOLT_RETURN_IF_ERROR(db_->Connected());
  MOLT_ASSIGN_OR_RETURN(store::PgRows has,
                        db_->Run("has_build", store::PgParams().Text(b.sha256), what));
  if (has.size() > 0) {
    return Status::Ok();
  }
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return Status::IoError(fmt::format("{}: cannot read {}", what, file));
  }
  return db_
      ->Run("put_build",
            store::PgParams()
                .Text(b.sha256)
                .Text(b.id)
                .Text(b.manifest)
                .Int(static_cast<std::int64_t>(bytes.size()))
                .Int(WallMs())
                .Bytes(bytes),
            what)
      .status();
}

Status FleetRegistry::FetchBuild(const std::string& name, const std::string& file) {
  const std::string what = fmt::format("fetching build \"{}\" from the fleet's registry", name);
  MOLT_RETURN_IF_ERROR(db_->Connected());
  MOLT_ASSIGN_OR_RETURN(store::PgRows rows,
                        db_->Run("find_build", store::PgParams().Text(name), what));
  if (rows.size() == 0) {
    return Status::NotFound(fmt::format("the fleet's registry has no build \"{}\"", name));
  }
  const std::string bytes = rows.Bytes(0, 0);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    return Status::IoError(fmt::format("{}: cannot write {} (is the disk full?)", what, file));
  }
  return Status::Ok();
}

Result<Deployment> FleetRegistry::Record(Deployment d) {
  const std::string what =
      fmt::format("recording a deployment of {} in the fleet's registry", d.build_id);
  MOLT_RETURN_IF_ERROR(db_->Connected());
  MOLT_RETURN_IF_ERROR(db_->Begin(what));
  auto fail = [this](Status s) { return db_->Rollback(std::move(s)); };
  Result<store::PgRows> claim = db_->Run("claim", store::PgParams(), what);
  if (!claim.ok()) {
    return fail(claim.status());
  }
  const std::uint64_t last = claim->size() > 0 ? static_cast<std::uint64_t>(claim->Int(0, 0)) : 0;
  if (d.seq == 0) {
    d.seq = last + 1;
  } else if (d.seq <= last) {
    return fail(Status::Rejected(
        fmt::format("seq {} was taken already in the fleet (the last is #{}; the next is {})",
                    d.seq, last, last + 1)));
  }
  Result<store::PgRows> branch = db_->Run("branch_seq", store::PgParams().Text(d.branch), what);
  if (!branch.ok()) {
    return fail(branch.status());
  }
  const bool known = branch->size() > 1;
  if (!known && branch->Int(0, 1) >= static_cast<std::int64_t>(Registry::kMaxBranches)) {
    return fail(Status::Rejected(
        fmt::format("the fleet's registry holds {} branches already: deploy to one of them",
                    Registry::kMaxBranches)));
  }
  if (d.at_ms == 0) {
    d.at_ms = WallMs();
  }
  const std::string seq = std::to_string(d.seq);
  for (auto [name, params] : {
           std::pair{"insert", store::PgParams()
                                   .Text(seq)
                                   .Text(d.branch)
                                   .Text(d.build)
                                   .Text(d.build_id)
                                   .Text(d.kind)
                                   .Text(d.by)
                                   .Text(d.message)
                                   .Int(d.at_ms)
                                   .Int(static_cast<std::int64_t>(d.sent_ms))
                                   .Text(d.sig)
                                   .Text(d.sig_fallback)
                                   .Text(d.protocol)
                                   .Int(d.rollout)
                                   .Text(server_id_)},
           std::pair{"head", store::PgParams().Text(d.branch).Text(d.build).Text(seq).Int(d.at_ms)},
           std::pair{"set_seq", store::PgParams().Text(seq)},
           std::pair{"trim", store::PgParams()},
           std::pair{"prune", store::PgParams()},
           std::pair{"notify", store::PgParams().Text(seq)},
       }) {
    if (Result<store::PgRows> r = db_->Run(name, params, what); !r.ok()) {
      return fail(r.status());
    }
  }
  MOLT_RETURN_IF_ERROR(db_->Commit(what));
  return d;
}

Status FleetRegistry::Widen(std::uint64_t seq, std::uint32_t rollout) {
  const std::string what = fmt::format("widening #{} in the fleet's registry", seq);
  MOLT_RETURN_IF_ERROR(db_->Connected());
  MOLT_RETURN_IF_ERROR(db_->Begin(what));
  const std::string n = std::to_string(seq);
  Result<store::PgRows> widened = db_->Run("widen", store::PgParams().Text(n).Int(rollout), what);
  if (!widened.ok()) {
    return db_->Rollback(widened.status());
  }
  if (widened->affected() == 0) {
    return db_->Rollback(Status::Rejected(
        fmt::format("#{} is no longer its branch's head, or its rollout is {}% or more already",
                    seq, rollout)));
  }
  if (Result<store::PgRows> r = db_->Run("notify", store::PgParams().Text(n), what); !r.ok()) {
    return db_->Rollback(r.status());
  }
  return db_->Commit(what);
}

Result<std::vector<Deployment>> FleetRegistry::Since(std::uint64_t after, std::size_t limit) {
  const std::string what = "reading the fleet's deployments";
  MOLT_RETURN_IF_ERROR(db_->Connected());
  MOLT_ASSIGN_OR_RETURN(store::PgRows rows, db_->Run("since",
                                                     store::PgParams()
                                                         .Int(static_cast<std::int64_t>(after))
                                                         .Int(static_cast<std::int64_t>(limit)),
                                                     what));
  std::vector<Deployment> out;
  for (int i = 0; i < rows.size(); ++i) {
    Deployment d;
    d.seq = static_cast<std::uint64_t>(rows.Int(i, 0));
    d.branch = rows.Text(i, 1);
    d.build = rows.Text(i, 2);
    d.build_id = rows.Text(i, 3);
    d.kind = rows.Text(i, 4);
    d.by = rows.Text(i, 5);
    d.message = rows.Text(i, 6);
    d.at_ms = rows.Int(i, 7);
    d.sent_ms = static_cast<std::uint64_t>(rows.Int(i, 8));
    d.sig = rows.Text(i, 9);
    d.sig_fallback = rows.Text(i, 10);
    d.protocol = rows.Text(i, 11);
    d.rollout = static_cast<std::uint32_t>(rows.Int(i, 12));
    out.push_back(std::move(d));
  }
  return out;
}

Result<std::uint64_t> FleetRegistry::LastSeq() {
  MOLT_RETURN_IF_ERROR(db_->Connected());
  MOLT_ASSIGN_OR_RETURN(store::PgRows rows,
                        db_->Run("last_seq", store::PgParams(), "reading the fleet's last seq"));
  return rows.size() > 0 ? static_cast<std::uint64_t>(rows.Int(0, 0)) : 0;
}

Result<std::vector<ServerResult>> FleetRegistry::Results(std::uint64_t seq) {
  MOLT_RETURN_IF_ERROR(db_->Connected());
  MOLT_ASSIGN_OR_RETURN(store::PgRows rows,
                        db_->Run("results", store::PgParams().Int(static_cast<std::int64_t>(seq)),
                                 fmt::format("reading the results of #{}", seq)));
  std::vector<ServerResult> out;
  for (int i = 0; i < rows.size(); ++i) {
    out.push_back({rows.Text(i, 0), rows.Text(i, 1), rows.Text(i, 2), rows.Int(i, 3)});
  }
  return out;
}

Status FleetRegistry::SetResult(std::uint64_t seq, const std::string& result,
                                const std::string& reason, const std::string& report) {
  MOLT_RETURN_IF_ERROR(db_->Connected());
  return db_
      ->Run("result",
            store::PgParams()
                .Int(static_cast<std::int64_t>(seq))
                .Text(server_id_)
                .Text(result)
                .Text(reason)
                .Text(report)
                .Int(WallMs()),
            fmt::format("reporting #{} to the fleet's registry", seq))
      .status();
}

void FleetRegistry::Watch(std::chrono::milliseconds poll, std::function<void()> wake) {
  watcher_ = std::make_unique<store::PgListener>(url_, "the fleet's deploys", kChannel, poll,
                                                 std::move(wake));
}

}  // namespace molt::kernel::deploy
