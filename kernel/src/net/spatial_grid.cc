// SPDX-License-Identifier: Apache-2.0
// SpatialGrid (spatial_grid.h): items and viewers in cells, and the interest pass.
#include "kernel/src/net/spatial_grid.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace molt::kernel::net {
namespace {

std::uint64_t PackCell(std::int64_t cx, std::int64_t cy) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(static_cast<std::int32_t>(cx)))
          << 32) |
         static_cast<std::uint32_t>(static_cast<std::int32_t>(cy));
}

// Rounding may put a point the distance test accepts a hair beyond `r` (an ulp or so of the
// coordinates); a walk reaches this much further so such a point's cell is never missed.
double Pad(double coordinate, double r) { return 1e-9 * (std::abs(coordinate) + r); }

}  // namespace

Result<SpatialGrid> SpatialGrid::Create(const SpatialGridOptions& options) {
  const double radius = options.radius;
  if (!(std::isfinite(radius) && radius > 0)) {
    return Status::InvalidArgument(
        fmt::format("spatial grid: radius must be a finite number above 0 (got {}): set it to the "
                    "distance within which a viewer sees an item",
                    radius));
  }
  if (!(std::isfinite(options.cell_size) && options.cell_size >= 0)) {
    return Status::InvalidArgument(
        fmt::format("spatial grid: cell_size must be a finite number above 0, or 0 for the radius "
                    "(got {})",
                    options.cell_size));
  }
  if (!(std::isfinite(options.leave_radius) && options.leave_radius >= 0)) {
    return Status::InvalidArgument(
        fmt::format("spatial grid: leave_radius must be a finite number at least the radius ({}), "
                    "or 0 for the radius (got {})",
                    radius, options.leave_radius));
  }
  const double leave = options.leave_radius == 0 ? radius : options.leave_radius;
  if (leave < radius) {
    return Status::InvalidArgument(
        fmt::format("spatial grid: leave_radius {} is below radius {}: an item would leave a view "
                    "it is still in; set leave_radius to at least {} (or 0 for the radius)",
                    leave, radius, radius));
  }
  const double cell = options.cell_size == 0 ? radius : options.cell_size;
  if (leave / cell > kMaxReach * (1 + 1e-12)) {
    return Status::InvalidArgument(fmt::format(
        "spatial grid: cell_size {} is too small for leave_radius {}: a walk would span {} cells "
        "each way (at most {}); set cell_size to at least {} (leave_radius / {})",
        cell, leave, std::ceil(leave / cell), kMaxReach, leave / kMaxReach, kMaxReach));
  }
  return SpatialGrid(radius, cell, leave);
}

SpatialGrid::SpatialGrid(double radius, double cell_size, double leave_radius)
    : radius_(radius),
      cell_size_(cell_size),
      leave_radius_(leave_radius),
      radius2_(radius * radius),
      leave2_(leave_radius * leave_radius) {}

SpatialGrid::~SpatialGrid() = default;

Status SpatialGrid::CheckPoint(const char* what, std::uint64_t id, double x, double y) const {
  if (!std::isfinite(x) || !std::isfinite(y)) {
    return Status::InvalidArgument(fmt::format(
        "spatial grid: {} {} at ({}, {}): coordinates must be finite numbers", what, id, x, y));
  }
  const double cx = std::floor(x / cell_size_);
  const double cy = std::floor(y / cell_size_);
  if (std::abs(cx) > kMaxCell || std::abs(cy) > kMaxCell) {
    return Status::InvalidArgument(fmt::format(
        "spatial grid: {} {} at ({}, {}) is too far out: coordinates must stay within +-{} "
        "(2^30 cells of {}); use a larger cell_size or coordinates nearer the origin",
        what, id, x, y, kMaxCell * cell_size_, cell_size_));
  }
  return Status::Ok();
}

std::uint64_t SpatialGrid::KeyOf(double x, double y) const {
  return PackCell(static_cast<std::int64_t>(std::floor(x / cell_size_)),
                  static_cast<std::int64_t>(std::floor(y / cell_size_)));
}

SpatialGrid::Range SpatialGrid::RangeOf(double x, double y, double r) const {
  auto cell = [this](double v) {
    return static_cast<std::int64_t>(std::clamp(std::floor(v / cell_size_), -kMaxCell, kMaxCell));
  };
  const double px = Pad(x, r);
  const double py = Pad(y, r);
  return Range{cell(x - r - px), cell(x + r + px), cell(y - r - py), cell(y + r + py)};
}

