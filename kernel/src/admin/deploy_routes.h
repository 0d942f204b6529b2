// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/deploy_routes.h
//
// DeployRoutes: the deploy calls (docs/deploys.md), read on the HTTP thread and answered from the
// deploy thread (deploy::Deploys); the kernel thread sees only the swaps they ask for. What
// Deploys answers becomes HTTP in deploy_answers.h.
//   GET  /api/v1/builds?limit=N              POST /api/v1/builds (the build file as the body)
//   GET  /api/v1/resolve?branch=&build=&rollback=1
//   GET  /api/v1/branches    GET /api/v1/deployments?branch=&limit=N    GET /api/v1/report?seq=N
//   POST /api/v1/deploy | promote | rollback | resign | widen | pin | unpin   (?wait=S, 0..600)
// Until the deploy registry opens (set_deploys) every one answers 503. An upload streams to a file
// the plan names before its body is read (UploadPlan). Composed by AdminApi (admin_api.h).
//
// Thread safety: set_deploys on the kernel thread; the handlers and UploadPlan on the HTTP
// thread.
#ifndef MOLT_KERNEL_ADMIN_DEPLOY_ROUTES_H_
#define MOLT_KERNEL_ADMIN_DEPLOY_ROUTES_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "kernel/src/admin/route_table.h"
#include "kernel/src/fleet/fleet.h"

namespace molt::kernel::deploy {
class Deploys;
}  // namespace molt::kernel::deploy

namespace molt::kernel::admin {

class DeployRoutes {
 public:
  // An upload may take this long to arrive (a large build over a slow link).
  static constexpr std::chrono::seconds kUploadTime{600};

  // `deploys` null until the registry opens; `fleet` and `self_report` null: no fleet (a
  // report lists this server's result alone).
  DeployRoutes(deploy::Deploys* deploys, fleet::Fleet* fleet,
               std::function<fleet::ServerReport()> self_report)
      : deploys_(deploys), fleet_(fleet), self_report_(std::move(self_report)) {}
  void Register(RouteTable& table);

  // The deploys, once the registry is open.
  void set_deploys(deploy::Deploys* deploys) { deploys_.store(deploys); }

  // The plan of an upload's head (POST /api/v1/builds): its body streams to a fresh file of the
  // registry, or it is refused before its body is read (`authorized` false: 401; no registry:
  // 503). `refuse_unauthorized` is the 401 to give.
  HttpPlan UploadPlan(bool authorized, HttpResponse refuse_unauthorized) const;

 private:
  void Upload(RouteCall& call, deploy::Deploys& deploys);
  void Report(RouteCall& call, deploy::Deploys& deploys);
  // deploy, promote, rollback, resign, widen, pin, unpin: `kind`.
  void Change(std::string_view kind, RouteCall& call, deploy::Deploys& deploys);
  // A row for `path`: its handler gets the deploys (the gate saw them).
  void Add(RouteTable& table, const char* method, const char* path, Role role,
           std::function<void(RouteCall&, deploy::Deploys&)> handler);

  std::atomic<deploy::Deploys*> deploys_;
  fleet::Fleet* const fleet_;
  const std::function<fleet::ServerReport()> self_report_;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_DEPLOY_ROUTES_H_
