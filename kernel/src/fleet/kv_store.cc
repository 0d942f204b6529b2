// SPDX-License-Identifier: Apache-2.0
// KvStore: the calls on a thread of their own, in memory alone or on the fleet's PostgreSQL
// (kv_store.h).
#include "kernel/src/fleet/kv_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/store/pg_connection.h"

namespace molt::kernel::fleet {
namespace {

const LogScope kKvLog("KeyValue");

// A whole number written as text (what increment keeps), or nullopt.
std::optional<std::int64_t> WholeNumber(std::string_view text) {
  std::int64_t n = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), n);
  return r.ec == std::errc() && r.ptr == text.data() + text.size() ? std::optional(n)
                                                                   : std::nullopt;
}

Status NotWhole(const std::string& key) {
  return Status::InvalidArgument("the value at \"" + key +
                                 "\" is not a whole number: increment needs one (or no value)");
}

Status Overflow(const std::string& key) {
  return Status::InvalidArgument("incrementing \"" + key + "\" overflows a 64-bit whole number");
}

// --- memory: a server alone ---------------------------------------------------------------------

class MemoryKv final : public KvBackend {
 public:
  KvResult Run(const KvOp& op, std::int64_t now) override {
    KvResult r;
    const std::int64_t until = now + op.ttl_ms;
    auto live = [&](const std::string& key) -> Value* {
      auto it = values_.find(key);
      return it != values_.end() && it->second.expires > now ? &it->second : nullptr;
    };
    switch (op.kind) {
      case KvKind::kGet:
        if (Value* v = live(op.key)) {
          r.value = v->data;
        } else {
          r.status = Status::NotFound("no value at \"" + op.key + "\"");
        }
        break;
      case KvKind::kSet:
        values_[op.key] = {op.value, until};
        r.value = op.value;
        break;
      case KvKind::kCas: {
        Value* v = live(op.key);
        const bool match = op.expected ? v != nullptr && v->data == *op.expected : v == nullptr;
        if (match) {
          values_[op.key] = {op.value, until};
          r.value = op.value;
        } else {
          r.status = Status::Rejected("the value at \"" + op.key + "\" is not the one expected");
          if (v != nullptr) {
            r.value = v->data;
          }
        }
        break;
      }
      case KvKind::kDelete: {
        const bool had = live(op.key) != nullptr || sorted_.contains(op.key);
        values_.erase(op.key);
        sorted_.erase(op.key);
        r.number = had ? 1 : 0;
        break;
      }
      case KvKind::kIncrement: {
        std::int64_t n = 0;
        if (Value* v = live(op.key)) {
          std::optional<std::int64_t> was = WholeNumber(v->data);
          if (!was) {
            r.status = NotWhole(op.key);
            break;
          }
          n = *was;
        }
        if (__builtin_add_overflow(n, static_cast<std::int64_t>(op.number), &n)) {
          r.status = Overflow(op.key);
          break;
        }
        values_[op.key] = {std::to_string(n), until};
        r.number = n;
        r.value = std::to_string(n);
        break;
      }
      case KvKind::kZAdd: {
        Sorted& s = sorted_[op.key];
        if (s.expires <= now) {
          s.members.clear();
        }
        s.members[op.value] = op.number;
        s.expires = until;
        break;
      }
      case KvKind::kZRemove: {
        auto it = sorted_.find(op.key);
        r.number = it != sorted_.end() && it->second.expires > now &&
                           it->second.members.erase(op.value) > 0
                       ? 1
                       : 0;
        break;
      }
      case KvKind::kZRange: {
        auto it = sorted_.find(op.key);
        if (it == sorted_.end() || it->second.expires <= now) {
          break;
        }
        for (const auto& [member, score] : it->second.members) {
          if (score >= op.number && score <= op.number2) {
            r.entries.push_back({member, score});
          }
        }
        std::sort(r.entries.begin(), r.entries.end(), [&](const KvEntry& a, const KvEntry& b) {
          return a.score != b.score ? (op.descending ? a.score > b.score : a.score < b.score)
                                    : a.member < b.member;
        });
        if (r.entries.size() > op.limit) {
          r.entries.resize(op.limit);
        }
        break;
      }
    }
    return r;
  }
  Status Sweep(std::int64_t now) override {
    std::erase_if(values_, [now](const auto& kv) { return kv.second.expires <= now; });
    std::erase_if(sorted_, [now](const auto& kv) { return kv.second.expires <= now; });
    return Status::Ok();
  }