void SpatialGrid::EraseIfEmpty(std::uint64_t key, Cell& cell) {
  if (cell.items.empty() && cell.viewers.empty()) {
    cells_.erase(key);
  }
}

void SpatialGrid::TakeItemOut(Cell& cell, std::uint32_t slot) {
  const std::size_t last = cell.items.size() - 1;
  if (slot != last) {
    cell.items[slot] = cell.items[last];
    item_places_.find(cell.items[slot].id)->second.slot = slot;
  }
  cell.items.pop_back();
}

void SpatialGrid::TakeViewerOut(Cell& cell, std::uint32_t slot) {
  const std::size_t last = cell.viewers.size() - 1;
  if (slot != last) {
    cell.viewers[slot] = cell.viewers[last];
    viewers_[cell.viewers[slot]].slot = slot;
  }
  cell.viewers.pop_back();
}

Status SpatialGrid::PlaceItem(ItemId id, double x, double y) {
  MOLT_RETURN_IF_ERROR(CheckPoint("item", id, x, y));
  const std::uint64_t key = KeyOf(x, y);
  auto [it, inserted] = item_places_.try_emplace(id);
  ItemPlace& place = it->second;
  if (!inserted && place.key == key) {
    CellItem& entry = place.cell->items[place.slot];
    entry.x = x;
    entry.y = y;
    return Status::Ok();
  }
  Cell& to = CellAt(key);  // a new cell leaves the others where they are
  if (!inserted) {
    Cell& from = *place.cell;
    TakeItemOut(from, place.slot);
    EraseIfEmpty(place.key, from);
  }
  place.key = key;
  place.cell = &to;
  place.slot = static_cast<std::uint32_t>(to.items.size());
  to.items.push_back(CellItem{x, y, id});
  return Status::Ok();
}

bool SpatialGrid::RemoveItem(ItemId id) {
  auto it = item_places_.find(id);
  if (it == item_places_.end()) {
    return false;
  }
  const ItemPlace place = it->second;
  TakeItemOut(*place.cell, place.slot);
  EraseIfEmpty(place.key, *place.cell);
  item_places_.erase(it);
  return true;
}

Status SpatialGrid::PlaceViewer(ViewerId id, double x, double y) {
  MOLT_RETURN_IF_ERROR(CheckPoint("viewer", id, x, y));
  const std::uint64_t key = KeyOf(x, y);
  const auto index = static_cast<std::uint32_t>(viewers_.size());
  auto [it, inserted] = viewer_index_.try_emplace(id, index);
  if (!inserted) {
    Viewer& v = viewers_[it->second];
    v.x = x;
    v.y = y;
    if (v.key == key) {
      return Status::Ok();
    }
    Cell& to = CellAt(key);
    Cell& from = *v.cell;
    TakeViewerOut(from, v.slot);
    EraseIfEmpty(v.key, from);
    v.key = key;
    v.cell = &to;
    v.slot = static_cast<std::uint32_t>(to.viewers.size());
    to.viewers.push_back(it->second);
    return Status::Ok();
  }
  Cell& to = CellAt(key);
  Viewer v;
  v.id = id;
  v.x = x;
  v.y = y;
  v.key = key;
  v.cell = &to;
  v.slot = static_cast<std::uint32_t>(to.viewers.size());
  viewers_.push_back(std::move(v));
  to.viewers.push_back(index);
  return Status::Ok();
}

bool SpatialGrid::RemoveViewer(ViewerId id) {
  auto it = viewer_index_.find(id);
  if (it == viewer_index_.end()) {
    return false;
  }
  const std::uint32_t index = it->second;
  viewer_index_.erase(it);
  {
    Viewer& gone = viewers_[index];
    TakeViewerOut(*gone.cell, gone.slot);
    EraseIfEmpty(gone.key, *gone.cell);
  }
  // The last viewer takes the freed index; its cell and the index table learn it.
  const auto last = static_cast<std::uint32_t>(viewers_.size() - 1);
  if (index != last) {
    viewers_[index] = std::move(viewers_[last]);
    Viewer& moved = viewers_[index];
    moved.cell->viewers[moved.slot] = index;
    viewer_index_[moved.id] = index;
  }
  viewers_.pop_back();
  return true;
}

void SpatialGrid::Gather(const Range& range, std::vector<CellItem>& out) const {
  for (std::int64_t cx = range.x0; cx <= range.x1; ++cx) {
    for (std::int64_t cy = range.y0; cy <= range.y1; ++cy) {
      auto it = cells_.find(PackCell(cx, cy));
      if (it != cells_.end()) {
        out.insert(out.end(), it->second.items.begin(), it->second.items.end());
      }
    }
  }
}

