// SPDX-License-Identifier: Apache-2.0
// Predictions: the predicted intents awaiting the server's decision (predictions.h).
#include "kernel/src/client/predictions.h"

#include <utility>

namespace molt::kernel::client {

std::uint32_t Predictions::Add(std::uint16_t channel, std::span<const std::uint8_t> payload,
                               TimePoint deadline) {
  const std::uint32_t seq = next_seq_;
  next_seq_ = next_seq_ == UINT32_MAX ? 1 : next_seq_ + 1;
  pending_[seq] =
      Entry{channel, deadline, std::vector<std::uint8_t>(payload.begin(), payload.end())};
  return seq;
}

void Predictions::Resolve(std::uint32_t seq, molt_status_t status, const Resolved& resolved) {
  auto it = pending_.find(seq);
  if (it == pending_.end()) {
    return;  // decided already (a timeout came first), or never ours
  }
  const std::uint16_t channel = it->second.channel;
  pending_.erase(it);
  if (resolved) {
    resolved(channel, seq, status);
  }
}

void Predictions::Ack(std::span<const std::uint32_t> accepted,
                      std::span<const std::uint32_t> rejected, const Resolved& resolved) {
  for (std::uint32_t seq : accepted) {
    Resolve(seq, MOLT_OK, resolved);
  }
  for (std::uint32_t seq : rejected) {
    Resolve(seq, MOLT_ERR_REJECTED, resolved);
  }
}

void Predictions::ExpireDue(TimePoint now, const Resolved& resolved) {
  std::vector<std::uint32_t> due;
  for (const auto& [seq, e] : pending_) {
    if (e.deadline <= now) {
      due.push_back(seq);
    }
  }
  for (std::uint32_t seq : due) {
    Resolve(seq, MOLT_ERR_TIMEOUT, resolved);
  }
}

void Predictions::FailAll(const Resolved& resolved) {
  std::vector<std::uint32_t> all;
  for (const auto& [seq, e] : pending_) {
    all.push_back(seq);
  }
  for (std::uint32_t seq : all) {
    Resolve(seq, MOLT_ERR_TIMEOUT, resolved);
  }
}

std::optional<TimePoint> Predictions::NextDeadline() const {
  std::optional<TimePoint> next;
  for (const auto& [seq, e] : pending_) {
    if (!next || e.deadline < *next) {
      next = e.deadline;
    }
  }
  return next;
}

std::vector<Predictions::Pending> Predictions::List(std::uint16_t channel) const {
  std::vector<Pending> list;
  for (const auto& [seq, e] : pending_) {
    if (channel == 0xFFFF || e.channel == channel) {
      list.push_back(Pending{e.channel, seq, e.payload});
    }
  }
  return list;
}

}  // namespace molt::kernel::client
