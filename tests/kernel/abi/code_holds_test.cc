// SPDX-License-Identifier: Apache-2.0
// CodeHolds: what waits for the holds runs at once when there are none, else when the last one
// is dropped; and a plugin instance's holds pair the instance with them.
#include "kernel/src/abi/code_holds.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/kernel/abi/abi_fixture.h"

namespace molt::kernel::abi {
namespace {

TEST(CodeHoldsTest, WithNoHoldWhatWaitsRunsAtOnce) {
  CodeHolds holds;
  EXPECT_EQ(holds.count(), 0u);
  int ran = 0;
  holds.After([&] { ++ran; });
  EXPECT_EQ(ran, 1);
}

TEST(CodeHoldsTest, TheLastHoldToGoRunsWhatWaitsInOrder) {
  CodeHolds holds;
  std::shared_ptr<CodeHolds::Anchor> first = holds.Take();
  std::shared_ptr<CodeHolds::Anchor> second = holds.Take();
  EXPECT_EQ(holds.count(), 2u);
  std::vector<std::string> ran;
  holds.After([&] { ran.push_back("unload"); });
  holds.After([&] { ran.push_back("log"); });
  EXPECT_TRUE(ran.empty());
  first.reset();
  EXPECT_EQ(holds.count(), 1u);
  EXPECT_TRUE(ran.empty());
  second.reset();
  EXPECT_EQ(holds.count(), 0u);
  EXPECT_EQ(ran, (std::vector<std::string>{"unload", "log"}));
}

using PluginInstanceCodeHoldTest = AbiFixture;

// A worker job's hold keeps the instance alive and its code waiting (workers/workers_api.h).
TEST_F(PluginInstanceCodeHoldTest, AHoldKeepsTheInstanceAndDelaysWhatWaitsForItsCode) {
  std::shared_ptr<PluginInstance::CodeHold> hold = alpha_->HoldCode();
  EXPECT_EQ(&hold->instance(), alpha_.get());
  EXPECT_EQ(alpha_->code_holds(), 1u);
  bool unloaded = false;
  alpha_->AfterCodeHolds([&] { unloaded = true; });
  EXPECT_FALSE(unloaded);
  std::weak_ptr<PluginInstance> instance = alpha_;
  alpha_.reset();
  EXPECT_FALSE(instance.expired()) << "the hold keeps it";
  hold.reset();
  EXPECT_TRUE(unloaded);
}

}  // namespace
}  // namespace molt::kernel::abi
