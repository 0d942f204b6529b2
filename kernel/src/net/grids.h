// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/grids.h
//
// Grids: spatial interest for replicas, the common case of interest in a game world. A grid
// places replicas by two of their float fields (x and y) and sessions where game code says they
// are; each session sees the replicas within the grid's radius (and keeps seeing one until it is
// beyond leave_radius). A pass at the grid's rate (10 Hz by default) reads the bound replicas'
// positions, runs the SpatialGrid's interest pass, and turns each change into a source of
// interest (InterestSources::kGrid): a snapshot on entering, a remove on leaving, once each.
//
//   GridSpec spec;
//   spec.name = "world";
//   spec.options.radius = 50;
//   Result<GridId> world = grids.Declare(std::move(spec), owner);
//   grids.BindReplica(*world, avatar, /*x_field=*/0, /*y_field=*/1);
//   grids.PlaceSession(*world, ada, 10, 20);     // where ada's camera is
//
// The cost of a pass grows with sessions x replicas near each (tests/bench/interest_bench.cc),
// never with sessions x all replicas. A session that ends leaves its grids without removes; a
// destroyed replica leaves at the next pass; a destroyed grid takes its replicas from everyone
// who saw them through it.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_GRIDS_H_
#define MOLT_KERNEL_NET_GRIDS_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "kernel/src/core/scheduler.h"
#include "kernel/src/core/signal.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/replica_types.h"
#include "kernel/src/net/spatial_grid.h"

namespace molt::kernel::net {

class Replicas;
class Sessions;
using GridId = std::uint32_t;

struct GridSpec {
  std::string name;            // 1 to 128 characters
  SpatialGridOptions options;  // the radius at least
  double rate = 10;            // interest passes a second, (0, 100]
};

struct GridStats {
  std::size_t grids = 0;
  std::uint64_t passes = 0;
  std::uint64_t enters = 0;  // (session, replica) pairs that came into view
  std::uint64_t leaves = 0;
};

class Grids {
 public:
  Grids(Sessions& sessions, Replicas& replicas, Scheduler& scheduler);
  Grids(const Grids&) = delete;
  Grids& operator=(const Grids&) = delete;
  ~Grids();

  // A new grid owned by `owner`; errors name the grid and the value at fault.
  Result<GridId> Declare(GridSpec spec, const void* owner);
  // Everyone who saw a replica through it loses that source (removes), then it is forgotten.
  Status Destroy(GridId grid);
  // Replica `replica` (list audience) is placed at its float fields `x_field`, `y_field`, read
  // at every pass. Binding again changes the fields.
  Status BindReplica(GridId grid, ReplicaId replica, std::uint32_t x_field, std::uint32_t y_field);
  Status UnbindReplica(GridId grid, ReplicaId replica);
  // Session `session` sees from (x, y) from the next pass on.
  Status PlaceSession(GridId grid, SessionId session, double x, double y);
  Status RemoveSession(GridId grid, SessionId session);
  // One pass of every grid now (a test; the scheduler runs them at their rates).
  void PassAll();

  Status Adopt(GridId grid, const void* owner);
  GridId Named(const void* owner, std::string_view name) const;
  // The name of grid `grid`, or "" when unknown.
  std::string NameOf(GridId grid) const;
  GridStats stats() const;

 private:
  struct Binding {
    std::uint32_t x_field;
    std::uint32_t y_field;
  };
  struct Grid {
    std::string name;
    const void* owner = nullptr;
    SpatialGrid space;
    std::unordered_map<ReplicaId, Binding> replicas;
    std::unordered_set<SessionId> sessions;  // placed
    TaskHandle pass;
  };
  Result<Grid*> Find(GridId grid, std::string_view what);
  void Pass(GridId grid);

  Sessions& sessions_;
  Replicas& replicas_;
  Scheduler& scheduler_;
  std::map<GridId, Grid> grids_;
  GridId next_id_ = 1;
  GridStats stats_;
  Connection on_session_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // expires with this object
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_GRIDS_H_
