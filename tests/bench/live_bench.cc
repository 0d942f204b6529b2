// SPDX-License-Identifier: Apache-2.0
// A live value's read on the kernel thread (LiveValues::Get: the key built, its declaration
// found, the override or the default copied out), with and without an override among 100
// declared keys, beside a baseline in the same run: the same key built and found in a std::map,
// its value copied. live_get adds the ABI's call and the sink's copy on top (abi_bench's calls
// measure that part). Results: docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernel/src/live/live_values.h"

namespace molt::kernel::live {
namespace {

const int kOwner = 0;

// 100 values of "shop", shop.price overridden when `override` is set.
void Get(benchmark::State& state, bool override) {
  const std::string dir = (std::filesystem::temp_directory_path() / "molt_live_bench").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::mutex mu;
  std::vector<std::function<void()>> posted;
  {
    LiveOptions o;
    o.path = dir + "/live.db";
    LiveValues live(
        o,
        [&](std::function<void()> fn) {
          std::lock_guard lock(mu);
          posted.push_back(std::move(fn));
        },
        nullptr, [] { return std::int64_t{1796410542101}; });
    if (!live.Open().ok()) {
      state.SkipWithError("live.db did not open");
      return;
    }
    for (int i = 0; i < 100; ++i) {
      (void)live.Declare(&kOwner, "shop", "value" + std::to_string(i), "1", nullptr);
    }
    (void)live.Declare(&kOwner, "shop", "price", "10", nullptr);
    if (override) {
      bool done = false;
      live.Set("shop.price", "12", "bench", [&](Result<SetOutcome>) { done = true; });
      while (!done) {  // the store's thread commits, then posts the rest here
        std::vector<std::function<void()>> run;
        {
          std::lock_guard lock(mu);
          run.swap(posted);
        }
        for (auto& fn : run) {
          fn();
        }
      }
    }
    for (auto _ : state) {
      benchmark::DoNotOptimize(live.Get(&kOwner, "shop", "price"));
    }
  }
  std::filesystem::remove_all(dir);
}

void BM_Live_Get_Default(benchmark::State& state) { Get(state, false); }
BENCHMARK(BM_Live_Get_Default);

void BM_Live_Get_Override(benchmark::State& state) { Get(state, true); }
BENCHMARK(BM_Live_Get_Override);

// Baseline: the same key built and found in a map of 101, its value copied out.
void BM_Baseline_MapFindCopy(benchmark::State& state) {
  std::map<std::string, std::string> values;
  for (int i = 0; i < 100; ++i) {
    values["shop.value" + std::to_string(i)] = "1";
  }
  values["shop.price"] = "12";
  const std::string_view plugin = "shop", name = "price";
  for (auto _ : state) {
    std::string key;
    key.reserve(plugin.size() + 1 + name.size());
    key.append(plugin).append(".").append(name);
    auto it = values.find(key);
    std::string v = it->second;
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_Baseline_MapFindCopy);

}  // namespace
}  // namespace molt::kernel::live
