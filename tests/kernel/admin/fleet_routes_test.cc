// SPDX-License-Identifier: Apache-2.0
// FleetRoutes (admin/fleet_routes.h) without a fleet database: no server list, a drain of this
// server, a malformed body, a second drain while closing, another server that is not here.
#include "kernel/src/admin/fleet_routes.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "tests/kernel/admin/admin_parts.h"

namespace molt::kernel::admin {
namespace {

TEST(FleetRoutesTest, AloneAServerDrainsOnlyItself) {
  molt::test::AdminParts parts;
  std::vector<std::string> drains;
  bool closing = false;
  RouteTable table;
  FleetRoutes routes(
      nullptr,
      [] {
        fleet::ServerReport r;
        r.id = "eu-1";
        return r;
      },
      [&](double seconds, const std::string& why) {
        drains.push_back(why + " " + std::to_string(static_cast<int>(seconds)));
        return !std::exchange(closing, true);
      });
  routes.Register(table);
  EXPECT_EQ(parts.Call(table, "GET", "/api/v1/servers").body,
            "{\"error\":\"this server keeps no fleet (a check runs alone)\"}\n");
  EXPECT_EQ(parts.Call(table, "POST", "/api/v1/drain", "[1]").status, 400);
  const HttpResponse other = parts.Call(table, "POST", "/api/v1/drain", "{\"server\":\"us-2\"}");
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(other.body,
            "{\"error\":\"no server \\\"us-2\\\" here: this server (eu-1) keeps no fleet "
            "database, so it drains only itself\"}\n");
  const HttpResponse self = parts.Call(table, "POST", "/api/v1/drain", "{\"deadline_seconds\":30}");
  EXPECT_EQ(self.status, 202);
  const boost::json::value body = boost::json::parse(self.body);
  EXPECT_EQ(body.at("server").as_string(), "eu-1");
  EXPECT_EQ(body.at("state").as_string(), "draining");
  EXPECT_EQ(body.at("deadline_seconds").to_number<double>(), 30.0);
  EXPECT_EQ(drains, std::vector<std::string>{"admin API 30"});
  const HttpResponse again = parts.Call(table, "POST", "/api/v1/drain");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.body, "{\"error\":\"server eu-1 is already closing\"}\n");
}

TEST(FleetRoutesTest, ACheckTakesNoDrain) {
  molt::test::AdminParts parts;
  RouteTable table;
  FleetRoutes routes(nullptr, nullptr, nullptr);
  routes.Register(table);
  EXPECT_EQ(parts.Call(table, "POST", "/api/v1/drain").body,
            "{\"error\":\"this server takes no drain (a check runs alone)\"}\n");
}

}  // namespace
}  // namespace molt::kernel::admin
