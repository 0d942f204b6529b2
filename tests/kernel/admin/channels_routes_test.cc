// SPDX-License-Identifier: Apache-2.0
// ChannelsRoutes (admin/channels_routes.h): no channel declared yet, and a read of the wire that
// starts the inspector recording for its lease.
#include "kernel/src/admin/channels_routes.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "tests/kernel/admin/admin_parts.h"

namespace molt::kernel::admin {
namespace {

TEST(ChannelsRoutesTest, TheChannelsAndAWireReadThatKeepsTheInspectorRecording) {
  molt::test::AdminParts parts;
  RouteTable table;
  ChannelsRoutes routes(parts.assembly->network());
  routes.Register(table);
  EXPECT_EQ(parts.Call(table, "GET", "/api/v1/channels").body, "{\"channels\":[]}\n");
  const boost::json::value wire =
      boost::json::parse(parts.Call(table, "GET", "/api/v1/wire?since=0").body);
  EXPECT_TRUE(wire.at("capturing").as_bool());
  EXPECT_EQ(wire.at("lease_seconds").to_number<double>(), 10.0);
  EXPECT_TRUE(wire.at("frames").as_array().empty());
  EXPECT_EQ(parts.Call(table, "POST", "/api/v1/wire").status, 405);
}

}  // namespace
}  // namespace molt::kernel::admin
