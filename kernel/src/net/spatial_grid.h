// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/spatial_grid.h
//
// SpatialGrid: who sees what in a 2-D world, for replica interest (DESIGN.md §7: "a spatial
// grid"). It holds two kinds of points on a uniform grid of square cells: items (replicas, by
// ItemId) and viewers (sessions, by ViewerId, the type of SessionId). A viewer sees the items
// within `radius` of it; once seen, an item stays visible while it is within `leave_radius`
// (hysteresis: an item on the edge does not flicker in and out). The grid knows ids and
// positions only: no replica, no session, no clock.
//
//   SpatialGridOptions options;
//   options.radius = 50;                 // cell_size and leave_radius default to it
//   options.leave_radius = 55;
//   Result<SpatialGrid> grid = SpatialGrid::Create(options);
//   (void)grid->PlaceItem(replica, 10, -3.5);    // insert or move: O(1)
//   (void)grid->PlaceViewer(session, 0, 0);
//   grid->Update([&](auto viewer, auto item) { Show(viewer, item); },   // entered its view
//                [&](auto viewer, auto item) { Hide(viewer, item); });  // left it
//
// Update() is the interest pass: each viewer's visible set is recomputed from the cells around
// it (the items of about (2 * ceil(leave_radius / cell_size) + 1)^2 cells, gathered once per
// cell of viewers), never by a scan of every item for every viewer, and diffed against the set
// of the previous pass, so each transition is reported exactly once. Between passes nothing is
// reported: an item placed and moved away again is never seen. tests/bench/interest_bench.cc
// measures a pass beside the O(N^2) scan.
//
// Removal: an item removed leaves the view of every viewer who saw it at the next Update (that
// viewer gets a leave; until then Visible() still lists it, and an item placed again under the
// same id before the pass is the same item). A viewer removed forgets its set at once and gets
// nothing: a session that ended is sent no leaves. A viewer placed again starts with an empty
// set and gets an enter for each item it sees.
//
// "Within r" is, in double arithmetic, (x_item - x_viewer)^2 + (y_item - y_viewer)^2 <= r^2: a
// point exactly at the radius is inside. Coordinates may be negative (cells are floor(x /
// cell_size)); NaN, infinities and points further than 2^30 cells from the origin are refused.
//
// Thread safety: a value type; REQUIRES external synchronization per object (the kernel thread).
#ifndef MOLT_KERNEL_NET_SPATIAL_GRID_H_
#define MOLT_KERNEL_NET_SPATIAL_GRID_H_

#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kernel/src/core/callback.h"

namespace molt::kernel::net {

struct SpatialGridOptions {
  // A viewer starts to see an item within this distance. REQUIRES: finite, > 0.
  double radius = 0;
  // The side of a cell; 0 means `radius`. Smaller cells walk more cells of fewer items; the
  // walk may span at most kMaxReach cells each way (cell_size >= leave_radius / kMaxReach).
  double cell_size = 0;
  // A viewer stops seeing an item beyond this distance; 0 means `radius`. REQUIRES: >= radius.
  double leave_radius = 0;
};

class SpatialGrid {
 public:
  using ItemId = std::uint32_t;    // a replica (ReplicaId)
  using ViewerId = std::uint64_t;  // a session (SessionId, channel.h)
  // Called by Update for each transition: `item` entered or left `viewer`'s view.
  using Transition = Callback<void(ViewerId viewer, ItemId item)>;

  // The most cells a walk spans on each side of a viewer's cell.
  static constexpr int kMaxReach = 16;
  // Cell indices stay within +-kMaxCell on each axis.
  static constexpr double kMaxCell = 1073741824.0;  // 2^30

  // A grid with `options` (zeros replaced by their defaults), or INVALID_ARGUMENT naming the
  // value at fault and what to set instead.
  static Result<SpatialGrid> Create(const SpatialGridOptions& options);

  // Movable, not copyable (entries point into the cell table).
  SpatialGrid(SpatialGrid&&) = default;
  SpatialGrid& operator=(SpatialGrid&&) = default;
  SpatialGrid(const SpatialGrid&) = delete;
  SpatialGrid& operator=(const SpatialGrid&) = delete;
  ~SpatialGrid();

  // Inserts item `id` at (x, y), or moves it there. O(1): a move within its cell changes only its
  // position; across cells it leaves the old cell's list (swap with the last) and joins the new
  // one's. INVALID_ARGUMENT (nothing changed) when x or y is not finite or out of range.
  Status PlaceItem(ItemId id, double x, double y);
  // Takes item `id` out; its viewers get a leave at the next Update. False when it was not here.
  bool RemoveItem(ItemId id);
  // As PlaceItem, for a viewer.
  Status PlaceViewer(ViewerId id, double x, double y);
  // Takes viewer `id` out and forgets what it saw (no leaves). False when it was not here.
  bool RemoveViewer(ViewerId id);

