// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/status_routes.h
//
// StatusRoutes: how this server is doing (docs/operations.md), on the kernel thread:
//   GET  /api/v1/status             version, uptime, generation, sessions, TPS, the scheduler,
//                                   the process's figures (read on the HTTP thread) and every
//                                   subsystem's stats section
//   GET  /api/v1/diagnostics        the newest windows (diagnostics.h)
//   GET  /api/v1/series             the windows of the last 15 min and the swaps within them
//   GET  /api/v1/errors             repeated errors merged per window (error_watch.h)
//   GET  /api/v1/tasks              the scheduler's hottest tasks
//   GET  /api/v1/logs?since=N       the newest log lines (log_ring.h)
//   POST /api/v1/bundle?reason=     a debug bundle written (debug_bundle.h)
// and the bundle's JSON itself (BundleJson). Composed by AdminApi (admin_api.h).
//
// Thread safety: the handlers and BundleJson run on the kernel thread.
#ifndef MOLT_KERNEL_ADMIN_STATUS_ROUTES_H_
#define MOLT_KERNEL_ADMIN_STATUS_ROUTES_H_

#include <molt/kernel/status.h>

#include <boost/json/object.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "kernel/src/admin/metrics.h"
#include "kernel/src/admin/route_table.h"
#include "kernel/src/core/clock.h"

namespace molt::kernel {
class Kernel;
namespace loader {
class PluginHost;
}  // namespace loader
namespace net {
class Network;
}  // namespace net
}  // namespace molt::kernel

namespace molt::kernel::admin {

class Diagnostics;
class ErrorWatch;
class LogRing;

class StatusRoutes {
 public:
  // The parts this server's status reads, and what a bundle needs.
  struct Parts {
    Kernel& kernel;
    net::Network& network;
    loader::PluginHost& plugins;
    const Diagnostics& diagnostics;
    const ErrorWatch& errors;
    const LogRing& logs;
    std::function<bool()> closing;  // true once the close began
    // Writes a debug bundle and returns its path.
    std::function<Result<std::string>(std::string_view reason)> write_bundle;
  };

  // `started`: when the server started (its uptime).
  StatusRoutes(Parts parts, TimePoint started) : p_(std::move(parts)), started_(started) {}
  void Register(RouteTable& table);

  // A debug bundle's JSON (debug_bundle.h): status, diagnostics, errors, generations, channels,
  // the configuration without its secrets and the logs ring.
  std::string BundleJson(std::string_view reason) const;

 private:
  boost::json::object StatusJson(const ProcessFigures& process) const;
  boost::json::object ErrorsJson() const;
  boost::json::object TasksJson() const;
  boost::json::object LogsJson(const HttpRequest& request) const;
  // The diagnostics series (15 min) and the swaps within it, for the dashboard's charts.
  boost::json::object SeriesJson() const;
  HttpResponse Bundle(const HttpRequest& request);

  const Parts p_;
  const TimePoint started_;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_STATUS_ROUTES_H_
