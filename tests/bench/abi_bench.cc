// SPDX-License-Identifier: Apache-2.0
// The cost of the ABI: Bus publish through the host API table from inside a real dlopened plugin
// (fx_bench), beside the same publish made directly inside the kernel, in the same run.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <string>

#include "kernel/src/core/logger.h"
#include "kernel/src/loader/plugin_host.h"

namespace molt::kernel {
namespace {

constexpr std::int64_t kPublishBatch = 1000;

struct BenchVtable {
  molt_status_t (*publish_n)(void* self, std::int64_t n);
};

// One kernel with fx_bench loaded and one kernel-side subscriber on Bench.Tick.
class AbiRig {
 public:
  AbiRig() {
    Logger::Get().SetLevel(LogLevel::kWarn);
    kernel_ = std::move(Kernel::Boot({})).value();
    copies_ = std::filesystem::temp_directory_path() / "molt_abi_bench";
    host_ = std::make_unique<loader::PluginHost>(*kernel_, copies_.string());
    Status s = host_->LoadFiles({std::string(MOLT_FIXTURE_DIR) + "/bench/fx_bench.so"});
    if (!s.ok() || !kernel_->Start().ok()) {
      std::fprintf(stderr, "abi bench: %s\n", s.message().c_str());
      std::abort();
    }
    kernel_->bus().Subscribe("Bench.Tick",
                             [this](std::string_view, Args args) { sum_ += args[0].as.i; });
    const auto& plugin = host_->plugins()[0];
    vtable_ = static_cast<const BenchVtable*>(plugin.library->info().interfaces[0].vtable);
    self_ = plugin.instance->state();
    topic_ = kernel_->bus().Resolve("Bench.Tick");
  }
  ~AbiRig() {
    (void)kernel_->Shutdown();
    host_.reset();
    kernel_.reset();
    std::filesystem::remove_all(copies_);
  }

  std::unique_ptr<Kernel> kernel_;
  std::filesystem::path copies_;
  std::unique_ptr<loader::PluginHost> host_;
  const BenchVtable* vtable_ = nullptr;
  void* self_ = nullptr;
  Bus::Topic* topic_ = nullptr;
  std::int64_t sum_ = 0;
};

void BM_Abi_PublishFromPluginThroughTheTable(benchmark::State& state) {
  AbiRig rig;
  for (auto _ : state) {
    rig.vtable_->publish_n(rig.self_, kPublishBatch);
  }
  state.SetItemsProcessed(state.iterations() * kPublishBatch);
  benchmark::DoNotOptimize(rig.sum_);
}
BENCHMARK(BM_Abi_PublishFromPluginThroughTheTable);

// The same while worker jobs are out: every host call first checks that it comes from the kernel
// thread (a worker's is refused, abi/worker_thread.h), then does the same work.
void BM_Abi_PublishWhileWorkerJobsRun(benchmark::State& state) {
  AbiRig rig;
  rig.host_->shared().BeginWorkerJobs();  // what the workers layer does while a job is out
  for (auto _ : state) {
    rig.vtable_->publish_n(rig.self_, kPublishBatch);
  }
  rig.host_->shared().EndWorkerJobs();
  state.SetItemsProcessed(state.iterations() * kPublishBatch);
  benchmark::DoNotOptimize(rig.sum_);
}
BENCHMARK(BM_Abi_PublishWhileWorkerJobsRun);

void BM_Abi_BaselinePublishDirectlyInTheKernel(benchmark::State& state) {
  AbiRig rig;
  const Value args[] = {Value::Int(1)};
  for (auto _ : state) {
    for (std::int64_t i = 0; i < kPublishBatch; ++i) {
      rig.kernel_->bus().Publish(rig.topic_, args);
    }
  }
  state.SetItemsProcessed(state.iterations() * kPublishBatch);
  benchmark::DoNotOptimize(rig.sum_);
}
BENCHMARK(BM_Abi_BaselinePublishDirectlyInTheKernel);

}  // namespace
}  // namespace molt::kernel
