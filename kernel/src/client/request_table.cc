// SPDX-License-Identifier: Apache-2.0
// RequestTable: a client's requests in flight, each answered once (request_table.h).
#include "kernel/src/client/request_table.h"

#include <algorithm>
#include <utility>

namespace molt::kernel::client {

std::uint32_t RequestTable::Open(Done done, TimePoint deadline) {
  const std::uint32_t id = next_id_++;
  open_.emplace(id, Pending{std::move(done), deadline});
  return id;
}

bool RequestTable::Answer(std::uint32_t id, molt_status_t status,
                          std::span<const std::uint8_t> payload) {
  auto it = open_.find(id);
  if (it == open_.end()) {
    return false;  // answered late, after our own timeout
  }
  Pending request = std::move(it->second);
  open_.erase(it);
  request.done(status, payload);
  return true;
}

void RequestTable::ExpireDue(TimePoint now, const std::function<bool()>& go_on) {
  for (auto it = open_.begin(); it != open_.end();) {
    if (now >= it->second.deadline) {
      Pending request = std::move(it->second);
      it = open_.erase(it);
      request.done(MOLT_ERR_TIMEOUT, {});
      if (!go_on()) {
        return;
      }
    } else {
      ++it;
    }
  }
}

void RequestTable::FailAll() {
  std::map<std::uint32_t, Pending> requests = std::move(open_);
  open_.clear();
  for (auto& [id, request] : requests) {
    request.done(MOLT_ERR_TIMEOUT, {});
  }
}

void RequestTable::Silence() {
  for (auto& [id, request] : open_) {
    request.done = [](molt_status_t, std::span<const std::uint8_t>) {};
  }
}

std::optional<TimePoint> RequestTable::NextDeadline() const {
  std::optional<TimePoint> next;
  for (const auto& [id, request] : open_) {
    next = next ? std::min(*next, request.deadline) : request.deadline;
  }
  return next;
}

}  // namespace molt::kernel::client
