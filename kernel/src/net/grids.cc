// SPDX-License-Identifier: Apache-2.0
// Grids: the named spatial grids and their passes, each change a source of interest (grids.h).
#include "kernel/src/net/grids.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>
#include <vector>

#include "kernel/src/net/replica.h"
#include "kernel/src/net/session.h"

namespace molt::kernel::net {

Grids::Grids(Sessions& sessions, Replicas& replicas, Scheduler& scheduler)
    : sessions_(sessions), replicas_(replicas), scheduler_(scheduler) {
  on_session_ = sessions_.OnSession([this](Session& s) {
    // Gone: it sees nothing (and is sent no Remove). The binding may outlive this object
    // (sessions destroyed after it): it checks `alive_` first.
    s.Bind([this, session = s.id(), alive = std::weak_ptr<int>(alive_)] {
      if (alive.expired()) {
        return;
      }
      for (auto& [id, g] : grids_) {
        if (g.sessions.erase(session) > 0) {
          g.space.RemoveViewer(session);
        }
      }
    });
  });
}

Grids::~Grids() {
  on_session_.Disconnect();
  for (auto& [id, g] : grids_) {
    g.pass.Cancel();
  }
}

Result<Grids::Grid*> Grids::Find(GridId grid, std::string_view what) {
  auto it = grids_.find(grid);
  if (it == grids_.end()) {
    return Status::NotFound(fmt::format("{}: grid {} does not exist (destroyed?)", what, grid));
  }
  return &it->second;
}

Result<GridId> Grids::Declare(GridSpec spec, const void* owner) {
  if (spec.name.empty() || spec.name.size() > 128) {
    return Status::InvalidArgument("a grid needs a name of 1 to 128 characters");
  }
  if (!(spec.rate > 0 && spec.rate <= 100)) {
    return Status::InvalidArgument(fmt::format(
        "grid \"{}\": rate {} is out of range (0, 100] passes a second", spec.name, spec.rate));
  }
  Result<SpatialGrid> space = SpatialGrid::Create(spec.options);
  if (!space.ok()) {
    return Status::InvalidArgument(
        fmt::format("grid \"{}\": {}", spec.name, space.status().message()));
  }
  const GridId id = next_id_++;
  Grid& g = grids_.emplace(id, Grid{std::move(spec.name), owner, std::move(*space), {}, {}, {}})
                .first->second;
  const Duration period =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(1 / spec.rate));
  g.pass = scheduler_.Every(period, [this, id] { Pass(id); });
  return id;
}

Status Grids::Destroy(GridId grid) {
  MOLT_ASSIGN_OR_RETURN(Grid * found, Find(grid, "destroy"));
  found->pass.Cancel();
  std::vector<std::pair<SessionId, ReplicaId>> seen;
  for (SessionId s : found->sessions) {
    for (ReplicaId r : found->space.Visible(s)) {
      seen.emplace_back(s, r);
    }
  }
  grids_.erase(grid);  // forgotten before any Remove can run a handler
  for (const auto& [s, r] : seen) {
    (void)replicas_.Leave(r, s, InterestSource::kGrid);
  }
  return Status();
}

Status Grids::BindReplica(GridId grid, ReplicaId replica, std::uint32_t x_field,
                          std::uint32_t y_field) {
  MOLT_ASSIGN_OR_RETURN(Grid * g, Find(grid, "bind"));
  const std::optional<Audience> audience = replicas_.AudienceOf(replica);
  if (!audience) {
    return Status::NotFound(fmt::format("bind: replica {} does not exist (destroyed?)", replica));
  }
  if (*audience != Audience::kList) {
    return Status::FailedPrecondition(fmt::format(
        "replica \"{}\" goes to everyone; create it with the list audience to place it in grid "
        "\"{}\"",
        replicas_.NameOf(replica), g->name));
  }
  MOLT_ASSIGN_OR_RETURN(double x, replicas_.Float(replica, x_field));
  MOLT_ASSIGN_OR_RETURN(double y, replicas_.Float(replica, y_field));
  MOLT_RETURN_IF_ERROR(g->space.PlaceItem(replica, x, y));
  g->replicas[replica] = {x_field, y_field};
  return Status();
}

