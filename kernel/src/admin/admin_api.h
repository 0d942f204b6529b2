// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/admin_api.h
//
// AdminApi: what the admin endpoint answers (docs/operations.md). It composes one routes class
// per resource, each adding its rows to one RouteTable (route_table.h):
//   the dashboard page (here)   /                              open, the HTTP thread
//   HealthRoutes                /healthz /readyz               open
//   MetricsRoutes               /metrics                       open
//   StatusRoutes                status diagnostics series errors tasks logs bundle
//   SessionsRoutes              sessions sessions/ID sessions/ID/kick
//   PluginsRoutes               plugins hooks reload
//   ChannelsRoutes              channels wire
//   ProfilesRoutes              profiles profiles/STORE/USER
//   FleetRoutes                 servers drain
//   DeployRoutes                builds resolve branches deploy ... report   the HTTP thread
//   LiveRoutes                  config config/history
// (the API's paths under /api/v1/, each needing "Authorization: Bearer <token>"). Access is
// decided on the HTTP server's thread: a request without the token never reaches the kernel.
// A route that reads the kernel's state is posted to the kernel loop and answered there in one
// short slice (the figures are read, never waited for), then handed back to the HTTP thread to
// be written; the deploy calls are answered from the deploy thread.
//
// /healthz is the kernel thread's watchdog: it answers once the kernel loop ran its probe, and
// the HTTP server answers 503 when it did not within its handler timeout.
//
// Thread safety: Handle() and Plan() on the HTTP thread; set_deploys, BundleJson and Metrics on
// the kernel thread.
#ifndef MOLT_KERNEL_ADMIN_ADMIN_API_H_
#define MOLT_KERNEL_ADMIN_ADMIN_API_H_

#include <molt/kernel/status.h>

#include <string>
#include <string_view>

#include "kernel/src/admin/admin_sources.h"
#include "kernel/src/admin/channels_routes.h"
#include "kernel/src/admin/deploy_routes.h"
#include "kernel/src/admin/fleet_routes.h"
#include "kernel/src/admin/health_routes.h"
#include "kernel/src/admin/http_server.h"
#include "kernel/src/admin/live_routes.h"
#include "kernel/src/admin/metrics_routes.h"
#include "kernel/src/admin/plugins_routes.h"
#include "kernel/src/admin/profiles_routes.h"
#include "kernel/src/admin/route_table.h"
#include "kernel/src/admin/sessions_routes.h"
#include "kernel/src/admin/status_routes.h"

namespace molt::kernel::admin {

class AdminApi {
 public:
  // `token`: the bearer token every /api/ request must carry. `sources` outlives nothing: it is
  // kept.
  AdminApi(AdminSources sources, std::string token);
  AdminApi(const AdminApi&) = delete;
  AdminApi& operator=(const AdminApi&) = delete;

  // The deploys, once the registry is open (the kernel thread; the admin thread's Plan() reads
  // it too). Until then the deploy calls answer 503.
  void set_deploys(deploy::Deploys* deploys) { deploys_.set_deploys(deploys); }

  // On the HTTP thread: checks access, then answers through the request's route, on the thread
  // the route names.
  void Handle(HttpRequest request, HttpReply reply);
  // On the HTTP thread, from a request's head: an upload of a build streams to a file (only with
  // the token), a call that waits for a swap gets the time it waits for (HttpPlanner).
  HttpPlan Plan(const HttpRequest& head) const;

  // A debug bundle's JSON (StatusRoutes::BundleJson; the kernel thread).
  std::string BundleJson(std::string_view reason) const { return status_.BundleJson(reason); }
  // The Prometheus text of the kernel's metrics (MetricsRoutes::Metrics; the kernel thread).
  std::string Metrics() const { return metrics_.Metrics(); }

  // Every route, in the order added.
  const RouteTable& routes() const { return table_; }

 private:
  bool Authorized(const HttpRequest& request) const;
  static HttpResponse Unauthorized();
  // The dashboard page: it holds no secret (it asks for the token) and is answered on the HTTP
  // thread, so it loads even while the kernel thread is stuck.
  static void Dashboard(RouteCall& call);

  const AdminSources sources_;
  const std::string token_;
  HealthRoutes health_;
  MetricsRoutes metrics_;
  StatusRoutes status_;
  SessionsRoutes sessions_;
  PluginsRoutes plugins_;
  ChannelsRoutes channels_;
  ProfilesRoutes profiles_;
  FleetRoutes fleet_;
  DeployRoutes deploys_;
  LiveRoutes live_;
  RouteTable table_;  // filled by the constructor: the rows point into the routes above
};

// The admin token: `configured` when set; else the one in `path`, created on first start (32
// random bytes, hex) with owner-only permissions. A token file other users can read is refused
// (naming the file and the chmod that fixes it).
Result<std::string> LoadAdminToken(const std::string& path, const std::string& configured);

// Whether two strings are equal, in time that depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_ADMIN_API_H_
