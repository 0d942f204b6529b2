// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/zones.h
//
// Zones: named interest groups (spec: replica:bindZone, a zone being an interest group here).
// A session in a zone sees the replicas bound to it: entering sends their snapshots, leaving
// their removes, each once however many zones hold the same replica (the replica counts its
// sources: InterestSources). Bound replicas have the list audience.
//
//   Result<ZoneId> hall = zones.Declare("hall", owner);
//   zones.Bind(*hall, door_replica);
//   zones.Enter(*hall, ada);      // ada gets the door's snapshot at its next delivery
//   zones.Leave(*hall, ada);      // and its Remove
//
// A session that ends leaves every zone without a Remove (it is gone). A destroyed replica
// drops out of its zones; a destroyed zone takes its replicas from its members (removes).
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_ZONES_H_
#define MOLT_KERNEL_NET_ZONES_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "kernel/src/core/signal.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/replica_types.h"

namespace molt::kernel::net {

class Replicas;
class Sessions;
using ZoneId = std::uint32_t;

class Zones {
 public:
  Zones(Sessions& sessions, Replicas& replicas);
  Zones(const Zones&) = delete;
  Zones& operator=(const Zones&) = delete;
  ~Zones();

  // A new zone owned by `owner` (Adopt hands it on). A name is 1 to 128 characters.
  Result<ZoneId> Declare(std::string name, const void* owner);
  // Its members lose the replicas only it held (removes), then it is forgotten.
  Status Destroy(ZoneId zone);
  // Idempotent. Enter: a session that is not active is NOT_FOUND.
  Status Enter(ZoneId zone, SessionId session);
  Status Leave(ZoneId zone, SessionId session);
  // Idempotent. Bind refuses a replica of the everyone audience (everyone sees it already).
  Status Bind(ZoneId zone, ReplicaId replica);
  Status Unbind(ZoneId zone, ReplicaId replica);

  // Hands zone `zone` to `owner` (a swap: the next generation declares it again).
  Status Adopt(ZoneId zone, const void* owner);
  // The name of zone `zone`, or "" when unknown.
  std::string NameOf(ZoneId zone) const;
  // The zone `owner` declared by `name`, or 0.
  ZoneId Named(const void* owner, std::string_view name) const;
  bool Contains(ZoneId zone, SessionId session) const;
  std::size_t count() const { return zones_.size(); }

 private:
  struct Zone {
    std::string name;
    const void* owner = nullptr;
    std::unordered_set<SessionId> members;
    std::vector<ReplicaId> replicas;  // bound, in bind order
  };
  Result<Zone*> Find(ZoneId zone, std::string_view what);

  Sessions& sessions_;
  Replicas& replicas_;
  std::map<ZoneId, Zone> zones_;
  ZoneId next_id_ = 1;
  Connection on_session_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // expires with this object
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_ZONES_H_
