// SPDX-License-Identifier: Apache-2.0
// SpatialGrid (kernel/src/net/spatial_grid.h) alone: its options, placing and removing, the walk
// around a point, and the interest pass, checked against an O(N^2) scan of seeded random worlds
// that applies the same rule (an item enters within radius, stays within leave_radius).
#include "kernel/src/net/spatial_grid.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernel/src/net/channel.h"

namespace molt::kernel::net {
namespace {

using ItemId = SpatialGrid::ItemId;
using ViewerId = SpatialGrid::ViewerId;

static_assert(std::is_same_v<ViewerId, SessionId>, "a viewer is a session");

SpatialGrid MakeGrid(double radius, double cell_size = 0, double leave_radius = 0) {
  SpatialGridOptions o;
  o.radius = radius;
  o.cell_size = cell_size;
  o.leave_radius = leave_radius;
  Result<SpatialGrid> grid = SpatialGrid::Create(o);
  EXPECT_TRUE(grid.ok()) << grid.status().ToString();
  return std::move(grid).value();
}

std::string CreateError(double radius, double cell_size, double leave_radius) {
  SpatialGridOptions o;
  o.radius = radius;
  o.cell_size = cell_size;
  o.leave_radius = leave_radius;
  Result<SpatialGrid> grid = SpatialGrid::Create(o);
  if (grid.ok()) {
    return "ok";
  }
  EXPECT_EQ(grid.status().code(), Status::Code::kInvalidArgument);
  return grid.status().message();
}

std::vector<ItemId> Near(const SpatialGrid& grid, double x, double y, double r) {
  std::vector<ItemId> out;
  grid.ForEachNear(x, y, r, [&out](ItemId id) { out.push_back(id); });
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ItemId> VisibleOf(const SpatialGrid& grid, ViewerId viewer) {
  std::span<const ItemId> v = grid.Visible(viewer);
  return {v.begin(), v.end()};
}

// What one Update reported, as "+viewer:item" / "-viewer:item", sorted.
std::vector<std::string> GridPass(SpatialGrid& grid) {
  std::vector<std::string> out;
  grid.Update(
      [&out](ViewerId v, ItemId i) {
        out.push_back("+" + std::to_string(v) + ":" + std::to_string(i));
      },
      [&out](ViewerId v, ItemId i) {
        out.push_back("-" + std::to_string(v) + ":" + std::to_string(i));
      });
  std::sort(out.begin(), out.end());
  return out;
}

// The same as (kind, viewer, item) tuples, +1 for an enter and -1 for a leave, sorted: cheaper
// to sort and compare by the thousand than strings.
using GridChange = std::tuple<int, ViewerId, ItemId>;
std::vector<GridChange> GridChanges(SpatialGrid& grid) {
  std::vector<GridChange> out;
  grid.Update([&out](ViewerId v, ItemId i) { out.emplace_back(1, v, i); },
              [&out](ViewerId v, ItemId i) { out.emplace_back(-1, v, i); });
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SpatialGridTest, CellSizeAndLeaveRadiusDefaultToTheRadius) {
  SpatialGrid grid = MakeGrid(50);
  EXPECT_EQ(grid.radius(), 50);
  EXPECT_EQ(grid.cell_size(), 50);
  EXPECT_EQ(grid.leave_radius(), 50);
  SpatialGrid other = MakeGrid(50, 20, 60);
  EXPECT_EQ(other.cell_size(), 20);
  EXPECT_EQ(other.leave_radius(), 60);
}

TEST(SpatialGridTest, CreateRefusesBadOptionsNamingTheValueAndTheFix) {
  EXPECT_EQ(CreateError(0, 0, 0),
            "spatial grid: radius must be a finite number above 0 (got 0): set it to the distance "
            "within which a viewer sees an item");
  EXPECT_EQ(CreateError(std::nan(""), 0, 0),
            "spatial grid: radius must be a finite number above 0 (got nan): set it to the "
            "distance within which a viewer sees an item");
  EXPECT_NE(CreateError(-5, 0, 0), "ok");
  EXPECT_NE(CreateError(std::numeric_limits<double>::infinity(), 0, 0), "ok");
  EXPECT_EQ(
      CreateError(50, -1, 0),
      "spatial grid: cell_size must be a finite number above 0, or 0 for the radius (got -1)");
  EXPECT_EQ(CreateError(50, 0, -2),
            "spatial grid: leave_radius must be a finite number at least the radius (50), or 0 for "
            "the radius (got -2)");
  EXPECT_EQ(CreateError(50, 0, 40),
            "spatial grid: leave_radius 40 is below radius 50: an item would leave a view it is "
            "still in; set leave_radius to at least 50 (or 0 for the radius)");
  EXPECT_EQ(CreateError(50, 1, 100),
            "spatial grid: cell_size 1 is too small for leave_radius 100: a walk would span 100 "
            "cells each way (at most 16); set cell_size to at least 6.25 (leave_radius / 16)");
  EXPECT_EQ(CreateError(50, 6.25, 100), "ok");  // exactly the suggested size
}

TEST(SpatialGridTest, PlaceRefusesPointsThatAreNotFiniteOrTooFarOut) {
  SpatialGrid grid = MakeGrid(10);
  Status s = grid.PlaceItem(7, std::nan(""), 3);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "spatial grid: item 7 at (nan, 3): coordinates must be finite numbers");
  s = grid.PlaceViewer(9, 0, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.message(), "spatial grid: viewer 9 at (0, -inf): coordinates must be finite numbers");
  s = grid.PlaceItem(7, 1e12, 0);
  EXPECT_EQ(s.message(),
            "spatial grid: item 7 at (1000000000000, 0) is too far out: coordinates must stay "
            "within +-10737418240 (2^30 cells of 10); use a larger cell_size or coordinates "
            "nearer the origin");
  EXPECT_EQ(grid.items(), 0u);
  EXPECT_EQ(grid.viewers(), 0u);
  EXPECT_EQ(grid.cells(), 0u);
  // A refused move leaves the item where it was.
  ASSERT_TRUE(grid.PlaceItem(7, 1, 1).ok());
  EXPECT_FALSE(grid.PlaceItem(7, std::nan(""), 1).ok());
  EXPECT_EQ(Near(grid, 1, 1, 0), std::vector<ItemId>{7});
}

TEST(SpatialGridTest, ItemsMoveWithinAndAcrossCellsAndEmptyCellsGo) {
  SpatialGrid grid = MakeGrid(10);  // cells of 10
  ASSERT_TRUE(grid.PlaceItem(1, 1, 1).ok());
  ASSERT_TRUE(grid.PlaceItem(2, 2, 2).ok());
  ASSERT_TRUE(grid.PlaceItem(3, 3, 3).ok());
  EXPECT_EQ(grid.items(), 3u);
  EXPECT_EQ(grid.cells(), 1u);
  ASSERT_TRUE(grid.PlaceItem(2, 9, 9).ok());  // same cell
  EXPECT_EQ(grid.cells(), 1u);
  EXPECT_EQ(Near(grid, 9, 9, 0), std::vector<ItemId>{2});
  ASSERT_TRUE(grid.PlaceItem(1, -1, 1).ok());  // to cell (-1, 0); 3 takes 1's slot
  EXPECT_EQ(grid.cells(), 2u);
  EXPECT_EQ(Near(grid, 3, 3, 0), std::vector<ItemId>{3});
  ASSERT_TRUE(grid.PlaceItem(3, 25, 25).ok());  // 2 is alone in the first cell
  EXPECT_EQ(grid.cells(), 3u);
  EXPECT_EQ(Near(grid, 0, 0, 100), (std::vector<ItemId>{1, 2, 3}));
  EXPECT_TRUE(grid.RemoveItem(2));
  EXPECT_FALSE(grid.RemoveItem(2));
  EXPECT_EQ(grid.cells(), 2u);
  EXPECT_EQ(grid.items(), 2u);
  EXPECT_EQ(Near(grid, 0, 0, 100), (std::vector<ItemId>{1, 3}));
  ASSERT_TRUE(grid.PlaceViewer(5, 5, 5).ok());  // a viewer keeps its cell too
  EXPECT_EQ(grid.cells(), 3u);
  EXPECT_TRUE(grid.RemoveViewer(5));
  EXPECT_FALSE(grid.RemoveViewer(5));
  EXPECT_EQ(grid.cells(), 2u);
}

TEST(SpatialGridTest, NearIncludesPointsExactlyAtTheDistanceAcrossNegativeCellBorders) {
  SpatialGrid grid = MakeGrid(50);
  // From (-50, 0): 30-40-50 triangles, so the squares are exact.
  ASSERT_TRUE(grid.PlaceItem(1, -50 + 30, 40).ok());      // exactly 50 away
  ASSERT_TRUE(grid.PlaceItem(2, -50 - 30, -40).ok());     // exactly 50 away, cell (-2, -1)
  ASSERT_TRUE(grid.PlaceItem(3, -100, 0).ok());           // exactly 50 away, on a cell border
  ASSERT_TRUE(grid.PlaceItem(4, -100.000001, 0).ok());    // just beyond
  ASSERT_TRUE(grid.PlaceItem(5, -50, -50).ok());          // on a corner, 50 away
  ASSERT_TRUE(grid.PlaceItem(6, -50, -50.0000001).ok());  // just beyond
  ASSERT_TRUE(grid.PlaceItem(7, 0, 0).ok());
  EXPECT_EQ(Near(grid, -50, 0, 50), (std::vector<ItemId>{1, 2, 3, 5, 7}));
  EXPECT_EQ(Near(grid, -50, 0, 0), std::vector<ItemId>{});
  EXPECT_EQ(Near(grid, 0, 0, 0), std::vector<ItemId>{7});
  EXPECT_EQ(Near(grid, 0, 0, std::numeric_limits<double>::infinity()).size(), 7u);
  EXPECT_TRUE(Near(grid, 0, 0, -1).empty());
  EXPECT_TRUE(Near(grid, std::nan(""), 0, 10).empty());
  EXPECT_TRUE(Near(grid, 0, 0, std::nan("")).empty());
}

// Rounding can put a point the distance test accepts an ulp past the edge of the cells a walk
// would cover without a margin: here the item's cell is floor(-3.0000000000000004) = -4, the walk
// from 0.2 - 0.5 starts at floor(-2.9999999999999996) = -3.
TEST(SpatialGridTest, APointAcceptedByRoundingPastTheWalksEdgeIsStillFound) {
  SpatialGrid grid = MakeGrid(0.5, 0.1);
  const double x = -3 * 0.1;  // -0.30000000000000004
  const double dx = x - 0.2;
  ASSERT_LE(dx * dx, 0.5 * 0.5);  // "within 0.5" by the grid's arithmetic
  ASSERT_LT(std::floor(x / 0.1), std::floor((0.2 - 0.5) / 0.1));
  ASSERT_TRUE(grid.PlaceItem(1, x, 0).ok());
  ASSERT_TRUE(grid.PlaceViewer(2, 0.2, 0).ok());
  EXPECT_EQ(Near(grid, 0.2, 0, 0.5), std::vector<ItemId>{1});
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{"+2:1"});
}

TEST(SpatialGridTest, UpdateReportsEachEnterAndLeaveOnce) {
  SpatialGrid grid = MakeGrid(10);
  ASSERT_TRUE(grid.PlaceViewer(100, 0, 0).ok());
  ASSERT_TRUE(grid.PlaceItem(1, 6, 8).ok());  // exactly 10 away
  ASSERT_TRUE(grid.PlaceItem(2, 20, 0).ok());
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{"+100:1"});
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{});  // nothing changed, nothing said
  EXPECT_EQ(VisibleOf(grid, 100), std::vector<ItemId>{1});
  ASSERT_TRUE(grid.PlaceItem(2, 5, 0).ok());
  ASSERT_TRUE(grid.PlaceItem(1, 6, 8.01).ok());
  EXPECT_EQ(GridPass(grid), (std::vector<std::string>{"+100:2", "-100:1"}));
  EXPECT_EQ(VisibleOf(grid, 100), std::vector<ItemId>{2});
  // Moving the viewer counts as much as moving the items.
  ASSERT_TRUE(grid.PlaceViewer(100, 100, 100).ok());
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{"-100:2"});
  EXPECT_TRUE(VisibleOf(grid, 100).empty());
  EXPECT_TRUE(VisibleOf(grid, 999).empty());  // an unknown viewer sees nothing
}

