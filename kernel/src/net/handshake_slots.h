// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/handshake_slots.h
//
// HandshakeSlots: the half-open connections (accepted, no Welcome yet), oldest first and counted
// per address, and each address's handshake rate (docs/network.md, "Handshake slots"). The front
// door decides with them whom to refuse; the link table gives a slot back when a connection
// ends. Each connection's place is kept in its Link (link.h).
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_HANDSHAKE_SLOTS_H_
#define MOLT_KERNEL_NET_HANDSHAKE_SLOTS_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
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

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_HANDSHAKE_SLOTS_H_
