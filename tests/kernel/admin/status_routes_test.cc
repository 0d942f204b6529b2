// SPDX-License-Identifier: Apache-2.0
// StatusRoutes (admin/status_routes.h) on a real kernel: the status with the process's figures,
// the logs ring, a bundle written on demand, and the bundle's JSON.
#include "kernel/src/admin/status_routes.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "kernel/src/core/logger.h"
#include "tests/kernel/admin/admin_parts.h"

namespace molt::kernel::admin {
namespace {

TEST(StatusRoutesTest, StatusLogsSeriesABundleAndItsJson) {
  molt::test::AdminParts parts;
  std::string bundle_reason;
  RouteTable table;
  StatusRoutes routes(
      {parts.assembly->kernel(), parts.assembly->network(), parts.assembly->plugins(),
       *parts.diagnostics, *parts.errors, parts.logs, [] { return false; },
       [&](std::string_view reason) -> Result<std::string> {
         bundle_reason = std::string(reason);
         return std::string("/tmp/bundle.json");
       }},
      RealNow());
  routes.Register(table);
  EXPECT_TRUE(table.Find("/api/v1/status").reads_process());
  const boost::json::value status =
      boost::json::parse(parts.Call(table, "GET", "/api/v1/status").body);
  EXPECT_EQ(status.at("closing").as_bool(), false);
  EXPECT_GT(status.at("process").at("resident_bytes").to_number<double>(), 0);
  EXPECT_TRUE(status.at("stats").is_object());
  LogScope("status-test").Warn("one line for the ring");
  const boost::json::value logs =
      boost::json::parse(parts.Call(table, "GET", "/api/v1/logs?since=0").body);
  EXPECT_EQ(logs.at("lines").as_array().back().at("message").as_string(), "one line for the ring");
  EXPECT_TRUE(boost::json::parse(parts.Call(table, "GET", "/api/v1/series").body)
                  .as_object()
                  .contains("swaps"));
  const HttpResponse bundle = parts.Call(table, "POST", "/api/v1/bundle");
  EXPECT_EQ(bundle.body, "{\"path\":\"/tmp/bundle.json\"}\n");
  EXPECT_EQ(bundle_reason, "manual");
  EXPECT_EQ(parts.Call(table, "GET", "/api/v1/bundle").status, 405);
  std::string json;
  parts.OnLoop([&] { json = routes.BundleJson("snapshot"); });
  const boost::json::value b = boost::json::parse(json);
  EXPECT_EQ(b.at("reason").as_string(), "snapshot");
  for (const char* key :
       {"status", "diagnostics", "errors", "generations", "channels", "configuration", "logs"}) {
    EXPECT_TRUE(b.as_object().contains(key)) << key;
  }
}

}  // namespace
}  // namespace molt::kernel::admin