TEST(SpatialGridTest, AnItemSeenStaysUntilItIsBeyondTheLeaveRadius) {
  SpatialGrid grid = MakeGrid(10, 0, 15);
  ASSERT_TRUE(grid.PlaceViewer(1, 0, 0).ok());
  ASSERT_TRUE(grid.PlaceViewer(2, 0, 100).ok());
  ASSERT_TRUE(grid.PlaceItem(7, 12, 0).ok());  // between the radii: not seen yet
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{});
  ASSERT_TRUE(grid.PlaceItem(7, 10, 0).ok());  // at the radius: enters
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{"+1:7"});
  ASSERT_TRUE(grid.PlaceItem(7, 15, 0).ok());  // at the leave radius: stays
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{});
  EXPECT_EQ(VisibleOf(grid, 1), std::vector<ItemId>{7});
  ASSERT_TRUE(grid.PlaceItem(7, 9, 12.0001).ok());  // just beyond 15: leaves
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{"-1:7"});
  ASSERT_TRUE(grid.PlaceItem(7, 12, 0).ok());  // back between the radii: stays out
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{});
  // A viewer that comes within the leave radius but not the radius does not see it either.
  ASSERT_TRUE(grid.PlaceViewer(2, 0, 1).ok());
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{});
}

TEST(SpatialGridTest, ARemovedItemLeavesEveryViewerThatSawItAtTheNextUpdate) {
  SpatialGrid grid = MakeGrid(10);
  ASSERT_TRUE(grid.PlaceViewer(1, 0, 0).ok());
  ASSERT_TRUE(grid.PlaceViewer(2, 5, 0).ok());
  ASSERT_TRUE(grid.PlaceViewer(3, 100, 0).ok());
  ASSERT_TRUE(grid.PlaceItem(7, 3, 0).ok());
  EXPECT_EQ(GridPass(grid), (std::vector<std::string>{"+1:7", "+2:7"}));
  EXPECT_TRUE(grid.RemoveItem(7));
  EXPECT_EQ(VisibleOf(grid, 1), std::vector<ItemId>{7});  // until the pass
  EXPECT_EQ(GridPass(grid), (std::vector<std::string>{"-1:7", "-2:7"}));
  EXPECT_TRUE(VisibleOf(grid, 1).empty());
  EXPECT_EQ(grid.items(), 0u);
  // Removed and placed again between two passes: the same item, nothing to say.
  ASSERT_TRUE(grid.PlaceItem(8, 3, 0).ok());
  EXPECT_EQ(GridPass(grid), (std::vector<std::string>{"+1:8", "+2:8"}));
  EXPECT_TRUE(grid.RemoveItem(8));
  ASSERT_TRUE(grid.PlaceItem(8, 4, 0).ok());
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{});
}

