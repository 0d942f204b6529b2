// SPDX-License-Identifier: Apache-2.0
// Swaps (loader/plugin_host.h): the intake hold and the whole reload of the bundled plugin set and
// of a 1 MB plugin, with and without live sessions, beside the floor of any reload in the same
// run: copying the same files and opening them with dlopen.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/net_api.h"
#include "kernel/src/net/network.h"

namespace molt::kernel {
namespace {

namespace fs = std::filesystem;

std::string Dir(int which) {
  return which == 0 ? std::string(MOLT_PLUGIN_DIR) : std::string(MOLT_FIXTURE_DIR) + "/gen/big";
}

// A kernel with a network (not listening) serving `dir`, and `sessions` live sessions; with
// `deadlines`, every plugin callback runs off the kernel thread with its deadline, as in moltd.
class SwapRig {
 public:
  SwapRig(const std::string& dir, int sessions, bool deadlines) : dir_(dir) {
    Logger::Get().SetLevel(LogLevel::kWarn);
    kernel_ = std::move(Kernel::Boot({})).value();
    net_ = std::make_unique<net::Network>(*kernel_, net::NetOptions{});
    copies_ = fs::temp_directory_path() / ("molt_swap_bench_" + std::to_string(::getpid()));
    host_ = std::make_unique<loader::PluginHost>(*kernel_, copies_.string());
    if (deadlines) {
      host_->set_callback_deadline(loader::PluginHost::kCallbackDeadline);
    }
    abi::AttachNetwork(host_->shared(), net_.get());
    Status s = host_->LoadDirectory(dir);
    if (!s.ok() || !kernel_->Start().ok()) {
      std::fprintf(stderr, "swap bench: %s\n", s.message().c_str());
      std::abort();
    }
    for (int i = 0; i < sessions; ++i) {
      net_->sessions().Start("p" + std::to_string(i), {}, "127.0.0.1", RealNow());
    }
  }
  ~SwapRig() {
    (void)kernel_->Shutdown();
    host_.reset();
    net_.reset();
    kernel_.reset();
    fs::remove_all(copies_);
  }
  // As moltd swaps (RequestReload): the mount, then the swap as a task of its own (its hold).
  loader::SwapReport Reload() {
    if (!host_->Mount(dir_, "bench").ok()) {
      std::fprintf(stderr, "swap bench: the mount failed\n");
      std::abort();
    }
    return host_->SwapMounted();
  }
  // The tasks a swap leaves: the release of the previous generation, then its report.
  void RunLater() { kernel_->scheduler().Step(); }

 private:
  std::string dir_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<net::Network> net_;
  fs::path copies_;
  std::unique_ptr<loader::PluginHost> host_;
};

// Arguments: which build (0: the bundled plugins, 1: the 1 MB plugin), live sessions, callback
// deadlines (0: callbacks on the kernel thread, 1: off it with deadlines, as moltd runs them).
// hold_ms is the swap task's (the report's), the whole time the kernel thread served no one;
// release_ms the task after it that unloads the previous generation; reload_ms all of it.
void BM_Swap(benchmark::State& state) {
  SwapRig rig(Dir(static_cast<int>(state.range(0))), static_cast<int>(state.range(1)),
              state.range(2) != 0);
  double hold = 0;
  double swap = 0;
  double load = 0;
  double release = 0;
  double whole = 0;
  for (auto _ : state) {
    const TimePoint t0 = RealNow();
    loader::SwapReport r = rig.Reload();
    const TimePoint t1 = RealNow();
    rig.RunLater();
    whole += ToSeconds(RealNow() - t0) * 1e3;
    release += ToSeconds(RealNow() - t1) * 1e3;
    if (!r.ok) {
      state.SkipWithError(r.error.c_str());
      return;
    }
    hold += r.hold_ms;
    swap += r.swap_ms;
    load += r.load_ms + r.init_ms;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["hold_ms"] = hold / n;
  state.counters["swap_ms"] = swap / n;
  state.counters["mount_ms"] = load / n;
  state.counters["release_ms"] = release / n;
  state.counters["reload_ms"] = whole / n;
}
BENCHMARK(BM_Swap)
    ->ArgsProduct({{0, 1}, {0, 1000}, {0, 1}})
    ->ArgNames({"big", "sessions", "deadlines"})
    ->Unit(benchmark::kMillisecond);

// The floor of any reload: copy every library of the build and dlopen / dlclose the copies.
void BM_SwapBaseline_CopyAndDlopen(benchmark::State& state) {
  std::vector<fs::path> files;
  for (const fs::directory_entry& e :
       fs::directory_iterator(Dir(static_cast<int>(state.range(0))))) {
    if (e.path().extension() == ".so") {
      files.push_back(e.path());
    }
  }
  const fs::path dir =
      fs::temp_directory_path() / ("molt_swap_baseline_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::uint64_t n = 0;
  for (auto _ : state) {
    std::vector<void*> handles;
    for (const fs::path& f : files) {
      const fs::path copy = dir / (std::to_string(n++) + f.filename().string());
      fs::copy_file(f, copy);
      handles.push_back(::dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL));
      fs::remove(copy);
    }
    for (void* h : handles) {
      if (h != nullptr) {
        ::dlclose(h);
      }
    }
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_SwapBaseline_CopyAndDlopen)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("big")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace molt::kernel
