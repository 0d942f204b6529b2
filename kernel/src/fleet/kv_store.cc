// SPDX-License-Identifier: Apache-2.0
// KvStore: the calls checked, then run on a thread of their own by the backend (kv_store.h):
// MemoryKv alone, PgKv on the fleet's PostgreSQL.
#include "kernel/src/fleet/kv_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/fleet/memory_kv.h"
#include "kernel/src/fleet/pg_kv.h"

namespace molt::kernel::fleet {
namespace {

const LogScope kKvLog("KeyValue");

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