TEST(SpatialGridTest, ARemovedViewerGetsNoLeavesAndStartsAfreshWhenPlacedAgain) {
  SpatialGrid grid = MakeGrid(10);
  ASSERT_TRUE(grid.PlaceViewer(1, 0, 0).ok());
  ASSERT_TRUE(grid.PlaceViewer(2, 1, 0).ok());
  ASSERT_TRUE(grid.PlaceViewer(3, 2, 0).ok());
  ASSERT_TRUE(grid.PlaceItem(7, 3, 0).ok());
  ASSERT_TRUE(grid.PlaceItem(8, -3, 0).ok());
  EXPECT_EQ(GridPass(grid).size(), 6u);
  EXPECT_TRUE(grid.RemoveViewer(1));  // the last viewer (3) takes its place
  EXPECT_EQ(grid.viewers(), 2u);
  EXPECT_TRUE(VisibleOf(grid, 1).empty());
  EXPECT_EQ(VisibleOf(grid, 3), (std::vector<ItemId>{7, 8}));
  EXPECT_TRUE(grid.RemoveItem(8));
  EXPECT_EQ(GridPass(grid), (std::vector<std::string>{"-2:8", "-3:8"}));  // nothing for 1
  ASSERT_TRUE(grid.PlaceViewer(1, 0, 0).ok());
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{"+1:7"});
  ASSERT_TRUE(grid.PlaceViewer(3, 50, 0).ok());  // the moved one still moves
  EXPECT_EQ(GridPass(grid), std::vector<std::string>{"-3:7"});
}

