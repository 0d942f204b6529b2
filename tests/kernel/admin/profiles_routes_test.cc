// SPDX-License-Identifier: Apache-2.0
// ProfilesRoutes (admin/profiles_routes.h) on a real (in-memory) profile store: its counters, a
// name that is not STORE/USER, and a profile nobody stored.
#include "kernel/src/admin/profiles_routes.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "tests/kernel/admin/admin_parts.h"

namespace molt::kernel::admin {
namespace {

TEST(ProfilesRoutesTest, TheCountersAMalformedNameAndAProfileNobodyStored) {
  molt::test::AdminParts parts;
  RouteTable table;
  ProfilesRoutes routes(parts.assembly->profile_db());
  routes.Register(table);
  const boost::json::value stats =
      boost::json::parse(parts.Call(table, "GET", "/api/v1/profiles").body);
  EXPECT_TRUE(stats.is_object());
  const HttpResponse bad = parts.Call(table, "GET", "/api/v1/profiles/");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body,
            "{\"error\":\"name a profile as profiles/STORE/USER (e.g. profiles/scores/ada)\"}\n");
  const HttpResponse none = parts.Call(table, "GET", "/api/v1/profiles/scores/ada");
  EXPECT_EQ(none.status, 404);  // answered once the store's thread read it
  EXPECT_EQ(none.body, "{\"error\":\"no profile scores/ada is stored\"}\n");
  EXPECT_EQ(parts.Call(table, "POST", "/api/v1/profiles/scores/ada").status, 405);
}

}  // namespace
}  // namespace molt::kernel::admin