Status Grids::UnbindReplica(GridId grid, ReplicaId replica) {
  MOLT_ASSIGN_OR_RETURN(Grid * g, Find(grid, "unbind"));
  if (g->replicas.erase(replica) > 0) {
    g->space.RemoveItem(replica);  // its viewers lose it at the next pass
  }
  return Status();
}

Status Grids::PlaceSession(GridId grid, SessionId session, double x, double y) {
  MOLT_ASSIGN_OR_RETURN(Grid * g, Find(grid, "place"));
  if (sessions_.Get(session) == nullptr) {
    return Status::NotFound(fmt::format("session {} is not active", session));
  }
  MOLT_RETURN_IF_ERROR(g->space.PlaceViewer(session, x, y));
  g->sessions.insert(session);
  return Status();
}

Status Grids::RemoveSession(GridId grid, SessionId session) {
  MOLT_ASSIGN_OR_RETURN(Grid * g, Find(grid, "remove"));
  if (g->sessions.erase(session) == 0) {
    return Status();
  }
  const std::span<const ReplicaId> visible = g->space.Visible(session);
  const std::vector<ReplicaId> seen(visible.begin(), visible.end());
  g->space.RemoveViewer(session);
  for (ReplicaId r : seen) {  // `g` may be gone after a Remove: nothing of it is read here
    (void)replicas_.Leave(r, session, InterestSource::kGrid);
  }
  return Status();
}

void Grids::Pass(GridId grid) {
  auto it = grids_.find(grid);
  if (it == grids_.end()) {
    return;
  }
  Grid& g = it->second;
  ++stats_.passes;
  for (auto r = g.replicas.begin(); r != g.replicas.end();) {
    Result<double> x = replicas_.Float(r->first, r->second.x_field);
    Result<double> y = replicas_.Float(r->first, r->second.y_field);
    if (!x.ok() || !y.ok()) {  // destroyed: its viewers lose it now
      g.space.RemoveItem(r->first);
      r = g.replicas.erase(r);
      continue;
    }
    (void)g.space.PlaceItem(r->first, *x, *y);  // out of the grid's range: stays where it was
    ++r;
  }
  std::vector<std::pair<SessionId, ReplicaId>> entered, left;
  g.space.Update([&](SessionId s, ReplicaId r) { entered.emplace_back(s, r); },
                 [&](SessionId s, ReplicaId r) { left.emplace_back(s, r); });
  stats_.enters += entered.size();
  stats_.leaves += left.size();
  // After the pass: a Remove can end a session, whose handlers may change the grids.
  for (const auto& [s, r] : entered) {
    (void)replicas_.Enter(r, s, InterestSource::kGrid);
  }
  for (const auto& [s, r] : left) {
    (void)replicas_.Leave(r, s, InterestSource::kGrid);
  }
}

void Grids::PassAll() {
  std::vector<GridId> ids;
  for (const auto& [id, g] : grids_) {
    ids.push_back(id);
  }
  for (GridId id : ids) {
    Pass(id);
  }
}

Status Grids::Adopt(GridId grid, const void* owner) {
  MOLT_ASSIGN_OR_RETURN(Grid * g, Find(grid, "adopt"));
  g->owner = owner;
  return Status();
}

GridId Grids::Named(const void* owner, std::string_view name) const {
  for (const auto& [id, g] : grids_) {
    if (g.owner == owner && g.name == name) {
      return id;
    }
  }
  return 0;
}

std::string Grids::NameOf(GridId grid) const {
  auto it = grids_.find(grid);
  return it == grids_.end() ? std::string() : it->second.name;
}

GridStats Grids::stats() const {
  GridStats s = stats_;
  s.grids = grids_.size();
  return s;
}

}  // namespace molt::kernel::net
