// SPDX-License-Identifier: Apache-2.0
// MetricsRoutes (admin/metrics_routes.h): /metrics is the process's figures, then the kernel's,
// in the Prometheus text format, for any method and without a token.
#include "kernel/src/admin/metrics_routes.h"

#include <gtest/gtest.h>

#include "tests/kernel/admin/admin_parts.h"

namespace molt::kernel::admin {
namespace {

TEST(MetricsRoutesTest, TheProcessFiguresComeFirstThenTheKernels) {
  molt::test::AdminParts parts;
  const AdminSources sources = parts.Sources();
  RouteTable table;
  MetricsRoutes routes(sources);
  routes.Register(table);
  EXPECT_TRUE(table.Find("/metrics").open());
  EXPECT_TRUE(table.Find("/metrics").reads_process());
  const HttpResponse r = parts.Call(table, "GET", "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const std::size_t process = r.body.find("molt_process_resident_memory_bytes");
  const std::size_t build = r.body.find("# TYPE molt_build_info gauge");
  ASSERT_NE(process, std::string::npos);
  ASSERT_NE(build, std::string::npos);
  EXPECT_LT(process, build);
  EXPECT_NE(r.body.find("molt_live_values{kind=\"declared\"} 0"), std::string::npos);
  // Interest: deadbands, zones and grids; link tiers; the load: all at zero here.
  for (const char* line :
       {"molt_replica_fields_deadbanded_total 0", "molt_replica_deltas_deferred_total 0",
        "molt_interest_zones 0", "molt_interest_grids 0", "molt_interest_grid_passes_total 0",
        "molt_interest_grid_changes_total{change=\"enter\"} 0",
        "molt_link_tier_sessions{tier=\"poor\"} 0",
        "molt_link_tier_changes_total{tier=\"strained\"} 0", "molt_link_shed_total 0",
        "molt_net_overloaded 0", "molt_net_overloads_total 0",
        "molt_net_handshakes_refused_overloaded_total 0"}) {
    EXPECT_NE(r.body.find(line), std::string::npos) << line;
  }
  std::string kernel_only;
  parts.OnLoop([&] { kernel_only = routes.Metrics(); });
  EXPECT_EQ(kernel_only.rfind("# HELP molt_build_info", 0), 0u);
}

}  // namespace
}  // namespace molt::kernel::admin
