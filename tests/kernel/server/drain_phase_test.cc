// SPDX-License-Identifier: Apache-2.0
// DrainPhase (server/drain_phase.h) on a real network and a fleet of one: a server still starting
// closes at once, a serving one with no other live server of its branch says so and closes once
// empty, and a second drain is refused while the first runs.
#include "kernel/src/server/drain_phase.h"

#include <gtest/gtest.h>

#include "kernel/src/core/bus.h"
#include "tests/kernel/server/server_parts.h"

namespace molt::kernel {
namespace {

struct Drain {
  Drain(molt::test::ServerParts& parts, fleet::Fleet* fleet, bool serving)
      : phase(*parts.assembly, fleet, parts.settings, close_requested,
              {[] {
                 fleet::ServerReport r;
                 r.id = "eu-1";
                 r.branch = "prod";
                 r.build = "abc1234-000001";
                 return r;
               },
               [serving] { return serving; },
               [this, &parts](const std::string& why) {
                 closed.push_back(why);
                 parts.assembly->kernel().loop().Stop();
               }}) {}

  std::atomic<bool> close_requested{false};
  std::vector<std::string> closed;
  DrainPhase phase;
};

TEST(DrainPhaseTest, AServerStillStartingClosesAtOnce) {
  molt::test::ServerParts parts;
  Drain drain(parts, nullptr, /*serving=*/false);
  EXPECT_TRUE(drain.phase.Request(30, "SIGUSR1"));
  EXPECT_FALSE(drain.phase.Request(30, "molt drain"));  // a close runs already
  EXPECT_TRUE(parts.Logged("drain (molt drain) ignored: the server is already closing"));
  parts.RunLoop([] {});
  EXPECT_EQ(drain.closed, std::vector<std::string>{"SIGUSR1"});
  EXPECT_FALSE(drain.phase.CutShort());  // it never waited
}

TEST(DrainPhaseTest, WithNoOtherLiveServerTheSessionsEndAsAtAClose) {
  molt::test::ServerParts parts;
  fleet::Fleet fleet("", std::chrono::seconds(1));
  ASSERT_TRUE(fleet.Open().ok());
  std::vector<std::int64_t> soft;
  Connection c = parts.assembly->kernel().bus().Subscribe(
      "Kernel.SoftShutdown", [&](std::string_view, Args args) { soft.push_back(args[0].AsInt()); });
  Drain drain(parts, &fleet, /*serving=*/true);
  ASSERT_TRUE(drain.phase.Request(0, "admin API"));
  parts.RunLoop([] {});
  EXPECT_EQ(drain.closed, std::vector<std::string>{"admin API"});
  EXPECT_EQ(soft, std::vector<std::int64_t>{0});
  EXPECT_TRUE(parts.Logged("draining (admin API): 0 sessions move to another server of branch"))
      << parts.logs();
  EXPECT_TRUE(parts.Logged("draining (admin API): no other live server of branch")) << parts.logs();
}

}  // namespace
}  // namespace molt::kernel
