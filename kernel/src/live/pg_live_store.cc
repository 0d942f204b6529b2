// SPDX-License-Identifier: Apache-2.0
// PgLiveStore: the live values on the fleet's PostgreSQL: the overrides every server serves, their
// history, the online stamp, and a NOTIFY per change (pg_live_store.h).
#include "kernel/src/live/pg_live_store.h"

#include <fmt/format.h>

#include <utility>

namespace molt::kernel::live {
namespace {

// The layout this build writes (molt_schema, name 'live').
constexpr int kLiveLayout = 1;
constexpr const char* kLiveTables = R"sql(
CREATE TABLE IF NOT EXISTS molt_live_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO molt_live_meta (key, value) VALUES ('last_seq', 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS molt_live_overrides (
  key TEXT PRIMARY KEY, value TEXT NOT NULL, by_whom TEXT NOT NULL, at_ms BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS molt_live_changes (
  seq BIGINT PRIMARY KEY, key TEXT NOT NULL, value TEXT, by_whom TEXT NOT NULL,
  action TEXT NOT NULL, at_ms BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS molt_live_changes_by_key ON molt_live_changes (key, seq);
)sql";

constexpr const char* kChangeColumns = "seq, key, value, by_whom, action, at_ms";

std::vector<std::pair<std::string, std::string>> LiveStatements() {
  return {
      {"claim", "SELECT value FROM molt_live_meta WHERE key = 'last_seq' FOR UPDATE"},
      {"set_seq", "UPDATE molt_live_meta SET value = $1::bigint WHERE key = 'last_seq'"},
      {"online", "SELECT value FROM molt_live_meta WHERE key = 'online_ms' FOR UPDATE"},
      {"stamp",
       "INSERT INTO molt_live_meta (key, value) VALUES ('online_ms', $1::bigint) ON CONFLICT "
       "(key) DO UPDATE SET value = GREATEST(molt_live_meta.value, EXCLUDED.value)"},
      {"overrides", "SELECT key, value, by_whom, at_ms FROM molt_live_overrides ORDER BY key"},
      {"put",
       "INSERT INTO molt_live_overrides (key, value, by_whom, at_ms) VALUES ($1, $2, $3, "
       "$4::bigint) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, by_whom = "
       "EXCLUDED.by_whom, at_ms = EXCLUDED.at_ms"},
      {"remove", "DELETE FROM molt_live_overrides WHERE key = $1"},
      {"change",
       fmt::format("INSERT INTO molt_live_changes ({}) VALUES ($1::bigint, $2, $3, $4, $5, "
                   "$6::bigint)",
                   kChangeColumns)},
      {"trim", "DELETE FROM molt_live_changes WHERE seq <= $1::bigint"},
      {"notify", fmt::format("SELECT pg_notify('{}', $1)", LiveStore::kChannel)},
      {"history", fmt::format("SELECT {} FROM molt_live_changes WHERE $2 = '' OR key = $2 ORDER "
                              "BY seq DESC LIMIT $1::bigint",
                              kChangeColumns)},
      {"since", fmt::format("SELECT {} FROM molt_live_changes WHERE seq > $1::bigint ORDER BY "
                            "seq LIMIT $2::bigint",
                            kChangeColumns)},
  };
}

}  // namespace

Result<std::unique_ptr<PgLiveStore>> PgLiveStore::Open(const std::string& url) {
  std::unique_ptr<PgLiveStore> s(new PgLiveStore(url));
  MOLT_RETURN_IF_ERROR(s->Connect());
  return s;
}

PgLiveStore::PgLiveStore(std::string url)
    : url_(std::move(url)), db_(url_, "the fleet's live values") {
  db_.set_statements(LiveStatements());
}

Status PgLiveStore::Connect() {
  MOLT_RETURN_IF_ERROR(db_.Connect(/*prepare=*/false));
  MOLT_RETURN_IF_ERROR(
      db_.CreateTables("live", kLiveLayout, kLiveTables, "the live values' tables"));
  return db_.Prepare();
}

Result<std::size_t> PgLiveStore::ExpireIfIdle(std::int64_t now_ms, std::int64_t ttl_ms) {
  const std::string what = "expiring the live values no server kept";
  MOLT_RETURN_IF_ERROR(db_.Connected());
  MOLT_RETURN_IF_ERROR(db_.Begin(what));
  Result<store::PgRows> online = db_.Run("online", store::PgParams(), what);
  if (!online.ok()) {
    return db_.Rollback(online.status());
  }
  const bool idle = online->size() == 0 || now_ms - online->Int(0, 0) > ttl_ms;
  std::size_t expired = 0;
  if (idle) {
    Result<std::vector<StoredValue>> all = Overrides();
    if (!all.ok()) {
      return db_.Rollback(all.status());
    }
    for (const StoredValue& v : *all) {
      if (Result<LiveChange> c = Record(v.key, std::nullopt, "moltd", "expired", now_ms); !c.ok()) {
        return db_.Rollback(c.status());
      }
      ++expired;
    }
  }
  if (Result<store::PgRows> r = db_.Run("stamp", store::PgParams().Int(now_ms), what); !r.ok()) {
    return db_.Rollback(r.status());
  }
  MOLT_RETURN_IF_ERROR(db_.Commit(what));
  return expired;
}

Status PgLiveStore::Stamp(std::int64_t now_ms) {
  MOLT_RETURN_IF_ERROR(db_.Connected());
  return db_.Run("stamp", store::PgParams().Int(now_ms), "stamping the live values' time").status();
}

Result<std::vector<StoredValue>> PgLiveStore::Overrides() {
  MOLT_RETURN_IF_ERROR(db_.Connected());
  MOLT_ASSIGN_OR_RETURN(store::PgRows rows,
                        db_.Run("overrides", store::PgParams(), "reading the live values"));
  std::vector<StoredValue> out;
  for (int i = 0; i < rows.size(); ++i) {
    out.push_back({rows.Text(i, 0), rows.Text(i, 1), rows.Text(i, 2), rows.Int(i, 3)});
  }
  return out;
}

Result<LiveChange> PgLiveStore::Write(const std::string& key,
                                      const std::optional<std::string>& value,
                                      const std::string& by, std::int64_t at_ms) {
  const std::string what = "storing live value " + key;
  MOLT_RETURN_IF_ERROR(db_.Connected());
  MOLT_RETURN_IF_ERROR(db_.Begin(what));
  Result<LiveChange> c = Record(key, value, by, value ? "set" : "unset", at_ms);
  if (!c.ok()) {
    return db_.Rollback(c.status());
  }
  MOLT_RETURN_IF_ERROR(db_.Commit(what));
  return c;
}

Result<std::vector<LiveChange>> PgLiveStore::History(std::string_view key, std::size_t limit) {
  MOLT_RETURN_IF_ERROR(db_.Connected());
  MOLT_ASSIGN_OR_RETURN(
      store::PgRows rows,
      db_.Run("history", store::PgParams().Int(static_cast<std::int64_t>(limit)).Text(key),
              "reading the live values' history"));
  return Changes(rows);
}

Result<std::vector<LiveChange>> PgLiveStore::Since(std::int64_t seq, std::size_t limit) {
  MOLT_RETURN_IF_ERROR(db_.Connected());
  MOLT_ASSIGN_OR_RETURN(
      store::PgRows rows,
      db_.Run("since", store::PgParams().Int(seq).Int(static_cast<std::int64_t>(limit)),
              "reading the live values other servers set"));
  return Changes(rows);
}

Result<LiveChange> PgLiveStore::Record(const std::string& key,
                                       const std::optional<std::string>& value,
                                       const std::string& by, const char* action,
                                       std::int64_t at_ms) {
  const std::string what = "storing live value " + key;
  MOLT_ASSIGN_OR_RETURN(store::PgRows claim, db_.Run("claim", store::PgParams(), what));
  const std::int64_t seq = (claim.size() > 0 ? claim.Int(0, 0) : 0) + 1;
  store::PgParams row = value ? store::PgParams().Text(key).Text(*value).Text(by).Int(at_ms)
                              : store::PgParams().Text(key);
  for (auto [name, params] :
       {std::pair{"set_seq", store::PgParams().Int(seq)}, std::pair{value ? "put" : "remove", row},
        std::pair{
            "change",
            store::PgParams().Int(seq).Text(key).Optional(value).Text(by).Text(action).Int(at_ms)},
        std::pair{"trim", store::PgParams().Int(seq - static_cast<std::int64_t>(kHistoryKept))},
        std::pair{"notify", store::PgParams().Int(seq)}}) {
    MOLT_RETURN_IF_ERROR(db_.Run(name, params, what).status());
  }
  return LiveChange{seq, key, value, by, action, at_ms};
}

std::vector<LiveChange> PgLiveStore::Changes(const store::PgRows& rows) {
  std::vector<LiveChange> out;
  for (int i = 0; i < rows.size(); ++i) {
    LiveChange c{rows.Int(i, 0),  rows.Text(i, 1), std::nullopt,
                 rows.Text(i, 3), rows.Text(i, 4), rows.Int(i, 5)};
    if (!rows.Null(i, 2)) {
      c.value = rows.Text(i, 2);
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace molt::kernel::live
