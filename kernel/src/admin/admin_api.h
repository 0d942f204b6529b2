// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/admin_api.h
//
// AdminApi: what the admin endpoint answers (docs/operations.md). It runs in two places: access
// is decided on the HTTP server's thread (a request without the token never reaches the kernel),
// and every answer is built on the kernel thread, posted to its loop, in one short slice (the
// figures are read, never waited for), then handed back to the HTTP thread to be written.
//
//   GET  /  (the dashboard)  /healthz  /readyz  /metrics   no credentials
//   GET  /api/v1/status | diagnostics | errors | sessions | sessions/ID | plugins | channels
//        /api/v1/hooks | tasks | logs?since=N | wire?since=N | profiles | profiles/STORE/USER
//   POST /api/v1/sessions/ID/kick  /api/v1/reload  /api/v1/bundle  /api/v1/drain
//                                              "Authorization: Bearer <token>"
//
// /healthz is the kernel thread's watchdog: it answers once the kernel loop ran its probe, and
// the HTTP server answers 503 when it did not within its handler timeout. /readyz: a generation
// serves, clients are accepted, the server is not closing, and the profile store answered a read.
//
// Thread safety: Handle() on the HTTP thread; the rest on the kernel thread.
#ifndef MOLT_KERNEL_ADMIN_ADMIN_API_H_
#define MOLT_KERNEL_ADMIN_ADMIN_API_H_

#include <molt/kernel/status.h>

#include <atomic>
#include <boost/json/fwd.hpp>
#include <functional>
#include <string>

#include "kernel/src/admin/http_server.h"
#include "kernel/src/admin/metrics.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/fleet/fleet.h"

namespace molt::kernel::fleet {
class KvStore;
class Messages;
}  // namespace molt::kernel::fleet

namespace molt::kernel {
class Kernel;
namespace net {
class Network;
}
namespace loader {
class PluginHost;
struct SwapReport;
}  // namespace loader
namespace store {
class ProfileStore;
}
namespace deploy {
class Deploys;
}
namespace analytics {
class Analytics;
}
namespace live {
class LiveValues;
}
}  // namespace molt::kernel

namespace molt::kernel::admin {

class Diagnostics;
class ErrorWatch;
class LogRing;

struct AdminSources {
  Kernel& kernel;
  net::Network& network;
  loader::PluginHost& plugins;
  store::ProfileStore& store;
  const LogRing& logs;
  const Diagnostics& diagnostics;
  const ErrorWatch& errors;
  // Swaps in the plugin directory as a new generation; `done` (may be null) hears the report.
  std::function<void(std::function<void(const loader::SwapReport&)> done)> reload;
  // Writes a debug bundle (debug_bundle.h) and returns its path.
  std::function<Result<std::string>(std::string_view reason)> write_bundle;
  std::function<bool()> closing;  // true once the close began
  // Drains this server (docs/fleet.md): false when it is already closing.
  std::function<bool(double deadline_seconds, const std::string& why)> drain;
  // Builds and deploys (deploy/deploys.h); null: this server takes none (--check).
  deploy::Deploys* deploys = nullptr;
  // The analytics queue (/metrics' molt_analytics_*); null: none.
  const analytics::Analytics* analytics = nullptr;
  // The live values (/api/v1/config, live_routes.cc); null: none.
  live::LiveValues* live = nullptr;
  // The fleet (/api/v1/servers) and this server's report to it (the kernel thread); null: none.
  fleet::Fleet* fleet = nullptr;
  std::function<fleet::ServerReport()> self_report = nullptr;
  // Messages between servers and the key-value store (/metrics' molt_messages_*, molt_kv_*);
  // null: none.
  const fleet::Messages* messages = nullptr;
  const fleet::KvStore* kv = nullptr;
};

class AdminApi {
 public:
  // `token`: the bearer token every /api/ request must carry.
  AdminApi(AdminSources sources, std::string token);
  // The deploys, once the registry is open (the kernel thread; the admin thread's Plan() reads
  // it too). Until then the deploy calls answer 503.
  void set_deploys(deploy::Deploys* deploys) { deploys_.store(deploys); }

  // On the HTTP thread: checks access, then builds the answer on the kernel thread (the deploy
  // calls: on the deploy thread, deploy_routes.cc).
  void Handle(HttpRequest request, HttpReply reply);
  // On the HTTP thread, from a request's head: an upload of a build streams to a file (only with
  // the token), a call that waits for a swap gets the time it waits for (HttpPlanner).
  HttpPlan Plan(const HttpRequest& head) const;

  // A debug bundle's JSON (debug_bundle.h): status, diagnostics, errors, generations, the logs
  // ring and the configuration without its secrets (the kernel thread).
  std::string BundleJson(std::string_view reason) const;

  // The Prometheus text of the kernel's metrics (the kernel thread); the process's own (memory,
  // CPU, descriptors: /proc reads) are read on the HTTP thread and written before them.
  std::string Metrics() const;

 private:
  bool Authorized(const HttpRequest& request) const;
  static HttpResponse Unauthorized();
  // The deploy calls (builds, resolve, branches, deploy, promote, rollback, deployments): true
  // when `rest` (the path after /api/v1/) is one of them, answered from the deploy thread.
  bool HandleDeploys(std::string_view rest, HttpRequest& request, HttpReply& reply);
  // The live values' calls (config, config/history): true when `rest` is one of them (the
  // kernel thread; a set is answered once stored).
  bool HandleLive(std::string_view rest, const HttpRequest& request, HttpReply& reply);
  // GET servers: the fleet, answered from the fleet's thread (docs/fleet.md).
  void Servers(const HttpRequest& request, HttpReply reply);
  // POST drain {"server", "deadline_seconds"}: this server, or another of the fleet through the
  // fleet's database (docs/fleet.md, "Draining a server").
  void Drain(const HttpRequest& request, HttpReply reply);
  // On the kernel thread; `process` was read on the HTTP thread for /metrics and status.
  void Route(const HttpRequest& request, const ProcessFigures& process, HttpReply& reply);
  void Ready(HttpReply reply);
  boost::json::object StatusJson(const ProcessFigures& process) const;
  HttpResponse SessionsPage(const HttpRequest& request) const;
  HttpResponse SessionJson(std::string_view id) const;
  HttpResponse KickSession(std::string_view id, const HttpRequest& request);
  boost::json::object HooksJson() const;
  boost::json::object LogsJson(const HttpRequest& request) const;
  boost::json::object ErrorsJson() const;
  boost::json::object TasksJson() const;
  // The diagnostics series (15 min) and the swaps within it, for the dashboard's charts.
  boost::json::object SeriesJson() const;
  // The wire inspector's frames after `since`; each read keeps it recording (Network::Inspect).
  boost::json::object WireJson(const HttpRequest& request);
  // One profile, read without a lease, with its backups; answers when the store does.
  void Profile(std::string key, HttpReply reply);

  AdminSources sources_;
  std::atomic<deploy::Deploys*> deploys_;  // sources_.deploys, then set_deploys()
  const std::string token_;
  const TimePoint started_;
};

// The admin token: `configured` when set; else the one in `path`, created on first start (32
// random bytes, hex) with owner-only permissions. A token file other users can read is refused
// (naming the file and the chmod that fixes it).
Result<std::string> LoadAdminToken(const std::string& path, const std::string& configured);

// Whether two strings are equal, in time that depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_ADMIN_API_H_
