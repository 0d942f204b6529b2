// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/health_routes.h
//
// HealthRoutes: the probes a supervisor or a load balancer reads, without credentials and for
// any method (docs/operations.md), on the kernel thread:
//   /healthz  the kernel thread's watchdog: it answers once the kernel loop ran it (the HTTP
//             server answers 503 when it did not in time); "degraded" with each plugin callback
//             abandoned at its deadline
//   /readyz   a generation serves, clients are accepted, the server is not closing, and the
//             profile store answered a read
// Composed by AdminApi (admin_api.h).
//
// Thread safety: the handlers run on the kernel thread.
#ifndef MOLT_KERNEL_ADMIN_HEALTH_ROUTES_H_
#define MOLT_KERNEL_ADMIN_HEALTH_ROUTES_H_

#include <functional>

#include "kernel/src/admin/route_table.h"

namespace molt::kernel {
namespace loader {
class PluginHost;
}  // namespace loader
namespace net {
class Network;
}  // namespace net
namespace store {
class ProfileStore;
}  // namespace store
}  // namespace molt::kernel

namespace molt::kernel::admin {

class HealthRoutes {
 public:
  // `closing`: true once the close began.
  HealthRoutes(net::Network& network, loader::PluginHost& plugins, store::ProfileStore& store,
               std::function<bool()> closing)
      : network_(network), plugins_(plugins), store_(store), closing_(std::move(closing)) {}
  void Register(RouteTable& table);

 private:
  HttpResponse Healthz() const;
  void Ready(HttpReply reply);

  net::Network& network_;
  loader::PluginHost& plugins_;
  store::ProfileStore& store_;
  const std::function<bool()> closing_;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_HEALTH_ROUTES_H_
