// SPDX-License-Identifier: Apache-2.0
// What every ProfileDb engine says the same way (profile_db.h).
#include "kernel/src/store/profile_db.h"

#include <fmt/format.h>

#include <ctime>

namespace molt::kernel::store {

namespace {

// "2026-12-01T13:40:00.250Z" for a lease expiry in an error text.
std::string Iso(WallMillis ms) {
  const std::time_t s = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

}  // namespace

bool Held(const Lease& lease, WallMillis now) {
  return !lease.owner.empty() && lease.expires > now;
}

LoadResult LeasedElsewhere(const std::string& key, const Lease& holder) {
  LoadResult r;
  r.holder = holder;
  r.status = Status::FailedPrecondition(fmt::format(
      "profile \"{}\" is leased by {} until {} (lease token {}): wait for its release or "
      "expiry, then load it again",
      key, holder.owner, Iso(holder.expires), holder.token));
  return r;
}

Status LeaseLost(const std::string& key, std::uint64_t token) {
  return Status::Stale(fmt::format(
      "profile \"{}\": the lease (token {}) is no longer this host's (another host took it "
      "over, or it was released): this copy is not saved",
      key, token));
}

Status FailAll(Status s, std::vector<WriteResult>& results) {
  if (!s.ok()) {
    for (WriteResult& wr : results) {
      wr = WriteResult{s, 0};
    }
  }
  return s;
}

}  // namespace molt::kernel::store
