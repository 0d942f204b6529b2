// SPDX-License-Identifier: Apache-2.0
// SelfCheck (server/self_check.h) over real plugins (a fixture) loaded and started: the report's
// lines on stdout, and the exit code that follows its last line.
#include "kernel/src/server/self_check.h"

#include <gtest/gtest.h>
#include <molt/kernel/server.h>

#include "kernel/src/loader/plugin_host.h"
#include "tests/kernel/server/server_parts.h"
#include "tests/support/test_paths.h"

namespace molt::kernel {
namespace {

TEST(SelfCheckTest, TheReportNamesThePluginsTheAuditAndTheFuzzGate) {
  const std::string dir = molt::test::kFixtures + "/gen/v1";
  molt::test::ServerParts parts(dir);
  ASSERT_TRUE(parts.assembly->plugins().LoadDirectory(dir).ok());
  ASSERT_TRUE(parts.assembly->kernel().Start().ok());
  ::testing::internal::CaptureStdout();
  const int code = SelfCheck("--self-test", dir, parts.assembly->plugins(),
                             parts.assembly->network(), parts.assembly->kernel());
  const std::string report = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(report.rfind("moltd --self-test " + dir + "\n  plugins: 1 loaded and started (", 0), 0u)
      << report;
  EXPECT_NE(report.find("\n  security audit: "), std::string::npos);
  EXPECT_NE(report.find("\n  fuzz gate: "), std::string::npos);
  EXPECT_EQ(code, report.ends_with("check passed\n") ? kExitOk : kExitCheckFailed) << report;
  parts.assembly->kernel().Shutdown();
}

}  // namespace
}  // namespace molt::kernel
