// SPDX-License-Identifier: Apache-2.0
// PgKv: the fleet's key-value store on its PostgreSQL, molt_kv and molt_kv_sorted (pg_kv.h).
#include "kernel/src/fleet/pg_kv.h"

#include <fmt/format.h>

#include <cstdlib>
#include <utility>

namespace molt::kernel::fleet {
namespace {

constexpr int kKvLayout = 1;
constexpr const char* kKvTables = R"sql(
CREATE TABLE IF NOT EXISTS molt_kv (
  key TEXT PRIMARY KEY, value BYTEA NOT NULL, expires_ms BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS molt_kv_sorted (
  key TEXT NOT NULL, member BYTEA NOT NULL, score DOUBLE PRECISION NOT NULL,
  expires_ms BIGINT NOT NULL, PRIMARY KEY (key, member));
CREATE INDEX IF NOT EXISTS molt_kv_sorted_by_score ON molt_kv_sorted (key, score);
)sql";

std::vector<std::pair<std::string, std::string>> KvStatements() {
  const char* range =
      "SELECT member, score FROM molt_kv_sorted WHERE key = $1 AND expires_ms > $2::bigint AND "
      "score >= $3::double precision AND score <= $4::double precision ORDER BY score {}, member "
      "LIMIT $5::bigint";
  return {
      {"get", "SELECT value FROM molt_kv WHERE key = $1 AND expires_ms > $2::bigint"},
      {"reserve",
       "INSERT INTO molt_kv (key, value, expires_ms) VALUES ($1, '', 0) ON CONFLICT (key) DO "
       "NOTHING"},
      {"get_locked",
       "SELECT value, expires_ms > $2::bigint FROM molt_kv WHERE key = $1 FOR UPDATE"},
      {"put",
       "INSERT INTO molt_kv (key, value, expires_ms) VALUES ($1, $2, $3::bigint) ON CONFLICT "
       "(key) DO UPDATE SET value = EXCLUDED.value, expires_ms = EXCLUDED.expires_ms"},
      {"delete", "DELETE FROM molt_kv WHERE key = $1 AND expires_ms > $2::bigint"},
      {"delete_expired", "DELETE FROM molt_kv WHERE key = $1"},
      {"delete_sorted", "DELETE FROM molt_kv_sorted WHERE key = $1 AND expires_ms > $2::bigint"},
      {"delete_sorted_expired", "DELETE FROM molt_kv_sorted WHERE key = $1"},
      {"zclear_expired", "DELETE FROM molt_kv_sorted WHERE key = $1 AND expires_ms <= $2::bigint"},
      {"zadd",
       "INSERT INTO molt_kv_sorted (key, member, score, expires_ms) VALUES ($1, $2, "
       "$3::double precision, $4::bigint) ON CONFLICT (key, member) DO UPDATE SET score = "
       "EXCLUDED.score, expires_ms = EXCLUDED.expires_ms"},
      {"ztouch", "UPDATE molt_kv_sorted SET expires_ms = $2::bigint WHERE key = $1"},
      {"zremove",
       "DELETE FROM molt_kv_sorted WHERE key = $1 AND member = $2 AND expires_ms > $3::bigint"},
      {"zrange_asc", fmt::format(fmt::runtime(range), "ASC")},
      {"zrange_desc", fmt::format(fmt::runtime(range), "DESC")},
      {"sweep", "DELETE FROM molt_kv WHERE expires_ms <= $1::bigint"},
      {"sweep_sorted", "DELETE FROM molt_kv_sorted WHERE expires_ms <= $1::bigint"},
  };
}

}  // namespace

PgKv::PgKv(const std::string& url) : db_(url, "the fleet's key-value store") {
  db_.set_statements(KvStatements());
}

Status PgKv::Open() {
  MOLT_RETURN_IF_ERROR(db_.Connect(/*prepare=*/false));
  MOLT_RETURN_IF_ERROR(
      db_.CreateTables("kv", kKvLayout, kKvTables, "the key-value store's tables"));
  return db_.Prepare();
}

KvResult PgKv::Run(const KvOp& op, std::int64_t now) {
  KvResult r;
  r.status = db_.Connected();
  if (r.status.ok()) {
    r.status = RunConnected(op, now, r);
  }
  return r;
}

Status PgKv::Sweep(std::int64_t now) {
  MOLT_RETURN_IF_ERROR(db_.Connected());
  MOLT_RETURN_IF_ERROR(
      db_.Run("sweep", store::PgParams().Int(now), "sweeping expired keys").status());
  return db_.Run("sweep_sorted", store::PgParams().Int(now), "sweeping expired keys").status();
}

Status PgKv::RunConnected(const KvOp& op, std::int64_t now, KvResult& r) {
  const std::string what = "key \"" + op.key + "\"";
  const std::int64_t until = now + op.ttl_ms;
  switch (op.kind) {
    case KvKind::kGet: {
      MOLT_ASSIGN_OR_RETURN(store::PgRows rows,
                            db_.Run("get", store::PgParams().Text(op.key).Int(now), what));
      if (rows.size() == 0) {
        return Status::NotFound("no value at \"" + op.key + "\"");
      }
      r.value = rows.Bytes(0, 0);
      return Status::Ok();
    }
    case KvKind::kSet:
      MOLT_RETURN_IF_ERROR(
          db_.Run("put", store::PgParams().Text(op.key).Bytes(op.value).Int(until), what).status());
      r.value = op.value;
      return Status::Ok();
    case KvKind::kCas:
    case KvKind::kIncrement:
      return Locked(op, now, until, what, r);
    case KvKind::kDelete: {
      MOLT_ASSIGN_OR_RETURN(store::PgRows a,
                            db_.Run("delete", store::PgParams().Text(op.key).Int(now), what));
      MOLT_ASSIGN_OR_RETURN(
          store::PgRows b, db_.Run("delete_sorted", store::PgParams().Text(op.key).Int(now), what));
      MOLT_RETURN_IF_ERROR(
          db_.Run("delete_expired", store::PgParams().Text(op.key), what).status());
      MOLT_RETURN_IF_ERROR(
          db_.Run("delete_sorted_expired", store::PgParams().Text(op.key), what).status());
      r.number = a.affected() + b.affected() > 0 ? 1 : 0;
      return Status::Ok();
    }
    case KvKind::kZAdd: {
      MOLT_RETURN_IF_ERROR(db_.Begin(what));
      for (auto [name, params] :
           {std::pair{"zclear_expired", store::PgParams().Text(op.key).Int(now)},
            std::pair{"zadd", store::PgParams()
                                  .Text(op.key)
                                  .Bytes(op.value)
                                  .Text(fmt::format("{}", op.number))
                                  .Int(until)},
            std::pair{"ztouch", store::PgParams().Text(op.key).Int(until)}}) {
        if (Status s = db_.Run(name, params, what).status(); !s.ok()) {
          return db_.Rollback(s);
        }
      }
      return db_.Commit(what);
    }
    case KvKind::kZRemove: {
      MOLT_ASSIGN_OR_RETURN(
          store::PgRows rows,
          db_.Run("zremove", store::PgParams().Text(op.key).Bytes(op.value).Int(now), what));
      r.number = rows.affected() > 0 ? 1 : 0;
      return Status::Ok();
    }
    case KvKind::kZRange: {
      MOLT_ASSIGN_OR_RETURN(store::PgRows rows,
                            db_.Run(op.descending ? "zrange_desc" : "zrange_asc",
                                    store::PgParams()
                                        .Text(op.key)
                                        .Int(now)
                                        .Text(fmt::format("{}", op.number))
                                        .Text(fmt::format("{}", op.number2))
                                        .Int(op.limit),
                                    what));
      for (int i = 0; i < rows.size(); ++i) {
        r.entries.push_back({rows.Bytes(i, 0), std::strtod(rows.Text(i, 1).c_str(), nullptr)});
      }
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("unknown kind");
}

Status PgKv::Locked(const KvOp& op, std::int64_t now, std::int64_t until, const std::string& what,
                    KvResult& r) {
  MOLT_RETURN_IF_ERROR(db_.Begin(what));
  if (Status s = db_.Run("reserve", store::PgParams().Text(op.key), what).status(); !s.ok()) {
    return db_.Rollback(s);
  }
  Result<store::PgRows> rows = db_.Run("get_locked", store::PgParams().Text(op.key).Int(now), what);
  if (!rows.ok()) {
    return db_.Rollback(rows.status());
  }
  std::optional<std::string> now_value;
  if (rows->size() > 0 && rows->Text(0, 1) == "t") {
    now_value = rows->Bytes(0, 0);
  }
  std::string next;
  if (op.kind == KvKind::kCas) {
    if (op.expected != now_value) {
      r.value = now_value;
      return db_.Rollback(
          Status::Rejected("the value at \"" + op.key + "\" is not the one expected"));
    }
    next = op.value;
  } else {
    std::int64_t n = 0;
    if (now_value) {
      std::optional<std::int64_t> was = KvWholeNumber(*now_value);
      if (!was) {
        return db_.Rollback(KvNotWhole(op.key));
      }
      n = *was;
    }
    if (__builtin_add_overflow(n, static_cast<std::int64_t>(op.number), &n)) {
      return db_.Rollback(KvOverflow(op.key));
    }
    next = std::to_string(n);
    r.number = n;
  }
  if (Status s =
          db_.Run("put", store::PgParams().Text(op.key).Bytes(next).Int(until), what).status();
      !s.ok()) {
    return db_.Rollback(s);
  }
  MOLT_RETURN_IF_ERROR(db_.Commit(what));
  r.value = next;
  return Status::Ok();
}

}  // namespace molt::kernel::fleet