void SpatialGrid::ForEachNear(double x, double y, double r,
                              const Callback<void(ItemId)>& fn) const {
  if (!std::isfinite(x) || !std::isfinite(y) || !(r >= 0)) {
    return;
  }
  const double r2 = r * r;
  auto visit = [&](const Cell& cell) {
    for (const CellItem& item : cell.items) {
      const double dx = item.x - x;
      const double dy = item.y - y;
      if (dx * dx + dy * dy <= r2) {
        fn(item.id);
      }
    }
  };
  const Range range = RangeOf(x, y, r);
  const double walk =
      static_cast<double>(range.x1 - range.x0 + 1) * static_cast<double>(range.y1 - range.y0 + 1);
  if (walk > static_cast<double>(cells_.size())) {
    for (const auto& [key, cell] : cells_) {
      visit(cell);
    }
    return;
  }
  for (std::int64_t cx = range.x0; cx <= range.x1; ++cx) {
    for (std::int64_t cy = range.y0; cy <= range.y1; ++cy) {
      auto it = cells_.find(PackCell(cx, cy));
      if (it != cells_.end()) {
        visit(it->second);
      }
    }
  }
}

void SpatialGrid::Update(const Transition& enter, const Transition& leave) {
  for (const auto& [key, cell] : cells_) {
    if (!cell.viewers.empty()) {
      UpdateCell(cell, enter, leave);
    }
  }
}

void SpatialGrid::UpdateCell(const Cell& cell, const Transition& enter, const Transition& leave) {
  // The candidates are gathered and sorted once for every viewer of the cell: the items of the
  // cells around any of them (nearly always the same (2k+1)^2 cells).
  Range range = RangeOf(viewers_[cell.viewers[0]].x, viewers_[cell.viewers[0]].y, leave_radius_);
  for (std::uint32_t index : cell.viewers) {
    const Range r = RangeOf(viewers_[index].x, viewers_[index].y, leave_radius_);
    range = Range{std::min(range.x0, r.x0), std::max(range.x1, r.x1), std::min(range.y0, r.y0),
                  std::max(range.y1, r.y1)};
  }
  gathered_.clear();
  Gather(range, gathered_);
  const std::size_t n = gathered_.size();
  // Sorted by id through 64-bit keys (id, position): cheaper to sort than the items themselves.
  order_.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    order_[k] = (static_cast<std::uint64_t>(gathered_[k].id) << 32) | k;
  }
  std::sort(order_.begin(), order_.end());
  cand_id_.resize(n);
  cand_x_.resize(n);
  cand_y_.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    const CellItem& item = gathered_[order_[k] & 0xffffffffu];
    cand_id_[k] = item.id;
    cand_x_[k] = item.x;
    cand_y_[k] = item.y;
  }
  hits_.resize(n);

  for (std::uint32_t index : cell.viewers) {
    Viewer& v = viewers_[index];
    // First, without branches: the candidates within leave_radius, in id order, each with a bit
    // saying whether it is within radius too.
    std::size_t h = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const double dx = cand_x_[k] - v.x;
      const double dy = cand_y_[k] - v.y;
      const double d2 = dx * dx + dy * dy;
      hits_[h] = (static_cast<std::uint32_t>(k) << 1) | static_cast<std::uint32_t>(d2 <= radius2_);
      h += static_cast<std::size_t>(d2 <= leave2_);
    }
    // Then one merge of two id-sorted lists, the hits and what v saw: a hit within radius is
    // visible, one between the radii only if v saw it; a seen item that is no hit left.
    next_.clear();
    auto seen = v.visible.cbegin();
    const auto seen_end = v.visible.cend();
    for (std::size_t j = 0; j < h; ++j) {
      const ItemId id = cand_id_[hits_[j] >> 1];
      while (seen != seen_end && *seen < id) {
        leave(v.id, *seen++);
      }
      const bool was = seen != seen_end && *seen == id;
      if (was) {
        ++seen;
        next_.push_back(id);
      } else if ((hits_[j] & 1) != 0) {
        next_.push_back(id);
        enter(v.id, id);
      }
    }
    while (seen != seen_end) {
      leave(v.id, *seen++);
    }
    v.visible.swap(next_);
  }
}

std::span<const SpatialGrid::ItemId> SpatialGrid::Visible(ViewerId viewer) const {
  auto it = viewer_index_.find(viewer);
  if (it == viewer_index_.end()) {
    return {};
  }
  return viewers_[it->second].visible;
}

}  // namespace molt::kernel::net
