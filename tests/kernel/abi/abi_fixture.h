// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/abi/abi_fixture.h
//
// AbiFixture: two plugin instances, "alpha" (exports the interface twice.v1) and "beta" (depends
// on alpha), built from descriptors defined here (no dlopen: the loader has its own tests with
// real libraries), on a kernel with a manual clock and the core's host API table, so every
// effect of a slot is observable. Boot() registers and starts them; a() and b() are their
// contexts, as a plugin passes them to the table; g_probe says what each did at init and stop.
// For the tests of the host API's slots (host_api_test.cc, hook_api_test.cc, task_api_test.cc,
// layer_refusals_test.cc) and of AbiShared.
#ifndef MOLT_TESTS_KERNEL_ABI_ABI_FIXTURE_H_
#define MOLT_TESTS_KERNEL_ABI_ABI_FIXTURE_H_

#include <gtest/gtest.h>
#include <molt/molt.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/abi/abi_shared.h"
#include "kernel/src/abi/host_api.h"
#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"

namespace molt::kernel::abi {

// What each test plugin captured at init, and what it should do there.
struct Probe {
  molt_context_t* ctx = nullptr;
  const molt_host_api* api = nullptr;
  std::function<molt_status_t()> on_init;
  std::function<molt_status_t()> on_stop;
  int destroyed = 0;
};
inline Probe g_probe[2];

template <int N>
molt_status_t InitProbe(molt_context_t* ctx, const molt_host_api* api, void** state) {
  g_probe[N].ctx = ctx;
  g_probe[N].api = api;
  *state = &g_probe[N];
  return g_probe[N].on_init ? g_probe[N].on_init() : MOLT_OK;
}
template <int N>
molt_status_t StopProbe(void*) {
  return g_probe[N].on_stop ? g_probe[N].on_stop() : MOLT_OK;
}
template <int N>
void DestroyProbe(void*) {
  ++g_probe[N].destroyed;
}

struct TwiceVtable {
  std::int64_t (*twice)(void* self, std::int64_t v);
};
inline const TwiceVtable kTwice = {[](void* self, std::int64_t v) {
  return self == &g_probe[0] ? 2 * v : -1;  // self is the exporter's state
}};
inline const molt_interface_export kExports[] = {{"twice.v1", &kTwice, sizeof(TwiceVtable), 0}};
inline const char* const kBetaDeps[] = {"alpha"};

inline molt_plugin_info Info(const char* name, int n) {
  molt_plugin_info info{};
  info.struct_size = sizeof(molt_plugin_info);
  info.abi_version = MOLT_ABI_VERSION_CURRENT;
  info.name = name;
  info.version = "1.0.0";
  info.kind = MOLT_PLUGIN_KIND_SERVICE;
  info.init = n == 0 ? InitProbe<0> : InitProbe<1>;
  info.stop = n == 0 ? StopProbe<0> : StopProbe<1>;
  info.destroy = n == 0 ? DestroyProbe<0> : DestroyProbe<1>;
  return info;
}

class AbiFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    for (Probe& p : g_probe) {
      p = Probe();
    }
    capture_ = Logger::Get().Capture(
        [this](std::string_view line, LogLevel) { lines_.push_back(std::string(line)); });
    KernelOptions o;
    o.clock = &clock_;
    kernel_ = std::move(Kernel::Boot(std::move(o))).value();
    shared_ = std::make_unique<AbiShared>(*kernel_, CoreHostApi());
    alpha_info_ = Info("alpha", 0);
    alpha_info_.interface_count = 1;
    alpha_info_.interfaces = kExports;
    beta_info_ = Info("beta", 1);
    beta_info_.dependency_count = 1;
    beta_info_.dependencies = kBetaDeps;
    alpha_ = std::make_shared<PluginInstance>(*shared_, alpha_info_, "alpha.so");
    beta_ = std::make_shared<PluginInstance>(*shared_, beta_info_, "beta.so");
  }
  void TearDown() override { kernel_.reset(); }

  void Boot() {
    ASSERT_TRUE(kernel_->RegisterService(alpha_).ok());
    ASSERT_TRUE(kernel_->RegisterService(beta_).ok());
    Status s = kernel_->Start();
    ASSERT_TRUE(s.ok()) << s.message();
  }
  const molt_host_api& api() { return shared_->api(); }
  molt_context_t* a() { return g_probe[0].ctx; }
  molt_context_t* b() { return g_probe[1].ctx; }
  std::string Error(molt_context_t* ctx) { return api().last_error(ctx); }

  ManualClock clock_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<AbiShared> shared_;
  molt_plugin_info alpha_info_{}, beta_info_{};
  std::shared_ptr<PluginInstance> alpha_, beta_;
  std::vector<std::string> lines_;
  Logger::Registration capture_;
};

// A journal the C callbacks below write into through user_data.
struct Journal {
  std::vector<std::string> events;
};
inline molt_status_t RecordBus(void* ud, const char* topic, size_t len, const molt_value* args,
                               size_t n) {
  std::string e = std::string(topic, len) + "/" + std::to_string(n);
  if (n > 0 && args[0].type == MOLT_VALUE_INT) {
    e += "/" + std::to_string(args[0].as.i);
  }
  static_cast<Journal*>(ud)->events.push_back(e);
  return MOLT_OK;
}
inline void RecordRelease(void* ud) { static_cast<Journal*>(ud)->events.push_back("release"); }

}  // namespace molt::kernel::abi

#endif  // MOLT_TESTS_KERNEL_ABI_ABI_FIXTURE_H_
