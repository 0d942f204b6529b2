// SPDX-License-Identifier: Apache-2.0
// ChannelTable: the server's channel table as the client keeps it (channel_table.h).
#include "kernel/src/client/channel_table.h"

#include <utility>

#include "molt_wire_generated.h"

namespace molt::kernel::client {

namespace w = ::molt::wire;

void ChannelTable::Set(const std::vector<const w::ChannelInfo*>& infos, bool same_session,
                       TimePoint now, SendQueue& queue) {
  std::unordered_map<std::uint16_t, Channel> old = std::move(channels_);
  channels_.clear();
  ids_.clear();
  if (!same_session) {
    queue.ClearChannelRates();
  }
  for (const w::ChannelInfo* info : infos) {
    if (info->name() == nullptr) {
      continue;
    }
    Channel c;
    c.name = info->name()->str();
    c.kind = static_cast<std::int32_t>(info->kind());
    c.timeout_seconds = info->timeout_ms() / 1000.0;
    c.rate = info->rate();
    c.max_payload = info->max_payload_bytes();
    c.latest_wins = info->latest_wins();
    // The app may queue the server's burst, refilled at the send queue's pace: what waits stays
    // bounded, and the queue lets it out with the margin jitter takes (send_queue.h).
    c.bucket = TokenBucket(SendQueue::kRateShare * info->rate(), info->burst(), now);
    auto kept = old.find(info->id());
    if (same_session && kept != old.end() && kept->second.name == c.name) {
      c.sent_seq = kept->second.sent_seq;
      c.newest_seq = kept->second.newest_seq;
    }
    const bool same = same_session && kept != old.end() && kept->second.name == c.name &&
                      kept->second.bucket.rate() == c.bucket.rate() &&
                      kept->second.bucket.burst() == c.bucket.burst();
    if (same) {
      c.bucket = kept->second.bucket;
    } else {
      queue.SetChannelRate(info->id(), info->rate(), info->burst(), now);
    }
    ids_[c.name] = info->id();
    channels_[info->id()] = std::move(c);
  }
}

Result<std::uint16_t> ChannelTable::Id(std::string_view name) const {
  auto it = ids_.find(std::string(name));
  if (it == ids_.end()) {
    return Status::NotFound("the server has no channel \"" + std::string(name) + "\"");
  }
  return it->second;
}

ChannelTable::Channel* ChannelTable::Find(std::uint16_t id) {
  auto it = channels_.find(id);
  return it == channels_.end() ? nullptr : &it->second;
}

const ChannelTable::Channel* ChannelTable::Find(std::uint16_t id) const {
  auto it = channels_.find(id);
  return it == channels_.end() ? nullptr : &it->second;
}

}  // namespace molt::kernel::client