 private:
  struct Value {
    std::string data;
    std::int64_t expires = 0;
  };
  struct Sorted {
    std::map<std::string, double> members;
    std::int64_t expires = 0;
  };
  std::map<std::string, Value> values_;
  std::map<std::string, Sorted> sorted_;
};

// --- PostgreSQL: the fleet's --------------------------------------------------------------------

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

class PgKv final : public KvBackend {
 public:
  explicit PgKv(const std::string& url) : db_(url, "the fleet's key-value store") {
    db_.set_statements(KvStatements());
  }
  Status Open() {
    MOLT_RETURN_IF_ERROR(db_.Connect(/*prepare=*/false));
    MOLT_RETURN_IF_ERROR(
        db_.CreateTables("kv", kKvLayout, kKvTables, "the key-value store's tables"));
    return db_.Prepare();
  }

  KvResult Run(const KvOp& op, std::int64_t now) override {
    KvResult r;
    r.status = db_.Connected();
    if (r.status.ok()) {
      r.status = RunConnected(op, now, r);
    }
    return r;
  }

  Status Sweep(std::int64_t now) override {
    MOLT_RETURN_IF_ERROR(db_.Connected());
    MOLT_RETURN_IF_ERROR(
        db_.Run("sweep", store::PgParams().Int(now), "sweeping expired keys").status());
    return db_.Run("sweep_sorted", store::PgParams().Int(now), "sweeping expired keys").status();
  }

