// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/service_manager.h
//
// ServiceManager: boots services in dependency order (spec: Services). Services register first;
// Boot() then runs every Init, then every Start, each in dependency order, so Start may call any
// service and a dependency's own Start has already run. A cycle fails with its full chain
// ("dependency cycle: A -> B -> C -> A"); a dependency on an unregistered service fails too. When
// an Init or Start fails, every service already attempted is stopped in reverse order and the
// error is returned: Stop must tolerate Start never having run. StopAll() stops in reverse boot
// order, each stop isolated (a failure is logged and the rest still run).
// Boot() is InitAll() then StartAll(): a generation being mounted runs InitAll() while another
// set still serves, and StartAll() at its swap.
//
// Thread safety: REQUIRES external synchronization (the kernel thread).
#ifndef MOLT_KERNEL_CORE_SERVICE_MANAGER_H_
#define MOLT_KERNEL_CORE_SERVICE_MANAGER_H_

#include <molt/kernel/status.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"

namespace molt::kernel {

// A service as the manager sees it: a plugin instance, or a native service in tests and hosts.
// Implementations may throw; the manager turns an exception into an internal-error Status.
class Service {
 public:
  virtual ~Service() = default;
  virtual const std::string& name() const = 0;
  virtual const std::vector<std::string>& dependencies() const = 0;
  virtual Status Init() = 0;
  virtual Status Start() = 0;
  // REQUIRES: tolerates Start never having run.
  virtual Status Stop() = 0;
  // The hard stop alone: releases what the service holds without running its own stop logic
  // (StopAll's budget ran out). Stop() by default; plugin instances skip the plugin's stop().
  virtual void Halt() { (void)Stop(); }
  // Stop() that gives its own stop logic at most `limit`; past it, kTimedOut (the service was
  // hard-stopped). Stop() by default: a native service cannot be cut short.
  virtual Status StopWithin(Duration /*limit*/) { return Stop(); }
};

struct ServiceTiming {
  std::string name;
  Duration init{};
  Duration start{};
};

class ServiceManager {
 public:
  enum class State { kRegistering, kBooting, kInitialized, kRunning, kFailed, kStopped };

  ServiceManager() = default;
  ServiceManager(const ServiceManager&) = delete;
  ServiceManager& operator=(const ServiceManager&) = delete;

  // Adds a service. Fails for a duplicate name or once boot began.
  Status Register(std::shared_ptr<Service> service);

  // The order Boot() would use: dependencies first, otherwise registration order.
  Result<std::vector<Service*>> ResolveOrder() const;

  // Two-phase boot. On failure every attempted service is stopped (reverse order) and the error
  // names the service and the phase: `service "rounds": start failed: <why>`.
  Status Boot();
  // Boot() in two halves: every Init (kRegistering -> kInitialized), then every Start
  // (kInitialized -> kRunning). A failure stops every attempted service, as Boot() does.
  Status InitAll();
  Status StartAll();

  // Stops every attempted, not yet stopped service in reverse boot order; returns the failures.
  // `observer`, when set, hears each stop with its duration and result. Once the stops have
  // taken `budget` together, the services left are halted (Service::Halt: no stop logic) and
  // each gets a kTimedOut failure naming it (and is listed in halted()). With a budget, each stop
  // gets what is left of it (Service::StopWithin): one that runs past it is hard-stopped, listed
  // in halted() too.
  using StopObserver = Callback<void(const Service&, Duration, const Status&)>;
  std::vector<Status> StopAll(const StopObserver& observer = nullptr,
                              Duration budget = Duration::max());

  // The service named `name`, or nullptr.
  Service* Get(std::string_view name) const;

  State state() const { return state_; }
  bool booting() const { return state_ == State::kBooting; }
  std::size_t size() const { return services_.size(); }
  // Boot order of the services attempted so far.
  const std::vector<Service*>& boot_order() const { return attempted_; }
  const std::vector<ServiceTiming>& timings() const { return timings_; }
  // The services StopAll halted because its budget ran out, in stop order.
  const std::vector<Service*>& halted() const { return halted_; }

 private:
  Status Stop(Service* service, Duration limit = Duration::max());
  // Stops what was attempted after a failed phase; returns `failure`.
  Status Fail(Status failure);

  std::vector<std::shared_ptr<Service>> services_;  // registration order
  std::vector<Service*> attempted_;                 // Init attempted, boot order
  std::vector<Service*> stopped_;
  std::vector<Service*> halted_;
  std::vector<ServiceTiming> timings_;
  State state_ = State::kRegistering;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_SERVICE_MANAGER_H_
