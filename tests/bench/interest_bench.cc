// SPDX-License-Identifier: Apache-2.0
// Replica interest: one pass of the spatial grid (kernel/src/net/spatial_grid.h) over a world of
// N entities, each one item and one viewer, at a constant density of about 30 neighbours within
// the radius (radius 50, side sqrt(pi * 50^2 * N / 30)), beside the baseline of the same pass by
// an O(N^2) scan. Before each pass every entity takes a small random step, as bots moving at
// 20 Hz between 10 Hz passes would; the moves are timed with the pass. The time per viewer per
// pass is the per_viewer counter: flat as N grows for the grid, linear for the scan.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

#include "kernel/src/net/spatial_grid.h"

namespace molt::kernel::net {
namespace {

constexpr double kInterestRadius = 50;
constexpr double kInterestNeighbours = 30;

// N entities placed at random in the square of the density's side, and a table of small steps.
class InterestWorld {
 public:
  explicit InterestWorld(int n)
      : side_(std::sqrt(std::numbers::pi * kInterestRadius * kInterestRadius * n /
                        kInterestNeighbours)),
        x_(static_cast<std::size_t>(n)),
        y_(static_cast<std::size_t>(n)) {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> at(0, side_);
    for (std::size_t i = 0; i < x_.size(); ++i) {
      x_[i] = at(rng);
      y_[i] = at(rng);
    }
    std::uniform_real_distribution<double> step(-1, 1);  // up to 1 unit a pass on each axis
    steps_.resize(1 << 16);
    for (double& s : steps_) {
      s = step(rng);
    }
  }

  std::size_t size() const { return x_.size(); }
  double x(std::size_t i) const { return x_[i]; }
  double y(std::size_t i) const { return y_[i]; }

  // Moves entity `i` one step, bouncing off the edges.
  void Step(std::size_t i) {
    x_[i] = Bounce(x_[i] + steps_[next_++ & (steps_.size() - 1)]);
    y_[i] = Bounce(y_[i] + steps_[next_++ & (steps_.size() - 1)]);
  }

 private:
  double Bounce(double v) const { return v < 0 ? -v : v > side_ ? 2 * side_ - v : v; }

  double side_;
  std::vector<double> x_, y_;
  std::vector<double> steps_;
  std::size_t next_ = 0;
};

void InterestCounters(benchmark::State& state, std::size_t n, std::uint64_t transitions,
                      std::uint64_t visible) {
  const double viewers = static_cast<double>(state.iterations()) * static_cast<double>(n);
  state.SetItemsProcessed(static_cast<std::int64_t>(viewers));
  // Rate-inverted: the time per viewer per pass, printed with its unit ("540ns").
  state.counters["per_viewer"] =
      benchmark::Counter(viewers, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["visible"] = static_cast<double>(visible) / static_cast<double>(n);
  state.counters["changes_per_pass"] =
      static_cast<double>(transitions) / static_cast<double>(state.iterations());
}

void BM_GridPass(benchmark::State& state) {
  InterestWorld world(static_cast<int>(state.range(0)));
  SpatialGridOptions options;
  options.radius = kInterestRadius;
  Result<SpatialGrid> created = SpatialGrid::Create(options);
  if (!created.ok()) {
    state.SkipWithError("SpatialGrid::Create failed");
    return;
  }
  SpatialGrid grid = std::move(created).value();
  for (std::size_t i = 0; i < world.size(); ++i) {
    (void)grid.PlaceItem(static_cast<SpatialGrid::ItemId>(i), world.x(i), world.y(i));
    (void)grid.PlaceViewer(i, world.x(i), world.y(i));
  }
  std::uint64_t transitions = 0;
  auto count = [&transitions](SpatialGrid::ViewerId, SpatialGrid::ItemId) { ++transitions; };
  grid.Update(count, count);  // everyone's first view
  transitions = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < world.size(); ++i) {
      world.Step(i);
      (void)grid.PlaceItem(static_cast<SpatialGrid::ItemId>(i), world.x(i), world.y(i));
      (void)grid.PlaceViewer(i, world.x(i), world.y(i));
    }
    grid.Update(count, count);
  }
  std::uint64_t visible = 0;
  for (std::size_t i = 0; i < world.size(); ++i) {
    visible += grid.Visible(i).size();
  }
  InterestCounters(state, world.size(), transitions, visible);
}
BENCHMARK(BM_GridPass)->Arg(1000)->Arg(2000)->Arg(5000)->Unit(benchmark::kMicrosecond);

// Baseline: the same pass by scanning every item for every viewer (ids ascending, so each set
// comes out sorted), diffed against the previous set the same way.
void BM_BruteForce(benchmark::State& state) {
  InterestWorld world(static_cast<int>(state.range(0)));
  const std::size_t n = world.size();
  const double r2 = kInterestRadius * kInterestRadius;
  std::vector<std::vector<std::uint32_t>> seen(n);
  std::vector<std::uint32_t> now;
  std::uint64_t transitions = 0;
  auto pass = [&] {
    for (std::size_t v = 0; v < n; ++v) {
      now.clear();
      for (std::size_t i = 0; i < n; ++i) {
        const double dx = world.x(i) - world.x(v);
        const double dy = world.y(i) - world.y(v);
        if (dx * dx + dy * dy <= r2) {
          now.push_back(static_cast<std::uint32_t>(i));
        }
      }
      const std::vector<std::uint32_t>& before = seen[v];
      std::size_t a = 0, b = 0;
      while (a < now.size() || b < before.size()) {
        if (b == before.size() || (a < now.size() && now[a] < before[b])) {
          ++transitions, ++a;  // entered
        } else if (a == now.size() || before[b] < now[a]) {
          ++transitions, ++b;  // left
        } else {
          ++a, ++b;
        }
      }
      seen[v].swap(now);
    }
  };
  pass();
  transitions = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) {
      world.Step(i);
    }
    pass();
  }
  std::uint64_t visible = 0;
  for (const auto& s : seen) {
    visible += s.size();
  }
  InterestCounters(state, n, transitions, visible);
}
BENCHMARK(BM_BruteForce)->Arg(1000)->Arg(2000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace molt::kernel::net
