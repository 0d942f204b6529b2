// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/send_queue.h
//
// SendQueue: what the client has to send, released to the socket no faster than the server
// accepts it, so a well-behaved client is never ended as Flood nor refused as RateLimited, however
// fast the app calls. The server measures every connection against a transport budget (bytes and
// messages per tick, with a burst of some ticks: its Welcome announces them) and every session's
// channel against its rate and burst; it measures them as frames arrive. The queue releases frames
// in order under:
//   - the transport budget at 95% of the server's rates, with a quarter of its burst (at least one
//     maximal frame): what network jitter clumps together still fits the server's burst;
//   - each rate-limited channel at the same shares of its rate and burst, so frames that waited
//     in the queue (behind the transport budget, or a lost link), or an app that sends at the
//     channel's full rate, never meet a drained server bucket.
// Control frames (ping, pong) go ahead of the app's frames; the app's frames keep their order.
// Time is passed in, so tests drive it with a manual clock.
//
//   queue.SetBudget(SendQueue::ForServer(welcome), now);
//   queue.Push(frame, channel);
//   queue.Release(now, &to_write);                    // appends what may go now
//   std::optional<TimePoint> next = queue.NextRelease(now);
//
// Thread safety: a value type; REQUIRES external synchronization.
#ifndef MOLT_KERNEL_CLIENT_SEND_QUEUE_H_
#define MOLT_KERNEL_CLIENT_SEND_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/token_bucket.h"

namespace molt::kernel::client {

class SendQueue {
 public:
  // Rates per second and bursts, in bytes and in messages.
  struct Budget {
    double bytes_per_second = 0;
    double bytes_burst = 0;
    double messages_per_second = 0;
    double messages_burst = 0;
  };
  // The server's limits as its Welcome announced them.
  struct ServerLimits {
    double tick_rate = 60;
    std::uint32_t bytes_per_tick = 8192;
    std::uint32_t messages_per_tick = 64;
    double burst_ticks = 1;  // a server that does not announce it: assume the least
    std::uint32_t max_frame_bytes = 8192;
  };
  // How fast this client sends to such a server: see the file comment.
  static Budget ForServer(const ServerLimits& limits);
  static constexpr double kRateShare = 0.95;
  static constexpr double kBurstShare = 0.25;
  // Wakes for paced releases come no closer together than this: frames go in small batches.
  static constexpr Duration kBatch = std::chrono::milliseconds(1);

  SendQueue();

  // Sets the transport budget; its buckets start full.
  void SetBudget(const Budget& budget, TimePoint now);
  // Paces `channel`'s frames at `rate` per second with `burst` (an infinite rate: not paced).
  void SetChannelRate(std::uint16_t channel, double rate, double burst, TimePoint now);
  void ClearChannelRates() { channels_.clear(); }

  // Appends `frame` (its length prefix included). `channel` names the app's frames (intents and
  // requests); control frames (nullopt) go ahead of the app's.
  void Push(std::span<const std::uint8_t> frame, std::optional<std::uint16_t> channel);
  // A frame of `bytes` on `channel` that goes another way (the datagram link) but counts against
  // the same budgets, as the server counts it: true, and its share taken, when the budgets allow
  // it at `now`; false (nothing taken) when it would have to wait: queue it instead.
  bool TakeNow(std::size_t bytes, std::uint16_t channel, TimePoint now);
  // Appends to `out`, in order, every frame the budgets allow at `now`; returns how many.
  std::size_t Release(TimePoint now, std::vector<std::uint8_t>* out);
  // When the first waiting frame may go: `now` when it may go now, else never sooner than kBatch
  // from `now`; nullopt when the queue is empty.
  std::optional<TimePoint> NextRelease(TimePoint now);

  std::size_t bytes() const { return bytes_; }
  std::size_t frames() const { return control_.size() + app_.size(); }
  bool empty() const { return frames() == 0; }
  // Drops the app's frames (a new session: their channel ids were the old session's); control
  // frames stay.
  void DropApp();
  void Clear();

 private:
  struct Frame {
    std::vector<std::uint8_t> bytes;
    std::int32_t channel = -1;  // -1: a control frame
  };
  // Seconds until a frame of `bytes` on `channel` (-1: a control frame) may go at `now` (0: now).
  double Wait(std::size_t bytes, std::int32_t channel, TimePoint now);
  // Takes its share of every budget.
  void Take(std::size_t bytes, std::int32_t channel, TimePoint now);

  std::deque<Frame> control_;
  std::deque<Frame> app_;
  std::size_t bytes_ = 0;
  TokenBucket transport_bytes_;
  TokenBucket transport_messages_;
  std::unordered_map<std::uint16_t, TokenBucket> channels_;
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_SEND_QUEUE_H_
