// SPDX-License-Identifier: Apache-2.0
// analytics_track's cost on the kernel thread (Analytics::Track: validation, sampling, the cap,
// one JSON line built and queued), beside a baseline in the same run: the same line built with
// boost::json and pushed onto a vector. The writer thread's work is outside the timing: every
// 4,096 events the queue is drained with the timer paused. Results: docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <boost/json.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "kernel/src/analytics/analytics.h"
#include "kernel/src/core/kernel.h"

namespace molt::kernel::analytics {
namespace {

constexpr std::string_view kFields = R"({"item":"gem","receipt":"r-0001"})";

void Track(benchmark::State& state, std::string_view fields) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / "molt_analytics_bench").string();
  std::filesystem::remove_all(dir);
  auto kernel = std::move(Kernel::Boot({})).value();
  {
    AnalyticsOptions o;
    o.dir = dir;
    o.max_per_minute = 0;
    o.seed = 1;
    Analytics a(*kernel, o);
    std::int64_t n = 0;
    for (auto _ : state) {
      benchmark::DoNotOptimize(a.Track("shop", "purchase", "ada", 7, 1, fields));
      if (++n % 4096 == 0) {
        state.PauseTiming();
        a.Drain();
        state.ResumeTiming();
      }
    }
  }
  kernel.reset();
  std::filesystem::remove_all(dir);
}

void BM_Analytics_Track_NoFields(benchmark::State& state) { Track(state, {}); }
BENCHMARK(BM_Analytics_Track_NoFields);

void BM_Analytics_Track_Fields(benchmark::State& state) { Track(state, kFields); }
BENCHMARK(BM_Analytics_Track_Fields);

// Baseline: the event's line built with boost::json (its fields parsed) and queued.
void BM_Baseline_JsonLinePush(benchmark::State& state) {
  std::vector<std::string> lines;
  lines.reserve(4096);
  for (auto _ : state) {
    boost::json::object e;
    e["ts_ms"] = 1796410542101;
    e["name"] = "purchase";
    e["plugin"] = "shop";
    e["user"] = "ada";
    e["session"] = 7;
    e["value"] = 1.0;
    e["fields"] = boost::json::parse(kFields);
    lines.push_back(boost::json::serialize(e));
    if (lines.size() == 4096) {
      lines.clear();
    }
  }
  benchmark::DoNotOptimize(lines);
}
BENCHMARK(BM_Baseline_JsonLinePush);

}  // namespace
}  // namespace molt::kernel::analytics
