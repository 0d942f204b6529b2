// SPDX-License-Identifier: Apache-2.0
// SessionsRoutes (admin/sessions_routes.h) on a real network with no session: the page, a
// session that is not there, the bounds of a page, a kick that needs POST.
#include "kernel/src/admin/sessions_routes.h"

#include <gtest/gtest.h>

#include "kernel/src/net/network.h"
#include "tests/kernel/admin/admin_parts.h"

namespace molt::kernel::admin {
namespace {

TEST(SessionsRoutesTest, APageAndASessionThatIsNotConnected) {
  molt::test::AdminParts parts;
  RouteTable table;
  SessionsRoutes routes(parts.assembly->network());
  routes.Register(table);
  EXPECT_EQ(parts.Call(table, "GET", "/api/v1/sessions").body,
            "{\"total\":0,\"offset\":0,\"sessions\":[]}\n");
  const HttpResponse bad = parts.Call(table, "GET", "/api/v1/sessions?limit=0");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body, "{\"error\":\"offset must be a number, and limit 1..1000\"}\n");
  const HttpResponse none = parts.Call(table, "GET", "/api/v1/sessions/12");
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(none.body, "{\"error\":\"no session 12 is connected\"}\n");
  EXPECT_EQ(parts.Call(table, "POST", "/api/v1/sessions/12/kick").status, 404);
  const HttpResponse get_kick = parts.Call(table, "GET", "/api/v1/sessions/12/kick");
  EXPECT_EQ(get_kick.status, 405);
  EXPECT_EQ(get_kick.body, "{\"error\":\"/api/v1/sessions/12/kick takes POST\"}\n");
  EXPECT_TRUE(table.Find("/api/v1/sessions/12/other").empty());
}

}  // namespace
}  // namespace molt::kernel::admin
