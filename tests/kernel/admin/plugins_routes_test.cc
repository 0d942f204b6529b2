// SPDX-License-Identifier: Apache-2.0
// PluginsRoutes (admin/plugins_routes.h): the generations and the hooks of a real kernel, and a
// reload asked at once or with a wait that is out of bounds.
#include "kernel/src/admin/plugins_routes.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "tests/kernel/admin/admin_parts.h"

namespace molt::kernel::admin {
namespace {

TEST(PluginsRoutesTest, TheGenerationsTheHooksAndAReloadAskedAtOnce) {
  molt::test::AdminParts parts;
  int reloads = 0;
  RouteTable table;
  PluginsRoutes routes(parts.assembly->kernel(), parts.assembly->plugins(),
                       [&](std::function<void(const loader::SwapReport&)> done) {
                         EXPECT_EQ(done, nullptr);  // 202 at once: nobody waits for the report
                         ++reloads;
                       });
  routes.Register(table);
  const boost::json::value plugins =
      boost::json::parse(parts.Call(table, "GET", "/api/v1/plugins").body);
  EXPECT_TRUE(plugins.as_object().contains("history"));
  const boost::json::value hooks =
      boost::json::parse(parts.Call(table, "GET", "/api/v1/hooks").body);
  EXPECT_TRUE(hooks.at("hooks").is_array());
  const HttpResponse too_long = parts.Call(table, "POST", "/api/v1/reload?wait=601");
  EXPECT_EQ(too_long.status, 400);
  EXPECT_EQ(reloads, 0);
  const HttpResponse now = parts.Call(table, "POST", "/api/v1/reload");
  EXPECT_EQ(now.status, 202);
  EXPECT_EQ(boost::json::parse(now.body).at("accepted").as_bool(), true);
  EXPECT_EQ(reloads, 1);
  EXPECT_EQ(parts.Call(table, "GET", "/api/v1/reload").status, 405);
}

}  // namespace
}  // namespace molt::kernel::admin
