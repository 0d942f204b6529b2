// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/metrics_routes.h
//
// MetricsRoutes: /metrics, every figure the kernel keeps in the Prometheus text format (the
// names are listed in docs/operations.md), without credentials and for any method. It renders
// the subsystems' snapshots, the same ones stats_json.h renders as JSON, in one pass on the
// kernel thread, after the process's own figures (memory, CPU, descriptors: /proc reads) read on
// the HTTP thread. Composed by AdminApi (admin_api.h).
//
// Thread safety: the handler and Metrics() run on the kernel thread.
#ifndef MOLT_KERNEL_ADMIN_METRICS_ROUTES_H_
#define MOLT_KERNEL_ADMIN_METRICS_ROUTES_H_

#include <string>

#include "kernel/src/admin/admin_sources.h"
#include "kernel/src/admin/route_table.h"

namespace molt::kernel::admin {

class MetricsRoutes {
 public:
  // `sources` outlives this object.
  explicit MetricsRoutes(const AdminSources& sources) : sources_(sources) {}
  void Register(RouteTable& table);

  // The Prometheus text of the kernel's metrics (the process's own not included).
  std::string Metrics() const;

 private:
  const AdminSources& sources_;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_METRICS_ROUTES_H_