 private:
  Status RunConnected(const KvOp& op, std::int64_t now, KvResult& r) {
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
            db_.Run("put", store::PgParams().Text(op.key).Bytes(op.value).Int(until), what)
                .status());
        r.value = op.value;
        return Status::Ok();
      case KvKind::kCas:
      case KvKind::kIncrement:
        return Locked(op, now, until, what, r);
      case KvKind::kDelete: {
        MOLT_ASSIGN_OR_RETURN(store::PgRows a,
                              db_.Run("delete", store::PgParams().Text(op.key).Int(now), what));
        MOLT_ASSIGN_OR_RETURN(
            store::PgRows b,
            db_.Run("delete_sorted", store::PgParams().Text(op.key).Int(now), what));
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

  // Compare-and-set and increment: the row locked, read, decided here, written. An absent key
  // gets an expired row first (it reads as absent), so that two servers deciding on the same
  // absent key take turns too.
  Status Locked(const KvOp& op, std::int64_t now, std::int64_t until, const std::string& what,
                KvResult& r) {
    MOLT_RETURN_IF_ERROR(db_.Begin(what));
    if (Status s = db_.Run("reserve", store::PgParams().Text(op.key), what).status(); !s.ok()) {
      return db_.Rollback(s);
    }
    Result<store::PgRows> rows =
        db_.Run("get_locked", store::PgParams().Text(op.key).Int(now), what);
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
        std::optional<std::int64_t> was = WholeNumber(*now_value);
        if (!was) {
          return db_.Rollback(NotWhole(op.key));
        }
        n = *was;
      }
      if (__builtin_add_overflow(n, static_cast<std::int64_t>(op.number), &n)) {
        return db_.Rollback(Overflow(op.key));
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

  store::PgConnection db_;
};

}  // namespace

KvStore::KvStore(std::string url, Post post, std::function<std::int64_t()> wall_ms)
    : url_(std::move(url)), post_(std::move(post)), wall_ms_(std::move(wall_ms)) {
  stats_.shared = !url_.empty();
}

KvStore::~KvStore() { thread_.Stop(); }

Status KvStore::Open() {
  if (url_.empty()) {
    backend_ = std::make_unique<MemoryKv>();
  } else {
    auto pg = std::make_unique<PgKv>(url_);
    MOLT_RETURN_IF_ERROR(pg->Open());
    backend_ = std::move(pg);
  }
  thread_.Start();
  thread_.At(SerialThread::Clock::now() + kSweepEvery, [this] { Sweep(); });
  return Status::Ok();
}

void KvStore::Sweep() {
  if (Status s = backend_->Sweep(wall_ms_()); !s.ok()) {
    kKvLog.Warn("{} (tried again in {} s; expired keys read as absent meanwhile)", s.message(),
                kSweepEvery.count());
  }
  thread_.At(SerialThread::Clock::now() + kSweepEvery, [this] { Sweep(); });
}

std::string KvStore::Problem(const KvOp& op) {
  if (op.key.empty() || op.key.size() > kMaxKeyBytes) {
    return fmt::format("a key is 1 to {} bytes", kMaxKeyBytes);
  }
  if (std::any_of(op.key.begin(), op.key.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return "a key has no control characters";
  }
  if (op.value.size() > kMaxValueBytes || (op.expected && op.expected->size() > kMaxValueBytes)) {
    return fmt::format("a value or a member is at most {} bytes", kMaxValueBytes);
  }
  if (op.ttl_ms < 0 ||
      op.ttl_ms > std::chrono::duration_cast<std::chrono::milliseconds>(kMaxTtl).count()) {
    return "ttl_seconds is 0 (300) to 30 days";
  }
  if (op.kind == KvKind::kIncrement &&
      (op.number != std::trunc(op.number) || std::fabs(op.number) > 9e15)) {
    return "increment adds a whole number";
  }
  if (op.kind == KvKind::kZAdd && !std::isfinite(op.number)) {
    return "a score is a finite number";
  }
  if (op.kind == KvKind::kZRange && (std::isnan(op.number) || std::isnan(op.number2))) {
    return "a range's scores are numbers (-inf and inf read every member)";
  }
  if (op.limit > kMaxLimit) {
    return fmt::format("limit is at most {}", kMaxLimit);
  }
  return "";
}

Status KvStore::Call(KvOp op, std::function<void(KvResult)> done) {
  if (std::string why = Problem(op); !why.empty()) {
    return Status::InvalidArgument("key-value call on \"" + op.key + "\": " + why);
  }
  if (stats_.pending >= kMaxPending) {
    ++stats_.refused;
    return Status::RateLimited(fmt::format(
        "{} key-value calls wait already (the fleet's database is slow or away)", kMaxPending));
  }
  if (op.ttl_ms == 0) {
    op.ttl_ms = std::chrono::duration_cast<std::chrono::milliseconds>(kDefaultTtl).count();
  }
  if (op.limit == 0) {
    op.limit = kDefaultLimit;
  }
  ++stats_.calls;
  ++stats_.pending;
  std::weak_ptr<KvStore*> alive = alive_;
  thread_.Post([this, alive, op = std::move(op), done = std::move(done)]() mutable {
    KvResult r = backend_->Run(op, wall_ms_());
    post_([alive, r = std::move(r), done = std::move(done)]() mutable {
      std::shared_ptr<KvStore*> self = alive.lock();
      if (self == nullptr) {
        return;
      }
      KvStats& s = (*self)->stats_;
      --s.pending;
      const Status::Code c = r.status.code();
      if (!r.status.ok() && c != Status::Code::kNotFound && c != Status::Code::kRejected &&
          c != Status::Code::kInvalidArgument) {
        ++s.failed;
      }
      done(std::move(r));
    });
  });
  return Status::Ok();
}

}  // namespace molt::kernel::fleet