// The brute-force model of a world: every item and viewer with its position, and what each viewer
// saw, recomputed by scanning every item for every viewer.
class BruteWorld {
 public:
  BruteWorld(double radius, double leave) : r2_(radius * radius), l2_(leave * leave) {}

  std::map<ItemId, std::pair<double, double>> items;
  std::map<ViewerId, std::pair<double, double>> viewers;

  void ForgetViewer(ViewerId v) { seen_.erase(v); }

  // The pass: updates what each viewer sees and returns the transitions as GridChanges does.
  std::vector<GridChange> Pass() {
    std::vector<GridChange> out;
    struct At {
      ItemId id;
      double x, y;
    };
    std::vector<At> all;  // in id order: each scan's result comes out sorted
    for (const auto& [i, ip] : items) {
      all.push_back(At{i, ip.first, ip.second});
    }
    const At* const all_end = all.data() + all.size();
    for (const auto& [v, vp] : viewers) {
      std::vector<ItemId>& before = seen_[v];
      std::vector<ItemId> now;
      for (const At* a = all.data(); a != all_end; ++a) {
        const double dx = a->x - vp.first;
        const double dy = a->y - vp.second;
        const double d2 = dx * dx + dy * dy;
        if (d2 <= r2_ || (d2 <= l2_ && std::binary_search(before.begin(), before.end(), a->id))) {
          now.push_back(a->id);
        }
      }
      std::vector<ItemId> diff;
      std::set_difference(now.begin(), now.end(), before.begin(), before.end(),
                          std::back_inserter(diff));
      for (ItemId i : diff) {
        out.emplace_back(1, v, i);
      }
      diff.clear();
      std::set_difference(before.begin(), before.end(), now.begin(), now.end(),
                          std::back_inserter(diff));
      for (ItemId i : diff) {
        out.emplace_back(-1, v, i);
      }
      before = std::move(now);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  const std::vector<ItemId>& Seen(ViewerId v) { return seen_[v]; }

  std::vector<ItemId> Near(double x, double y, double r) const {
    std::vector<ItemId> out;
    for (const auto& [i, ip] : items) {
      const double dx = ip.first - x;
      const double dy = ip.second - y;
      if (dx * dx + dy * dy <= r * r) {
        out.push_back(i);
      }
    }
    return out;
  }

 private:
  double r2_, l2_;
  std::map<ViewerId, std::vector<ItemId>> seen_;
};

struct GridWorldCase {
  double radius, cell_size, leave_radius;
  int items, viewers;
  std::uint64_t seed;
};

void PrintTo(const GridWorldCase& c, std::ostream* os) {
  *os << "radius " << c.radius << ", cell_size " << c.cell_size << ", leave_radius "
      << c.leave_radius << ", " << c.items << " items, " << c.viewers << " viewers, seed "
      << c.seed;
}

class SpatialGridWorldTest : public ::testing::TestWithParam<GridWorldCase> {};

// Random worlds where points often sit exactly on cell borders (multiples of the cell size) and
// exactly at the radius or the leave radius from a viewer (30-40-50 offsets from integer points),
// moved, added and removed at random for 35 passes; after each, every viewer's set and the
// transitions must equal the brute force's.
TEST_P(SpatialGridWorldTest, EveryPassMatchesABruteForceScan) {
  const GridWorldCase c = GetParam();
  SpatialGrid grid = MakeGrid(c.radius, c.cell_size, c.leave_radius);
  BruteWorld world(c.radius, grid.leave_radius());
  std::mt19937_64 rng(c.seed);
  const double side = 6 * grid.leave_radius();  // the world spans [-side, side]
  std::uniform_real_distribution<double> any(-side, side);
  std::uniform_real_distribution<double> unit(0, 1);
  std::uniform_real_distribution<double> step(-grid.leave_radius() / 4, grid.leave_radius() / 4);
  const double cell = grid.cell_size();
  auto snap = [&](double v) { return std::round(v / cell) * cell; };
  // A point: random, on a cell border, or exactly at the radius / leave radius of a viewer.
  auto point = [&]() -> std::pair<double, double> {
    const double pick = unit(rng);
    if (pick < 0.5 || world.viewers.empty()) {
      return {any(rng), any(rng)};
    }
    if (pick < 0.7) {
      return {snap(any(rng)), unit(rng) < 0.5 ? snap(any(rng)) : any(rng)};
    }
    auto v = world.viewers.begin();
    std::advance(v, static_cast<long>(rng() % world.viewers.size()));
    const double d = unit(rng) < 0.6 ? c.radius : grid.leave_radius();
    const double sx = unit(rng) < 0.5 ? -1 : 1;
    const double sy = unit(rng) < 0.5 ? -1 : 1;
    const bool swap = unit(rng) < 0.5;
    const double a = 0.6 * d * sx, b = 0.8 * d * sy;
    return {v->second.first + (swap ? b : a), v->second.second + (swap ? a : b)};
  };
  auto place_viewer = [&](ViewerId id) {
    // Integer positions, so a 30-40-50 offset from one is exact.
    const std::pair<double, double> p{std::round(any(rng)), std::round(any(rng))};
    ASSERT_TRUE(grid.PlaceViewer(id, p.first, p.second).ok());
    world.viewers[id] = p;
  };
  auto place_item = [&](ItemId id, std::pair<double, double> p) {
    ASSERT_TRUE(grid.PlaceItem(id, p.first, p.second).ok());
    world.items[id] = p;
  };
  for (int v = 0; v < c.viewers; ++v) {
    place_viewer(static_cast<ViewerId>(1000000 + v * 3));
  }
  for (int i = 0; i < c.items; ++i) {
    place_item(static_cast<ItemId>(i * 7 + 1), point());
  }
  ViewerId next_viewer = 5000000;
  ItemId next_item = 3000000;
  std::size_t transitions = 0;
  for (int pass = 0; pass < 35; ++pass) {
    const std::vector<GridChange> got = GridChanges(grid);
    const std::vector<GridChange> want = world.Pass();
    ASSERT_EQ(got, want) << "pass " << pass;
    transitions += got.size();
    ASSERT_EQ(grid.items(), world.items.size());
    ASSERT_EQ(grid.viewers(), world.viewers.size());
    for (const auto& [v, p] : world.viewers) {
      ASSERT_EQ(VisibleOf(grid, v), world.Seen(v)) << "pass " << pass << " viewer " << v;
    }
    for (int q = 0; q < 20; ++q) {
      const double x = q % 2 ? snap(any(rng)) : any(rng);
      const double y = any(rng);
      const double r = q == 0 ? 0 : q == 1 ? 10 * side : c.radius * unit(rng) * 2;
      ASSERT_EQ(Near(grid, x, y, r), world.Near(x, y, r)) << x << "," << y << " r " << r;
    }
    // Moves: most items a small step, some anywhere or onto a border or a radius; a few come and
    // go; viewers walk, and a few leave or join.
    std::vector<ItemId> item_ids;
    for (const auto& [id, p] : world.items) {
      item_ids.push_back(id);
    }
    for (ItemId id : item_ids) {
      const double pick = unit(rng);
      const std::pair<double, double> at = world.items[id];
      if (pick < 0.6) {
        place_item(id, {at.first + step(rng), at.second + step(rng)});
      } else if (pick < 0.75) {
        place_item(id, point());
      } else if (pick < 0.78) {
        ASSERT_TRUE(grid.RemoveItem(id));
        world.items.erase(id);
      }
    }
    for (int k = 0; k < c.items / 30; ++k) {
      place_item(next_item++, point());
    }
    std::vector<ViewerId> viewer_ids;
    for (const auto& [id, p] : world.viewers) {
      viewer_ids.push_back(id);
    }
    for (ViewerId id : viewer_ids) {
      const double pick = unit(rng);
      if (pick < 0.5) {
        const std::pair<double, double> at = world.viewers[id];
        const std::pair<double, double> p{std::round(at.first + step(rng)),
                                          std::round(at.second + step(rng))};
        ASSERT_TRUE(grid.PlaceViewer(id, p.first, p.second).ok());
        world.viewers[id] = p;
      } else if (pick < 0.53) {
        ASSERT_TRUE(grid.RemoveViewer(id));
        world.viewers.erase(id);
        world.ForgetViewer(id);
      }
    }
    for (int k = 0; k < c.viewers / 30 + 1; ++k) {
      place_viewer(next_viewer++);
    }
  }
  EXPECT_GT(transitions, static_cast<std::size_t>(c.viewers));  // the worlds did change
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, SpatialGridWorldTest,
    ::testing::Values(GridWorldCase{50, 0, 0, 2000, 300, 1},      // cells of the radius
                      GridWorldCase{50, 20, 60, 2000, 300, 2},    // smaller cells, hysteresis
                      GridWorldCase{50, 130, 0, 1500, 400, 3},    // cells larger than the radius
                      GridWorldCase{50, 50, 75, 1000, 300, 4},    // hysteresis, cells of the radius
                      GridWorldCase{10, 7, 13, 600, 200, 5},      // a small world, odd sizes
                      GridWorldCase{0.5, 0.25, 0.5, 800, 200, 6}  // fractions
                      ));

}  // namespace
}  // namespace molt::kernel::net
