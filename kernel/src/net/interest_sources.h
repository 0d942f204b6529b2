// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/interest_sources.h
//
// InterestSources: why each session may see one replica. A session is a candidate while at
// least one source holds it: the replica's own list (AddSession), each zone bound to the replica
// that the session is in (a count: two zones, two holds), or a spatial grid. The replica's
// interest predicate, if it has one, then decides among the candidates (replica.h).
//
//   InterestSources sources;
//   sources.Add(ada, InterestSource::kZone);      // true: ada became a candidate
//   sources.Add(ada, InterestSource::kList);      // false: she already was
//   sources.Remove(ada, InterestSource::kZone);   // false: the list still holds her
//
// Thread safety: one thread.
#ifndef MOLT_KERNEL_NET_INTEREST_SOURCES_H_
#define MOLT_KERNEL_NET_INTEREST_SOURCES_H_

#include <cstdint>
#include <unordered_map>

#include "kernel/src/net/channel.h"

namespace molt::kernel::net {

enum class InterestSource : std::uint8_t { kList = 1, kGrid = 2, kZone = 4 };

class InterestSources {
 public:
  // True when `session` became a candidate (it had no source before). A list or grid source
  // added twice holds once; every zone adds a hold.
  bool Add(SessionId session, InterestSource source) {
    Held& h = held_[session];
    const bool was = h.any();
    if (source == InterestSource::kZone) {
      ++h.zones;
    } else {
      h.bits |= static_cast<std::uint8_t>(source);
    }
    return !was;
  }
  // True when `session` stopped being a candidate (that was its last source).
  bool Remove(SessionId session, InterestSource source) {
    auto it = held_.find(session);
    if (it == held_.end()) {
      return false;
    }
    Held& h = it->second;
    if (source == InterestSource::kZone) {
      if (h.zones == 0) {
        return false;
      }
      --h.zones;
    } else {
      if ((h.bits & static_cast<std::uint8_t>(source)) == 0) {
        return false;
      }
      h.bits &= static_cast<std::uint8_t>(~static_cast<std::uint8_t>(source));
    }
    if (h.any()) {
      return false;
    }
    held_.erase(it);
    return true;
  }
  bool Has(SessionId session) const { return held_.contains(session); }
  // The session ended: it holds nothing.
  void Forget(SessionId session) { held_.erase(session); }
  bool empty() const { return held_.empty(); }
  template <class F>
  void ForEach(F&& fn) const {
    for (const auto& [session, h] : held_) {
      fn(session);
    }
  }

 private:
  struct Held {
    std::uint8_t bits = 0;    // kList | kGrid
    std::uint32_t zones = 0;  // zones bound to the replica that hold the session
    bool any() const { return bits != 0 || zones != 0; }
  };
  std::unordered_map<SessionId, Held> held_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_INTEREST_SOURCES_H_
