// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/predictions.h
//
// Predictions: the predicted intents a client has sent and the server has not yet decided
// (Connection, connection.h; spec: Prediction.wrap). Each gets the next sequence number of the
// client (1, 2, ...; 0 is never used), which its Intent frame carries; the server's Acks name it
// accepted or rejected, and an intent with no answer by its deadline (2 s by default) is
// resolved as timed out: the app rolls it back, as for a rejection. Each is resolved exactly once;
// an answer after the deadline finds nothing. Until then the app can replay the pending inputs
// over authoritative state (Pending), oldest first.
//
//   const std::uint32_t seq = predictions.Add(channel, payload, RealNow() + Seconds(2));
//   predictions.Ack(accepted, rejected, resolved);   // an Acks frame
//   predictions.ExpireDue(RealNow(), resolved);       // each step
//
// Thread safety: not thread-safe; REQUIRES one thread at a time (the connection's).
#ifndef MOLT_KERNEL_CLIENT_PREDICTIONS_H_
#define MOLT_KERNEL_CLIENT_PREDICTIONS_H_

#include <molt/molt.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"

namespace molt::kernel::client {

class Predictions {
 public:
  // One decision: the intent `seq` on `channel`, MOLT_OK (accepted), MOLT_ERR_REJECTED or
  // MOLT_ERR_TIMEOUT (no answer in time, or the session ended).
  using Resolved = Callback<void(std::uint16_t channel, std::uint32_t seq, molt_status_t status)>;

  // The seq the next Add() returns.
  std::uint32_t next_seq() const { return next_seq_; }
  // A new pending intent, resolved by `deadline` at the latest; its seq.
  std::uint32_t Add(std::uint16_t channel, std::span<const std::uint8_t> payload,
                    TimePoint deadline);
  // Withdraws `seq` unresolved (its frame could not be sent after all).
  void Forget(std::uint32_t seq) { pending_.erase(seq); }
  // The server's answers: each pending seq named is resolved (in seq order, accepted ones first
  // within one frame); seqs not pending (resolved already, or never sent) are ignored.
  void Ack(std::span<const std::uint32_t> accepted, std::span<const std::uint32_t> rejected,
           const Resolved& resolved);
  // Resolves as timed out every intent whose deadline is at or before `now`, oldest first.
  void ExpireDue(TimePoint now, const Resolved& resolved);
  // Resolves every pending intent as timed out (the session ended).
  void FailAll(const Resolved& resolved);
  // The earliest deadline, if any intent is pending.
  std::optional<TimePoint> NextDeadline() const;
  // The pending intents on `channel` (0xFFFF: every channel), oldest first: copies, so a
  // callback that replays them may add or resolve intents meanwhile.
  struct Pending {
    std::uint16_t channel = 0;
    std::uint32_t seq = 0;
    std::vector<std::uint8_t> payload;
  };
  std::vector<Pending> List(std::uint16_t channel) const;
  std::size_t size() const { return pending_.size(); }

 private:
  struct Entry {
    std::uint16_t channel = 0;
    TimePoint deadline{};
    std::vector<std::uint8_t> payload;
  };
  // Removes `seq` and tells `resolved`; nothing when it is not pending.
  void Resolve(std::uint32_t seq, molt_status_t status, const Resolved& resolved);

  // By seq: the order they were sent in (after 4 billion the seq wraps to 1, and for as long as
  // an intent from before the wrap is pending, the newer ones list first).
  std::map<std::uint32_t, Entry> pending_;
  std::uint32_t next_seq_ = 1;
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_PREDICTIONS_H_
