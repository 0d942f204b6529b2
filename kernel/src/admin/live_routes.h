// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/live_routes.h
//
// LiveRoutes: the live values (docs/live-values.md): read and checked on the kernel thread, a set
// stored by the live values' thread and answered once stored:
//   GET  /api/v1/config?key=K                    every value (or K's), declared and overridden
//   POST /api/v1/config {"key", "value", "by"}   an operator's override (null: unset)
//   GET  /api/v1/config/history?key=K&limit=N    the newest changes (limit 1..kMaxHistory, 50)
// A server without live values answers 503 to each. Composed by AdminApi (admin_api.h).
//
// Thread safety: the handlers run on the kernel thread.
#ifndef MOLT_KERNEL_ADMIN_LIVE_ROUTES_H_
#define MOLT_KERNEL_ADMIN_LIVE_ROUTES_H_

#include "kernel/src/admin/route_table.h"

namespace molt::kernel::live {
class LiveValues;
}  // namespace molt::kernel::live

namespace molt::kernel::admin {

class LiveRoutes {
 public:
  // `live` null: this server keeps none.
  explicit LiveRoutes(live::LiveValues* live) : live_(live) {}
  void Register(RouteTable& table);

 private:
  void List(const HttpRequest& request, HttpReply reply);
  void Set(const HttpRequest& request, HttpReply reply);
  void History(const HttpRequest& request, HttpReply reply);

  live::LiveValues* const live_;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_LIVE_ROUTES_H_
