// SPDX-License-Identifier: Apache-2.0
// Pins (deploy/pins.h) over real parts (deploy_parts.h): what a pin may hold, and how the serving
// state follows it. deploys_test.cc runs pins through Deploys and the API's answers.
#include "kernel/src/deploy/pins.h"

#include <gtest/gtest.h>

#include "kernel/src/core/clock.h"
#include "tests/kernel/deploy/deploy_parts.h"
#include "tests/kernel/deploy/test_builds.h"

namespace molt::kernel::deploy {
namespace {

using test::DeployParts;
using test::TestDir;

class PinsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    parts_ = std::make_unique<DeployParts>(dir_.path(), DeployParts::Options{});
    pins_ = std::make_unique<Pins>("prod", /*prod_rules=*/false, parts_->pin_parts());
    one_ = parts_->Store({});
    two_ = parts_->Store({.id = "abc1234-000002", .bytes = "two"});
    for (const StoredBuild* b : {&one_, &two_}) {  // deployed: one, then two (the head)
      Deployment d;
      d.branch = "prod";
      d.build = b->sha256;
      d.build_id = b->id;
      d.kind = "deploy";
      ASSERT_TRUE(parts_->registry->Record(d).ok());
    }
    parts_->serving.Refresh();
  }
  Result<PinOutcome> Pin(PinRequest r, int wait = 5) {
    return parts_->Await<PinOutcome>(
        [&](Done<PinOutcome> done) { pins_->Pin(r, std::chrono::seconds(wait), done); });
  }

  TestDir dir_;
  std::unique_ptr<DeployParts> parts_;
  std::unique_ptr<Pins> pins_;
  StoredBuild one_;
  StoredBuild two_;
};

TEST_F(PinsTest, APinHoldsTheHeadFileUntilTheUnpinSwapsTheHeadBackIn) {
  EXPECT_EQ(parts_->serving.HeadFile(), parts_->registry->BuildPath(two_.sha256));
  Result<PinOutcome> pinned = Pin({.build = "#1", .by = "ana"});
  ASSERT_TRUE(pinned.ok()) << pinned.status().ToString();
  EXPECT_EQ(pinned->result, "swapped");
  EXPECT_EQ(pinned->build_id, one_.id);
  EXPECT_FALSE(pinned->pending);
  ASSERT_TRUE(parts_->serving.pin().has_value());
  EXPECT_EQ(parts_->serving.pin()->by, "ana");
  EXPECT_EQ(parts_->serving.HeadFile(), parts_->registry->BuildPath(one_.sha256));
  EXPECT_EQ(parts_->serving.Kept(), std::set<std::string>{one_.sha256});
  Result<PinOutcome> unpinned = Pin({.unpin = true, .by = "ana"});
  ASSERT_TRUE(unpinned.ok());
  EXPECT_EQ(unpinned->build_id, two_.id);
  EXPECT_FALSE(parts_->serving.pin().has_value());
  EXPECT_EQ(parts_->serving.HeadFile(), parts_->registry->BuildPath(two_.sha256));
  EXPECT_EQ(parts_->Swaps(),
            (std::vector<std::string>{"abc1234-000001 pin by ana", "abc1234-000002 unpin by ana"}));
}

TEST_F(PinsTest, RefusalsAreRejectedAndKeptUnderKindPin) {
  Result<PinOutcome> none = Pin({.unpin = true});
  EXPECT_EQ(none.status(), Status::Rejected("this server is not pinned"));
  Result<PinOutcome> unknown = Pin({.build = "nothing"});
  EXPECT_EQ(unknown.status().code(), Status::Code::kRejected);
  EXPECT_EQ(parts_->refusals.Recent().size(), 2u);
  EXPECT_EQ(parts_->refusals.Recent()[0].kind, "pin");
  EXPECT_TRUE(parts_->Swaps().empty());
}

TEST_F(PinsTest, AFailedSwapHoldsNoPinAndAPinNotWaitedForAnswersPending) {
  parts_->outcome = {"failed", "start: boom", "{}", true};
  Result<PinOutcome> failed = Pin({.build = "#1"});
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->result, "failed");
  EXPECT_EQ(failed->reason, "start: boom");
  EXPECT_FALSE(parts_->serving.pin().has_value());
  parts_->outcome = {"swapped", "", "{}", false};
  Result<PinOutcome> now = Pin({.build = "#1"}, /*wait=*/0);
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(now->pending);
  EXPECT_EQ(now->result, "pending");
  // The pending answer came from inside the deploy thread's task, which then asked for the swap;
  // a task posted after that one ended runs after the swap's answer. The first Run may be posted
  // while it still runs, the second cannot.
  parts_->Run([] {});
  parts_->Run([] {});
  EXPECT_TRUE(parts_->serving.pin().has_value());
}

TEST(PinsSignedTest, OnProdRulesAnUnsignedPinIsRefusedNamingTheSignature) {
  TestDir dir;
  DeployParts parts(dir.path(), {.prod_rules = true});
  Pins pins("prod", /*prod_rules=*/true, parts.pin_parts());
  const StoredBuild b = parts.Store({});
  Deployment d;
  d.branch = "prod";
  d.build = b.sha256;
  d.build_id = b.id;
  ASSERT_TRUE(parts.registry->Record(d).ok());
  const auto now = static_cast<std::uint64_t>(WallMs());
  Result<PinOutcome> r = parts.Await<PinOutcome>([&](Done<PinOutcome> done) {
    pins.Pin({.build = "#1", .sent_ms = now}, std::chrono::seconds(5), done);
  });
  EXPECT_EQ(r.status().code(), Status::Code::kRejected);
  EXPECT_EQ(r.status().message().rfind("prod servers take only signed pins: ", 0), 0u);
  Result<PinOutcome> old = parts.Await<PinOutcome>([&](Done<PinOutcome> done) {
    pins.Pin({.build = "#1", .sent_ms = now - 200'000}, std::chrono::seconds(5), done);
  });
  EXPECT_EQ(old.status().message(),
            "a pin is taken within 120 s of its signing (sent_ms); this one is 200 s off: sign "
            "it again");
}

}  // namespace
}  // namespace molt::kernel::deploy
