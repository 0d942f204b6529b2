// SPDX-License-Identifier: Apache-2.0
// SendQueue: the client's outbound frames, paced to the server's transport budget and channel
// rates.
#include "kernel/src/client/send_queue.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace molt::kernel::client {

SendQueue::Budget SendQueue::ForServer(const ServerLimits& limits) {
  // The server refills per tick at max(tick_rate, 1) (net/inbound_pipeline.cc, Open).
  const double ticks = std::max(limits.tick_rate, 1.0);
  const double burst_ticks = std::max(limits.burst_ticks, 1.0);
  Budget b;
  b.bytes_per_second = kRateShare * limits.bytes_per_tick * ticks;
  b.messages_per_second = kRateShare * limits.messages_per_tick * ticks;
  b.bytes_burst = std::max(kBurstShare * limits.bytes_per_tick * burst_ticks,
                           static_cast<double>(limits.max_frame_bytes));
  b.messages_burst = std::max(kBurstShare * limits.messages_per_tick * burst_ticks, 1.0);
  return b;
}

SendQueue::SendQueue()
    : transport_bytes_(std::numeric_limits<double>::infinity(), 1, TimePoint()),
      transport_messages_(std::numeric_limits<double>::infinity(), 1, TimePoint()) {}

void SendQueue::SetBudget(const Budget& budget, TimePoint now) {
  transport_bytes_ = TokenBucket(budget.bytes_per_second, budget.bytes_burst, now);
  transport_messages_ = TokenBucket(budget.messages_per_second, budget.messages_burst, now);
}

void SendQueue::SetChannelRate(std::uint16_t channel, double rate, double burst, TimePoint now) {
  if (std::isinf(rate)) {
    channels_.erase(channel);
    return;
  }
  // The transport budget's shares: frames sent exactly 1/rate apart can reach the server closer
  // together (the network, a server that reads its clock once per batch), and its bucket,
  // drained to its last token, refuses them.
  channels_.insert_or_assign(
      channel, TokenBucket(kRateShare * rate, std::max(kBurstShare * burst, 1.0), now));
}

void SendQueue::Push(std::span<const std::uint8_t> frame, std::optional<std::uint16_t> channel) {
  Frame f{{frame.begin(), frame.end()}, channel ? static_cast<std::int32_t>(*channel) : -1};
  bytes_ += f.bytes.size();
  (channel ? app_ : control_).push_back(std::move(f));
}

double SendQueue::Wait(std::size_t bytes, std::int32_t channel, TimePoint now) {
  double wait = std::max(transport_bytes_.SecondsUntil(now, static_cast<double>(bytes)),
                         transport_messages_.SecondsUntil(now));
  if (channel >= 0) {
    if (auto it = channels_.find(static_cast<std::uint16_t>(channel)); it != channels_.end()) {
      wait = std::max(wait, it->second.SecondsUntil(now));
    }
  }
  return wait;
}

void SendQueue::Take(std::size_t bytes, std::int32_t channel, TimePoint now) {
  (void)transport_bytes_.Take(now, static_cast<double>(bytes));
  (void)transport_messages_.Take(now);
  if (channel >= 0) {
    if (auto it = channels_.find(static_cast<std::uint16_t>(channel)); it != channels_.end()) {
      (void)it->second.Take(now);
    }
  }
}

bool SendQueue::TakeNow(std::size_t bytes, std::uint16_t channel, TimePoint now) {
  if (Wait(bytes, channel, now) > 0) {
    return false;
  }
  Take(bytes, channel, now);
  return true;
}

std::size_t SendQueue::Release(TimePoint now, std::vector<std::uint8_t>* out) {
  std::size_t released = 0;
  for (std::deque<Frame>* q : {&control_, &app_}) {
    while (!q->empty()) {
      Frame& f = q->front();
      if (Wait(f.bytes.size(), f.channel, now) > 0) {
        return released;  // in order: what follows waits too
      }
      Take(f.bytes.size(), f.channel, now);
      out->insert(out->end(), f.bytes.begin(), f.bytes.end());
      bytes_ -= f.bytes.size();
      q->pop_front();
      ++released;
    }
  }
  return released;
}

std::optional<TimePoint> SendQueue::NextRelease(TimePoint now) {
  const Frame* first = !control_.empty() ? &control_.front()
                       : !app_.empty()   ? &app_.front()
                                         : nullptr;
  if (first == nullptr) {
    return std::nullopt;
  }
  const double wait = Wait(first->bytes.size(), first->channel, now);
  if (wait <= 0) {
    return now;  // it may go now: nothing to batch
  }
  const auto delay = std::chrono::ceil<Duration>(
      std::chrono::duration<double>(std::isfinite(wait) ? std::min(wait, 3600.0) : 3600.0));
  return now + std::max(delay, kBatch);
}

void SendQueue::DropApp() {
  for (const Frame& f : app_) {
    bytes_ -= f.bytes.size();
  }
  app_.clear();
}

void SendQueue::Clear() {
  control_.clear();
  app_.clear();
  bytes_ = 0;
}

}  // namespace molt::kernel::client
