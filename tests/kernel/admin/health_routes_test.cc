// SPDX-License-Identifier: Apache-2.0
// HealthRoutes (admin/health_routes.h): /healthz from the kernel thread, and /readyz naming each
// reason a server that serves nothing and listens nowhere is not ready, for any method.
#include "kernel/src/admin/health_routes.h"

#include <gtest/gtest.h>

#include "tests/kernel/admin/admin_parts.h"

namespace molt::kernel::admin {
namespace {

TEST(HealthRoutesTest, HealthyButNotReadyWithEachReason) {
  molt::test::AdminParts parts;
  bool closing = false;
  RouteTable table;
  HealthRoutes routes(parts.assembly->network(), parts.assembly->plugins(),
                      parts.assembly->profile_db(), [&] { return closing; });
  routes.Register(table);
  const HttpResponse health = parts.Call(table, "GET", "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  EXPECT_EQ(health.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(parts.Call(table, "POST", "/healthz").body, "ok\n");  // any method
  EXPECT_TRUE(table.Find("/healthz").open());
  closing = true;
  const HttpResponse ready = parts.Call(table, "GET", "/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.body,
            "not ready: the server is closing; no plugin generation serves; clients are not "
            "accepted (not listening)\n");
}

}  // namespace
}  // namespace molt::kernel::admin
