// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/kernel.h
//
// Kernel: one per process (spec: Kernel & Boot). It owns the Scheduler (stepped by its Loop), the
// Bus, the Hooks, the service manager, the root scope and the configuration, and holds no game
// rules. Its moments, in order:
//
//   auto kernel = Kernel::Boot(options);      // once per process: a second boot errors
//   kernel.value()->RegisterService(svc);     // the registration window: nothing runs yet
//   kernel.value()->Start();                  // every init, then every start, dependency order
//   kernel.value()->loop().Run();             // the host's loop, until it stops
//   kernel.value()->Shutdown();               // full teardown (the destructor does it too)
//
// Errors keep the spec's texts: "a molt kernel is already booted in this process; use
// Kernel::Current()", "kernel already started", "kernel is shut down", "cannot shut down while
// services are booting", and "kernel shutdown failed: ..." collecting every failed step.
//
// Thread safety: REQUIRES the kernel thread, except Current().
#ifndef MOLT_KERNEL_CORE_KERNEL_H_
#define MOLT_KERNEL_CORE_KERNEL_H_

#include <molt/kernel/status.h>

#include <boost/json/fwd.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernel/src/core/bus.h"
#include "kernel/src/core/callback.h"
#include "kernel/src/core/config.h"
#include "kernel/src/core/hooks.h"
#include "kernel/src/core/loop.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/core/scope.h"
#include "kernel/src/core/service_manager.h"

namespace molt::kernel {

class Process;
struct ProcessOptions;

// Which side of the wire this kernel serves: the server (moltd, services) or a client
// (libmolt_client, controllers). The role picks defaults (the budget policy) and what plugins
// may load; the core is the same.
enum class Role { kServer, kClient };

// The scheduler's budget policy for `role`: frame-aware when target_frame is set, or when neither
// option is set on the server (DESIGN.md §3); the floor is `budget` or 1.5 ms, the target
// 16.5 ms when unset. A client defaults to a fixed slice.
BudgetPolicy ResolveBudget(const SchedulerConfig& config, Role role);

struct KernelOptions {
  Role role = Role::kServer;
  SchedulerConfig scheduler;
  double tick_rate = 60;   // Hz: scheduler steps are at least 1/tick_rate apart
  Clock* clock = nullptr;  // nullptr: the real clock
  Config config;
};

struct KernelStats {
  std::string version;
  Role role = Role::kServer;
  SchedulerStats scheduler;
  std::vector<std::pair<Phase, SchedulerStats>> phases;  // the phase schedulers built so far
  std::vector<ServiceTiming> service_timings;            // boot order
};

class Kernel {
 public:
  // Where an extension's teardown runs during Shutdown().
  enum class ShutdownStage {
    kFirst,        // before the services stop (sessions end here: handlers still work)
    kAfterScopes,  // after the root scope closed (processes are killed here)
  };

  // The kernel version, "0.1.0".
  static std::string_view Version();
  // "Server" or "Client".
  static std::string_view RoleName(Role role);

  // Builds the kernel. Fails when one is already booted in this process.
  static Result<std::unique_ptr<Kernel>> Boot(KernelOptions options);
  // The booted kernel, or nullptr.
  static Kernel* Current();

  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  // Shuts down (logging any failure) when Shutdown() was not called.
  ~Kernel();

  Role role() const { return role_; }
  Scheduler& scheduler() { return *scheduler_; }
  Loop& loop() { return *loop_; }
  Bus& bus() { return *bus_; }
  Hooks& hooks() { return *hooks_; }
  // The serving service set: the services registered here, or the generation a swap made serve.
  ServiceManager& services() { return *serving_; }
  const ServiceManager& services() const { return *serving_; }
  const Config& config() const { return config_; }

  // Makes `next` the serving service set and returns the one it replaces (the generations'
  // swap, loader/plugin_host.h). `next` must stay alive while it serves.
  ServiceManager* Serve(ServiceManager* next) { return std::exchange(serving_, next); }

  // Registers a service, then publishes Kernel.ServiceRegistered(name).
  Status RegisterService(std::shared_ptr<Service> service);
  // Boots every registered service and logs "[molt 0.1.0] Server booted 4 services in 1.3ms".
  Status Start();
  // The service named `name`: `service "x" is not registered` otherwise.
  Result<Service*> GetService(std::string_view name) const;
  // A child of the root scope, closed by Shutdown() if nothing closed it first.
  Result<std::shared_ptr<Scope>> CreateScope();
  // A Created process on the kernel scheduler, killed with reason "kernel shutdown" by Shutdown()
  // if it is still alive then. "kernel is shut down" once shutdown began.
  Result<std::shared_ptr<Process>> SpawnProcess(Callback<std::string()> body,
                                                const ProcessOptions& options);
  // Spawned processes still alive.
  std::size_t process_count() const;
  // Releases everything in the spec's order, each step isolated: teardown extensions (kFirst),
  // every service not yet stopped (reverse boot order), the root scope, every spawned process
  // still alive (killed: "kernel shutdown"), extensions (kAfterScopes), then every task,
  // subscription and hook handler left. The scheduler, Bus and
  // hooks objects live until the destructor, so this is safe from inside a task or handler.
  // Idempotent.
  Status Shutdown();

  // Adds a teardown step to Shutdown() (later subsystems: sessions, processes).
  void OnShutdown(ShutdownStage stage, std::string name, Callback<Status()> step);
  // Removes the teardown steps named `name` (their subsystem went away first).
  void RemoveShutdownStep(std::string_view name);
  // Adds `name` to StatsObject(): `fill` writes a subsystem's figures into the object it is given
  // (its snapshot, rendered by whoever renders that subsystem: admin/ for the server's).
  void AddStatsSection(std::string name, Callback<void(boost::json::object&)> fill);
  void RemoveStatsSection(std::string_view name);

  KernelStats Stats() const;
  // Stats() as one JSON object, with every section: what the stats_json slot gives plugins and
  // the admin API's status embeds. (Callers include <boost/json/object.hpp>.)
  boost::json::object StatsObject() const;
  // StatsObject(), serialized.
  std::string StatsJson() const;

  bool started() const { return started_; }
  bool shutting_down() const { return shutting_down_; }
  bool shut_down() const { return shut_down_; }

 private:
  explicit Kernel(KernelOptions options);
  void RunShutdownSteps(ShutdownStage stage, std::vector<std::string>& errors);

  Role role_;
  Config config_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Loop> loop_;
  std::unique_ptr<Bus> bus_;
  std::unique_ptr<Hooks> hooks_;
  ServiceManager boot_services_;  // what RegisterService fills
  ServiceManager* serving_ = &boot_services_;
  std::unique_ptr<Scope> root_scope_;
  Bus::Topic* service_registered_;
  struct ShutdownStep {
    ShutdownStage stage;
    std::string name;
    Callback<Status()> run;
  };
  std::vector<ShutdownStep> shutdown_steps_;
  std::vector<std::pair<std::string, Callback<void(boost::json::object&)>>> stats_sections_;
  std::vector<std::weak_ptr<Process>> processes_;
  bool started_ = false;
  bool shutting_down_ = false;
  bool shut_down_ = false;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_KERNEL_H_
