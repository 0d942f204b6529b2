// SPDX-License-Identifier: Apache-2.0
// HandshakeSlots (handshake_slots.h): the half-open connections and the per-address rate.
#include "kernel/src/net/handshake_slots.h"

#include <iterator>

#include "kernel/src/net/link.h"
#include "kernel/src/net/peer.h"

namespace molt::kernel::net {
namespace {

constexpr std::size_t kForgetRatesAbove = 4096;  // addresses whose rate buckets are kept

}  // namespace

bool HandshakeSlots::TakeRate(const std::string& address, TimePoint now, double* retry_after) {
  if (rates_.size() > kForgetRatesAbove) {  // forget addresses whose buckets refilled
    for (auto it = rates_.begin(); it != rates_.end();) {
      it = it->second.Available(now) >= it->second.burst() ? rates_.erase(it) : std::next(it);
    }
  }
  auto [it, fresh] = rates_.try_emplace(address, per_second_, per_second_ * 2, now);
  if (it->second.Take(now)) {
    return true;
  }
  *retry_after = it->second.SecondsUntil(now);
  return false;
}

Peer* HandshakeSlots::OldestOf(const std::string& address, std::size_t share) const {
  auto it = by_address_.find(address);
  if (it == by_address_.end() || it->second < share) {
    return nullptr;
  }
  for (Peer* p : half_open_) {
    if (p->address() == address) {
      return p;
    }
  }
  return nullptr;
}

Peer* HandshakeSlots::OldestWhenFull(std::size_t total) const {
  return half_open_.size() >= total ? half_open_.front() : nullptr;
}

void HandshakeSlots::Enter(Peer& peer) {
  Link& link = peer.link();
  link.waiting = half_open_.insert(half_open_.end(), &peer);
  link.in_handshake = true;
  ++by_address_[peer.address()];
}

void HandshakeSlots::Leave(Peer& peer) {
  Link& link = peer.link();
  if (!link.in_handshake) {
    return;
  }
  link.in_handshake = false;
  half_open_.erase(link.waiting);
  auto it = by_address_.find(peer.address());
  if (it != by_address_.end() && --it->second == 0) {
    by_address_.erase(it);
  }
}

}  // namespace molt::kernel::net
