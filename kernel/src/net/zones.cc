// SPDX-License-Identifier: Apache-2.0
// Zones: interest groups, each member a source of interest in each bound replica (zones.h).
#include "kernel/src/net/zones.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "kernel/src/net/replica.h"
#include "kernel/src/net/session.h"

namespace molt::kernel::net {

Zones::Zones(Sessions& sessions, Replicas& replicas) : sessions_(sessions), replicas_(replicas) {
  on_session_ = sessions_.OnSession([this](Session& s) {
    // Gone: no zone holds it (and nobody sends it a Remove). The binding may outlive this
    // object (sessions destroyed after it): it checks `alive_` first.
    s.Bind([this, session = s.id(), alive = std::weak_ptr<int>(alive_)] {
      if (alive.expired()) {
        return;
      }
      for (auto& [id, zone] : zones_) {
        zone.members.erase(session);
      }
    });
  });
}

Zones::~Zones() { on_session_.Disconnect(); }

Result<Zones::Zone*> Zones::Find(ZoneId zone, std::string_view what) {
  auto it = zones_.find(zone);
  if (it == zones_.end()) {
    return Status::NotFound(fmt::format("{}: zone {} does not exist (destroyed?)", what, zone));
  }
  return &it->second;
}

Result<ZoneId> Zones::Declare(std::string name, const void* owner) {
  if (name.empty() || name.size() > 128) {
    return Status::InvalidArgument("a zone needs a name of 1 to 128 characters");
  }
  const ZoneId id = next_id_++;
  zones_.emplace(id, Zone{std::move(name), owner, {}, {}});
  return id;
}

Status Zones::Destroy(ZoneId zone) {
  MOLT_ASSIGN_OR_RETURN(Zone * z, Find(zone, "destroy"));
  Zone gone = std::move(*z);
  zones_.erase(zone);  // forgotten before any Remove can run a handler
  for (ReplicaId r : gone.replicas) {
    for (SessionId s : gone.members) {
      (void)replicas_.Leave(r, s, InterestSource::kZone);
    }
  }
  return Status();
}

Status Zones::Enter(ZoneId zone, SessionId session) {
  MOLT_ASSIGN_OR_RETURN(Zone * z, Find(zone, "enter"));
  if (sessions_.Get(session) == nullptr) {
    return Status::NotFound(fmt::format("session {} is not active", session));
  }
  if (!z->members.insert(session).second) {
    return Status();
  }
  // A destroyed replica drops out of the zone here.
  std::erase_if(z->replicas, [&](ReplicaId r) {
    return replicas_.Enter(r, session, InterestSource::kZone).code() == Status::Code::kNotFound;
  });
  return Status();
}

Status Zones::Leave(ZoneId zone, SessionId session) {
  MOLT_ASSIGN_OR_RETURN(Zone * z, Find(zone, "leave"));
  if (z->members.erase(session) == 0) {
    return Status();
  }
  const std::vector<ReplicaId> bound = z->replicas;  // a Remove may run handlers
  for (ReplicaId r : bound) {
    (void)replicas_.Leave(r, session, InterestSource::kZone);
  }
  return Status();
}

Status Zones::Bind(ZoneId zone, ReplicaId replica) {
  MOLT_ASSIGN_OR_RETURN(Zone * z, Find(zone, "bind"));
  if (std::find(z->replicas.begin(), z->replicas.end(), replica) != z->replicas.end()) {
    return Status();
  }
  const std::optional<Audience> audience = replicas_.AudienceOf(replica);
  if (!audience) {
    return Status::NotFound(fmt::format("bind: replica {} does not exist (destroyed?)", replica));
  }
  if (*audience != Audience::kList) {
    return Status::FailedPrecondition(fmt::format(
        "replica \"{}\" goes to everyone; create it with the list audience to bind it to zone "
        "\"{}\"",
        replicas_.NameOf(replica), z->name));
  }
  z->replicas.push_back(replica);
  for (SessionId s : z->members) {
    (void)replicas_.Enter(replica, s, InterestSource::kZone);
  }
  return Status();
}

Status Zones::Unbind(ZoneId zone, ReplicaId replica) {
  MOLT_ASSIGN_OR_RETURN(Zone * z, Find(zone, "unbind"));
  auto it = std::find(z->replicas.begin(), z->replicas.end(), replica);
  if (it == z->replicas.end()) {
    return Status();
  }
  z->replicas.erase(it);
  const std::vector<SessionId> members(z->members.begin(), z->members.end());
  for (SessionId s : members) {
    (void)replicas_.Leave(replica, s, InterestSource::kZone);
  }
  return Status();
}

Status Zones::Adopt(ZoneId zone, const void* owner) {
  MOLT_ASSIGN_OR_RETURN(Zone * z, Find(zone, "adopt"));
  z->owner = owner;
  return Status();
}

std::string Zones::NameOf(ZoneId zone) const {
  auto it = zones_.find(zone);
  return it == zones_.end() ? std::string() : it->second.name;
}

ZoneId Zones::Named(const void* owner, std::string_view name) const {
  for (const auto& [id, z] : zones_) {
    if (z.owner == owner && z.name == name) {
      return id;
    }
  }
  return 0;
}

bool Zones::Contains(ZoneId zone, SessionId session) const {
  auto it = zones_.find(zone);
  return it != zones_.end() && it->second.members.contains(session);
}

}  // namespace molt::kernel::net
