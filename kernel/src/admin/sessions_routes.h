// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/sessions_routes.h
//
// SessionsRoutes: the sessions connected now (docs/operations.md), on the kernel thread:
//   GET  /api/v1/sessions?offset=N&limit=N   a page of them, by id (limit 1..1000, 100)
//   GET  /api/v1/sessions/ID                 one, with its round trip and queued bytes
//   POST /api/v1/sessions/ID/kick?reason=    ends it with a Refuse naming the reason
// Composed by AdminApi (admin_api.h).
//
// Thread safety: the handlers run on the kernel thread.
#ifndef MOLT_KERNEL_ADMIN_SESSIONS_ROUTES_H_
#define MOLT_KERNEL_ADMIN_SESSIONS_ROUTES_H_

#include <string_view>

#include "kernel/src/admin/http_server.h"
#include "kernel/src/admin/route_table.h"

namespace molt::kernel::net {
class Network;
}  // namespace molt::kernel::net

namespace molt::kernel::admin {

class SessionsRoutes {
 public:
  static constexpr std::size_t kDefaultPage = 100;
  static constexpr std::size_t kMaxPage = 1000;

  explicit SessionsRoutes(net::Network& network) : network_(network) {}
  void Register(RouteTable& table);

 private:
  HttpResponse Page(const HttpRequest& request) const;
  HttpResponse One(std::string_view id) const;
  HttpResponse Kick(std::string_view id, const HttpRequest& request);

  net::Network& network_;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_SESSIONS_ROUTES_H_
