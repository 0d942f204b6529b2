// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/front_door.h
//
// The front door's bookkeeping, before any plugin code runs (docs/network.md, "Handshake
// slots"): HandshakeSlots holds the half-open connections (accepted, no Welcome yet), oldest
// first and counted per address, and the per-address handshake rate; RefusalLog writes one line
// per refusal reason per interval and counts the rest into the next. The Network decides with
// them and acts (Refuse frames, closes): front_door.cc holds its admission and the Hello.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_FRONT_DOOR_H_
#define MOLT_KERNEL_NET_FRONT_DOOR_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/token_bucket.h"

namespace molt::kernel::net {

class Peer;

class HandshakeSlots {
 public:
  // `per_second`: handshakes each address may start per second (twice that at once).
  explicit HandshakeSlots(double per_second) : per_second_(per_second) {}
  HandshakeSlots(const HandshakeSlots&) = delete;
  HandshakeSlots& operator=(const HandshakeSlots&) = delete;

  // Charges one handshake to `address`'s rate: false when it has none left, with the seconds
  // until it has one in `*retry_after`.
  bool TakeRate(const std::string& address, TimePoint now, double* retry_after);
  // The half-open connection of `address` that waited longest, when `address` holds `share`
  // slots or more; else nullptr.
  Peer* OldestOf(const std::string& address, std::size_t share) const;
  // The half-open connection that waited longest, when `total` slots or more are held.
  Peer* OldestWhenFull(std::size_t total) const;
  // `peer` takes a slot / gives it back (joined, refused or closed). Leave is idempotent.
  void Enter(Peer& peer);
  void Leave(Peer& peer);
  std::size_t size() const { return half_open_.size(); }

 private:
  double per_second_;
  std::list<Peer*> half_open_;  // oldest first
  std::unordered_map<std::string, std::uint32_t> by_address_;
  std::unordered_map<std::string, TokenBucket> rates_;
};

class RefusalLog {
 public:
  explicit RefusalLog(double interval_seconds) : interval_seconds_(interval_seconds) {}

  // A handshake failed for `reason` (a RefuseReason or ExitReason name): logged now when its
  // reason was quiet for the interval, else counted into the next line. True when a count waits
  // for Flush.
  bool Note(std::string_view reason, const std::string& address, std::string_view text,
            TimePoint now);
  // Writes the counted lines whose interval ended (every one when `all`).
  void Flush(bool all, TimePoint now);
  bool waiting() const;

 private:
  struct Window {
    TimePoint quiet_until{};
    std::uint64_t count = 0;  // refusals since the last line
    std::string address, text;
  };
  double interval_seconds_;
  std::map<std::string, Window, std::less<>> windows_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_FRONT_DOOR_H_