  // Calls `fn(item)` for each item within `r` of (x, y), in no particular order, walking only
  // the cells within `r` (or every cell, when there are fewer). Nothing when x or y is not
  // finite, or r is NaN or negative. REQUIRES: `fn` does not change this grid.
  void ForEachNear(double x, double y, double r, const Callback<void(ItemId)>& fn) const;

  // The interest pass: recomputes every viewer's visible set (the items within radius it did not
  // see, plus those it saw still within leave_radius) and calls `enter` / `leave` once per
  // change, viewer by viewer (in no particular order; a viewer's own calls in item id order).
  // Cost: about viewers x (items in the cells around one). REQUIRES: the callbacks do not change
  // this grid.
  void Update(const Transition& enter, const Transition& leave);

  // What `viewer` saw at the last Update, sorted by id; empty for an unknown viewer. Valid until
  // the next Update or the viewer's removal.
  std::span<const ItemId> Visible(ViewerId viewer) const;

  std::size_t items() const { return item_places_.size(); }
  std::size_t viewers() const { return viewers_.size(); }
  // Cells holding at least one item or viewer.
  std::size_t cells() const { return cells_.size(); }
  double radius() const { return radius_; }
  double cell_size() const { return cell_size_; }
  double leave_radius() const { return leave_radius_; }

 private:
  struct Cell;
  // An item as its cell lists it: the position is here so a walk reads no other table.
  struct CellItem {
    double x = 0;
    double y = 0;
    ItemId id = 0;
  };
  struct ItemPlace {
    std::uint64_t key = 0;  // the cell's packed (cx, cy)
    Cell* cell = nullptr;
    std::uint32_t slot = 0;  // index in cell->items
  };
  struct Viewer {
    ViewerId id = 0;
    double x = 0;
    double y = 0;
    std::uint64_t key = 0;
    Cell* cell = nullptr;
    std::uint32_t slot = 0;       // index in cell->viewers
    std::vector<ItemId> visible;  // sorted
  };
  struct Cell {
    std::vector<CellItem> items;
    std::vector<std::uint32_t> viewers;  // indices in viewers_
  };
  // Cell keys are two int32 packed in a uint64; this spreads them over the buckets.
  struct KeyHash {
    std::size_t operator()(std::uint64_t key) const noexcept {
      key ^= key >> 33;
      key *= 0xff51afd7ed558ccdULL;
      key ^= key >> 33;
      return static_cast<std::size_t>(key);
    }
  };
  // The cells a walk of `r` around (x, y) covers, inclusive, clamped to +-kMaxCell.
  struct Range {
    std::int64_t x0, x1, y0, y1;
  };

  SpatialGrid(double radius, double cell_size, double leave_radius);

  Status CheckPoint(const char* what, std::uint64_t id, double x, double y) const;
  std::uint64_t KeyOf(double x, double y) const;
  Range RangeOf(double x, double y, double r) const;
  Cell& CellAt(std::uint64_t key) { return cells_[key]; }
  void EraseIfEmpty(std::uint64_t key, Cell& cell);
  // Swap-removes slot `slot` of `cell`'s items / viewers, fixing the moved entry's slot.
  void TakeItemOut(Cell& cell, std::uint32_t slot);
  void TakeViewerOut(Cell& cell, std::uint32_t slot);
  // Appends the items of the cells in `range` to `out`.
  void Gather(const Range& range, std::vector<CellItem>& out) const;
  // The pass for the viewers of one cell.
  void UpdateCell(const Cell& cell, const Transition& enter, const Transition& leave);

  double radius_;
  double cell_size_;
  double leave_radius_;
  double radius2_;
  double leave2_;
  std::unordered_map<std::uint64_t, Cell, KeyHash> cells_;
  std::unordered_map<ItemId, ItemPlace> item_places_;
  std::vector<Viewer> viewers_;  // dense; cells list viewers by index
  std::unordered_map<ViewerId, std::uint32_t> viewer_index_;
  // Scratch of Update, kept to reuse its capacity: the items around a cell of viewers, then the
  // same sorted by id as columns (ids, x, y), one viewer's hits and its next visible set.
  std::vector<CellItem> gathered_;
  std::vector<std::uint64_t> order_;
  std::vector<ItemId> cand_id_;
  std::vector<double> cand_x_;
  std::vector<double> cand_y_;
  std::vector<std::uint32_t> hits_;
  std::vector<ItemId> next_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_SPATIAL_GRID_H_
