// SPDX-License-Identifier: Apache-2.0
// Fleet: heartbeats into molt_servers and the fleet as `molt servers` lists it (fleet.h).
#include "kernel/src/fleet/fleet.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/store/pg_connection.h"
#include "kernel/src/store/pg_listener.h"

namespace molt::kernel::fleet {

namespace {

const LogScope kLog("Fleet");

// The layout this build writes (molt_schema, name 'servers').
constexpr int kSchema = 1;
// Layout 1 grew by additions only (websocket_address, molt_drains, lease_owner): a server of an
// older build neither writes nor reads them, so they need no new layout number.
constexpr const char* kCreate =
    "CREATE TABLE IF NOT EXISTS molt_servers (id TEXT PRIMARY KEY, branch TEXT NOT NULL, build "
    "TEXT NOT NULL, applied_seq BIGINT NOT NULL, sessions BIGINT NOT NULL, tps DOUBLE PRECISION "
    "NOT NULL, health TEXT NOT NULL, state TEXT NOT NULL, address TEXT NOT NULL, started_ms "
    "BIGINT NOT NULL, interval_ms BIGINT NOT NULL, last_seen_ms BIGINT NOT NULL); "
    "ALTER TABLE molt_servers ADD COLUMN IF NOT EXISTS websocket_address TEXT NOT NULL DEFAULT ''; "
    "ALTER TABLE molt_servers ADD COLUMN IF NOT EXISTS lease_owner TEXT NOT NULL DEFAULT ''; "
    "CREATE TABLE IF NOT EXISTS molt_drains (id TEXT PRIMARY KEY, deadline_seconds DOUBLE "
    "PRECISION NOT NULL, requested_ms BIGINT NOT NULL)";

constexpr const char* kColumns =
    "id, branch, build, applied_seq, sessions, tps, health, state, address, started_ms, "
    "interval_ms, last_seen_ms, websocket_address, lease_owner";

constexpr const char* kDrainChannel = "molt_drain";

std::vector<std::pair<std::string, std::string>> Statements() {
  return {
      {"beat",
       fmt::format(
           "INSERT INTO molt_servers ({}) VALUES ($1, $2, $3, $4::bigint, $5::bigint, "
           "$6::double precision, $7, $8, $9, $10::bigint, $11::bigint, $12::bigint, $13, $14) "
           "ON CONFLICT (id) DO UPDATE SET branch = EXCLUDED.branch, build = "
           "EXCLUDED.build, applied_seq = EXCLUDED.applied_seq, sessions = "
           "EXCLUDED.sessions, tps = EXCLUDED.tps, health = EXCLUDED.health, state = "
           "EXCLUDED.state, address = EXCLUDED.address, started_ms = "
           "EXCLUDED.started_ms, interval_ms = EXCLUDED.interval_ms, last_seen_ms = "
           "EXCLUDED.last_seen_ms, websocket_address = EXCLUDED.websocket_address, "
           "lease_owner = EXCLUDED.lease_owner",
           kColumns)},
      {"list", fmt::format("SELECT {} FROM molt_servers WHERE $1 = '' OR branch = $1 ORDER BY id",
                           kColumns)},
      {"drain_ask",
       fmt::format("WITH asked AS (INSERT INTO molt_drains (id, deadline_seconds, requested_ms) "
                   "VALUES ($1, $2::double precision, $3::bigint) ON CONFLICT (id) DO UPDATE SET "
                   "deadline_seconds = EXCLUDED.deadline_seconds, requested_ms = "
                   "EXCLUDED.requested_ms RETURNING id) SELECT pg_notify('{}', id) FROM asked",
                   kDrainChannel)},
      {"drain_take",
       "DELETE FROM molt_drains WHERE id = $1 RETURNING deadline_seconds::text, requested_ms"},
  };
}

}  // namespace

Fleet::Fleet(std::string url, Duration interval) : url_(std::move(url)), interval_(interval) {
  if (!url_.empty()) {
    db_ = std::make_unique<store::PgConnection>(url_, "the fleet database");
    db_->set_statements(Statements());
  }
}

Fleet::~Fleet() {
  drains_.reset();  // no wake posts past here
  thread_.Stop();
}

std::set<std::string> LostLeaseOwners(const std::vector<ServerReport>& fleet,
                                      std::string_view self) {
  std::set<std::string> lost;
  for (const ServerReport& r : fleet) {
    if (r.state == "lost" && r.id != self && !r.lease_owner.empty()) {
      lost.insert(r.lease_owner);
    }
  }
  return lost;
}

std::string Fleet::StateAt(const ServerReport& r, std::int64_t now_ms) {
  return now_ms - r.last_seen_ms > 3 * std::max<std::int64_t>(r.interval_ms, 1) ? "lost" : r.state;
}

Status Fleet::Open() {
  if (db_ != nullptr) {
    MOLT_RETURN_IF_ERROR(db_->Connect(/*prepare=*/false));
    MOLT_RETURN_IF_ERROR(db_->CreateTables("servers", kSchema, kCreate, "the fleet's tables"));
    MOLT_RETURN_IF_ERROR(db_->Prepare());
  }
  thread_.Start();
  return Status::Ok();
}

void Fleet::Beat(ServerReport report) {
  report.interval_ms = std::chrono::duration_cast<std::chrono::milliseconds>(interval_).count();
  report.last_seen_ms = WallMs();
  {
    std::lock_guard lock(mu_);
    last_ = report;
  }
  if (db_ != nullptr) {
    thread_.Post([this, report = std::move(report)] { Write(report); });
  }
}

void Fleet::Write(const ServerReport& r) {
  Status s = db_->Connected();
  if (s.ok()) {
    s = db_->Run("beat",
                 store::PgParams()
                     .Text(r.id)
                     .Text(r.branch)
                     .Text(r.build)
                     .Int(static_cast<std::int64_t>(r.applied_seq))
                     .Int(static_cast<std::int64_t>(r.sessions))
                     .Text(fmt::format("{}", r.tps))
                     .Text(r.health)
                     .Text(r.state)
                     .Text(r.address)
                     .Int(r.started_ms)
                     .Int(r.interval_ms)
                     .Int(r.last_seen_ms)
                     .Text(r.websocket_address)
                     .Text(r.lease_owner),
                 "writing the heartbeat of " + r.id)
            .status();
  }
  if (!s.ok() && s.message() != last_error_) {
    kLog.Warn("{}; tried again at the next heartbeat", s.message());
  } else if (s.ok() && !last_error_.empty()) {
    kLog.Info("heartbeats are written again");
  }
  last_error_ = s.ok() ? std::string() : s.message();
}

void Fleet::List(std::string branch, Callback<void(Result<std::vector<ServerReport>>)> done) {
  // The thread's tasks are copyable functions: the callback goes in a shared box.
  auto box = std::make_shared<Callback<void(Result<std::vector<ServerReport>>)>>(std::move(done));
  thread_.Post([this, branch = std::move(branch), box] {
    auto& done = *box;
    const std::int64_t now = WallMs();
    std::vector<ServerReport> out;
    if (db_ == nullptr) {
      std::lock_guard lock(mu_);
      if (!last_.id.empty() && (branch.empty() || last_.branch == branch)) {
        out.push_back(last_);
      }
    } else {
      Status s = db_->Connected();
      Result<store::PgRows> rows =
          s.ok() ? db_->Run("list", store::PgParams().Text(branch), "listing the fleet") : s;
      if (!rows.ok()) {
        done(rows.status());
        return;
      }
      for (int i = 0; i < rows->size(); ++i) {
        ServerReport r;
        r.id = rows->Text(i, 0);
        r.branch = rows->Text(i, 1);
        r.build = rows->Text(i, 2);
        r.applied_seq = static_cast<std::uint64_t>(rows->Int(i, 3));
        r.sessions = static_cast<std::uint64_t>(rows->Int(i, 4));
        r.tps = std::strtod(rows->Text(i, 5).c_str(), nullptr);
        r.health = rows->Text(i, 6);
        r.state = rows->Text(i, 7);
        r.address = rows->Text(i, 8);
        r.started_ms = rows->Int(i, 9);
        r.interval_ms = rows->Int(i, 10);
        r.last_seen_ms = rows->Int(i, 11);
        r.websocket_address = rows->Text(i, 12);
        r.lease_owner = rows->Text(i, 13);
        out.push_back(std::move(r));
      }
    }
    for (ServerReport& r : out) {
      r.state = StateAt(r, now);
    }
    done(std::move(out));
  });
}

void Fleet::RequestDrain(std::string id, double deadline_seconds, Callback<void(Status)> done) {
  auto box = std::make_shared<Callback<void(Status)>>(std::move(done));
  thread_.Post([this, id = std::move(id), deadline_seconds, box] {
    if (db_ == nullptr) {
      (*box)(Status::FailedPrecondition(
          "this server keeps no fleet database: only it can drain (molt drain with its own id)"));
      return;
    }
    Status s = db_->Connected();
    if (s.ok()) {
      s = db_->Run(
                 "drain_ask",
                 store::PgParams().Text(id).Text(fmt::format("{}", deadline_seconds)).Int(WallMs()),
                 "asking server " + id + " to drain")
              .status();
    }
    (*box)(s);
  });
}

void Fleet::WatchDrains(std::string id, std::function<void(double deadline_seconds)> drain) {
  if (db_ == nullptr) {
    return;
  }
  const std::int64_t since = WallMs();
  auto take = [this, id, since, drain = std::move(drain)] {
    if (!db_->Connected().ok()) {
      return;  // the heartbeat logs why; the listener's next wake tries again
    }
    Result<store::PgRows> rows =
        db_->Run("drain_take", store::PgParams().Text(id), "reading the drains asked of " + id);
    if (!rows.ok()) {
      kLog.Warn("{}; read again at the next poll", rows.status().message());
      return;
    }
    if (rows->size() == 0) {
      return;
    }
    if (rows->Int(0, 1) < since) {  // asked of the server that had this id before this process
      kLog.Warn(
          "a drain of {} asked before this server started is dropped: ask again with molt "
          "drain {}",
          id, id);
      return;
    }
    drain(std::strtod(rows->Text(0, 0).c_str(), nullptr));
  };
  drains_ = std::make_unique<store::PgListener>(
      url_, "the fleet's drains", kDrainChannel,
      std::chrono::duration_cast<std::chrono::milliseconds>(interval_),
      [this, take = std::move(take)] { thread_.Post(take); });
}

}  // namespace molt::kernel::fleet
