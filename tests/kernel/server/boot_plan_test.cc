// SPDX-License-Identifier: Apache-2.0
// BootPlan (server/boot_plan.h) with real plugins (the fixtures) and a real, empty deploy registry:
// the plugin directory boots when the branch has no head; the one source's failure is the boot's;
// with a last known good behind it, each failure is logged with the next one tried, until the
// chain is exhausted.
#include "kernel/src/server/boot_plan.h"

#include <gtest/gtest.h>
#include <molt/kernel/server.h>

#include <filesystem>
#include <fstream>

#include "kernel/src/deploy/deploys.h"
#include "kernel/src/loader/build.h"
#include "kernel/src/loader/plugin_host.h"
#include "tests/kernel/server/server_parts.h"
#include "tests/support/test_paths.h"

namespace molt::kernel {
namespace {

// A boot plan over `parts`, and what it asked of its server.
struct Boot {
  Boot(molt::test::ServerParts& parts, const std::string& last_known_good)
      : plan(*parts.assembly, parts.settings, last_known_good, closing,
             {[this](std::unique_ptr<deploy::Deploys> d) { deploys = std::move(d); },
              [this] { ++deploys_started; },
              [this, &parts](std::size_t at) {
                served = plan.Booted(at).path;
                plan.AfterServing();
                parts.assembly->kernel().loop().Stop();
              },
              [this](const std::string& reason) { reloads.push_back(reason); }}) {}
  ~Boot() {
    plan.StopOpening();
    deploys.reset();
  }

  std::atomic<bool> closing{false};
  std::unique_ptr<deploy::Deploys> deploys;
  int deploys_started = 0;
  std::string served;
  std::vector<std::string> reloads;
  BootPlan plan;
};

TEST(BootPlanTest, WithoutAHeadThePluginDirectoryBoots) {
  molt::test::ServerParts parts(molt::test::kFixtures + "/gen/v1");
  Boot boot(parts, parts.dir() + "/lkg");
  parts.RunLoop([&] { boot.plan.Begin(); });
  EXPECT_EQ(boot.served, molt::test::kFixtures + "/gen/v1");
  EXPECT_NE(boot.deploys, nullptr);  // the registry opened in time: the boot planned with it
  EXPECT_EQ(boot.plan.exit_code(), 0);
  EXPECT_FALSE(parts.assembly->plugins().generation().empty());
  EXPECT_TRUE(boot.reloads.empty());                          // no head to follow
  EXPECT_FALSE(parts.Logged("booted the plugin directory"));  // the first source: not said
}

TEST(BootPlanTest, TheOneSourcesFailureIsTheBoots) {
  molt::test::ServerParts parts(molt::test::kFixtures + "/gen/fail_start");
  Boot boot(parts, parts.dir() + "/lkg");
  parts.RunLoop([&] { boot.plan.Begin(); });
  EXPECT_TRUE(boot.served.empty());
  EXPECT_EQ(boot.plan.exit_code(), kExitBootFailed);
  EXPECT_TRUE(parts.Logged("cannot start: ")) << parts.logs();
  EXPECT_FALSE(parts.Logged("boot budget")) << parts.logs();
}

TEST(BootPlanTest, EachFailureNamesTheNextSourceUntilTheChainIsExhausted) {
  molt::test::ServerParts parts(molt::test::kFixtures + "/gen/fail_start");
  const std::string lkg = parts.dir() + "/lkg";
  std::filesystem::create_directories(lkg);
  std::ofstream(lkg + "/" + loader::kBuildManifest) << "{}";  // there, and broken
  Boot boot(parts, lkg);
  parts.RunLoop([&] { boot.plan.Begin(); });
  EXPECT_EQ(boot.plan.exit_code(), kExitBootFailed);
  EXPECT_TRUE(parts.Logged("the plugin directory " + molt::test::kFixtures +
                           "/gen/fail_start does not boot: "))
      << parts.logs();
  EXPECT_TRUE(parts.Logged("booting the last known good build from " + lkg + " instead"));
  EXPECT_TRUE(parts.Logged(
      "cannot start: nothing boots within the 15 s boot budget (2 of 2 builds tried, each "
      "failure above): the last known good chain is exhausted (lkg_exhausted)"))
      << parts.logs();
}

}  // namespace
}  // namespace molt::kernel
