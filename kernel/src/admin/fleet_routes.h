// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/fleet_routes.h
//
// FleetRoutes: this server among the others (docs/fleet.md), on the kernel thread, answered from
// the fleet's thread:
//   GET  /api/v1/servers?branch=B   every server of the fleet, this one's row fresh
//   POST /api/v1/drain {"server", "deadline_seconds"}   this server, or another of the fleet
//                                   through the fleet's database ("Draining a server")
// Composed by AdminApi (admin_api.h).
//
// Thread safety: the handlers run on the kernel thread; the answers come from the fleet's.
#ifndef MOLT_KERNEL_ADMIN_FLEET_ROUTES_H_
#define MOLT_KERNEL_ADMIN_FLEET_ROUTES_H_

#include <functional>
#include <string>

#include "kernel/src/admin/route_table.h"
#include "kernel/src/fleet/fleet.h"

namespace molt::kernel::admin {

class FleetRoutes {
 public:
  // Drains this server (AdminSources::drain): false when it is already closing.
  using DrainFn = std::function<bool(double deadline_seconds, const std::string& why)>;

  // `fleet` and `self_report` null: this server keeps no fleet (a check); `drain` null too.
  FleetRoutes(fleet::Fleet* fleet, std::function<fleet::ServerReport()> self_report, DrainFn drain)
      : fleet_(fleet), self_report_(std::move(self_report)), drain_(std::move(drain)) {}
  void Register(RouteTable& table);

 private:
  void Servers(const HttpRequest& request, HttpReply reply);
  void Drain(const HttpRequest& request, HttpReply reply);
  // Another server of the fleet drains, asked through the fleet's database.
  void DrainOther(const std::string& id, double seconds, HttpReply reply);

  fleet::Fleet* const fleet_;
  const std::function<fleet::ServerReport()> self_report_;
  const DrainFn drain_;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_FLEET_ROUTES_H_
