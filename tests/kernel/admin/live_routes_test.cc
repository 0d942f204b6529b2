// SPDX-License-Identifier: Apache-2.0
// LiveRoutes (admin/live_routes.h): 503 for every method without live values; on real ones
// (nothing declared), the list, a key nobody declares, a malformed set, a history that needs GET.
#include "kernel/src/admin/live_routes.h"

#include <gtest/gtest.h>

#include "kernel/src/live/live_values.h"
#include "tests/kernel/admin/admin_parts.h"

namespace molt::kernel::admin {
namespace {

TEST(LiveRoutesTest, WithoutLiveValuesEveryMethodIs503) {
  molt::test::AdminParts parts;
  RouteTable table;
  LiveRoutes routes(nullptr);
  routes.Register(table);
  for (const char* method : {"GET", "POST", "PUT"}) {
    const HttpResponse r = parts.Call(table, method, "/api/v1/config/history");
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.body, "{\"error\":\"this server keeps no live values\"}\n");
  }
}

TEST(LiveRoutesTest, TheValuesAKeyNobodyDeclaresAndAMalformedSet) {
  molt::test::AdminParts parts;
  RouteTable table;
  LiveRoutes routes(&parts.assembly->live());
  routes.Register(table);
  EXPECT_EQ(parts.Call(table, "GET", "/api/v1/config").body, "{\"values\":[]}\n");
  const HttpResponse none = parts.Call(table, "GET", "/api/v1/config?key=game.speed");
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(none.body,
            "{\"error\":\"no running plugin declares the live value \\\"game.speed\\\", and it "
            "has no override\"}\n");
  EXPECT_EQ(parts.Call(table, "POST", "/api/v1/config", "{\"key\":1}").status, 400);
  const HttpResponse put = parts.Call(table, "PUT", "/api/v1/config");
  EXPECT_EQ(put.status, 405);
  EXPECT_EQ(put.body, "{\"error\":\"/api/v1/config takes GET, POST\"}\n");
  EXPECT_EQ(parts.Call(table, "POST", "/api/v1/config/history").body,
            "{\"error\":\"/api/v1/config/history takes GET\"}\n");
  EXPECT_EQ(parts.Call(table, "GET", "/api/v1/config/history?limit=0").status, 400);
}

}  // namespace
}  // namespace molt::kernel::admin
