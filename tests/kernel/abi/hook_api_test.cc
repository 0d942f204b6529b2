// SPDX-License-Identifier: Apache-2.0
// The hook slots (hook_api.h), called exactly as a plugin calls them (abi_fixture.h): a handler's
// veto and rewrite, a failure's text on a fail-closed chain, fail-open passing.
#include "kernel/src/abi/hook_api.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tests/kernel/abi/abi_fixture.h"

namespace molt::kernel::abi {
namespace {

using HookApiTest = AbiFixture;

molt_status_t Veto(void* ud, molt_hook_context* c) {
  ++*static_cast<int*>(ud);
  if (c->args[0].as.i > 100) {
    c->args[0].as.i = 100;  // clamp for the handlers after this one
  }
  return c->session == 9 ? MOLT_ERR_REJECTED : MOLT_OK;
}

TEST_F(HookApiTest, HooksThroughTheTable) {
  Boot();
  molt_hook_handler_t h = 0;
  EXPECT_EQ(api().hook_on(a(), "Kernel.SessionStart", 100, Veto, nullptr, nullptr, &h),
            MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()), "hook point \"Kernel.SessionStart\" is kernel-reserved");
  EXPECT_EQ(api().hook_define(a(), "Kernel.X", MOLT_HOOK_FAIL_OPEN), MOLT_ERR_INVALID_ARGUMENT);
  int calls = 0;
  ASSERT_EQ(api().hook_on(a(), "Intent.Buy", 5, Veto, &calls, nullptr, &h), MOLT_OK);
  std::int64_t seen = 0;
  kernel_->hooks().On("Intent.Buy", [&](HookContext& c) {
    seen = c.args[0].AsInt();
    return true;
  });
  molt_value args[] = {Value::Int(500)};
  std::uint8_t passed = 0;
  const char* error = "unset";
  ASSERT_EQ(api().hook_fire(b(), "Intent.Buy", args, 1, 1, &passed, &error), MOLT_OK);
  EXPECT_EQ(passed, 1);
  EXPECT_EQ(error, nullptr);
  EXPECT_EQ(seen, 100);
  EXPECT_EQ(args[0].as.i, 100);  // the caller's array was rewritten
  ASSERT_EQ(api().hook_fire(b(), "Intent.Buy", args, 1, 9, &passed, &error), MOLT_OK);
  EXPECT_EQ(passed, 0);
  EXPECT_EQ(calls, 2);
  ASSERT_EQ(api().hook_off(a(), h), MOLT_OK);
  EXPECT_EQ(api().hook_off(a(), h), MOLT_ERR_STALE);
}

molt_status_t FailingHandler(void* ud, molt_hook_context*) {
  auto* probe = static_cast<Probe*>(ud);
  probe->api->set_error(probe->ctx, "inventory unavailable");
  return MOLT_ERR_INTERNAL;
}

TEST_F(HookApiTest, FailingHandlerRejectsFailClosedAndPassesFailOpenWithItsText) {
  Boot();
  molt_hook_handler_t h;
  ASSERT_EQ(api().hook_on(a(), "Intent.Use", 100, FailingHandler, &g_probe[0], nullptr, &h),
            MOLT_OK);
  ASSERT_EQ(api().hook_define(a(), "Inventory.CanUse", MOLT_HOOK_FAIL_OPEN), MOLT_OK);
  ASSERT_EQ(api().hook_on(a(), "Inventory.CanUse", 100, FailingHandler, &g_probe[0], nullptr, &h),
            MOLT_OK);
  std::uint8_t passed = 1;
  const char* error = nullptr;
  ASSERT_EQ(api().hook_fire(b(), "Intent.Use", nullptr, 0, 0, &passed, &error), MOLT_OK);
  EXPECT_EQ(passed, 0);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(std::string(error),
            "hook \"Intent.Use\": handler threw: plugin \"alpha\": inventory unavailable");
  ASSERT_EQ(api().hook_fire(b(), "Inventory.CanUse", nullptr, 0, 0, &passed, &error), MOLT_OK);
  EXPECT_EQ(passed, 1);
  EXPECT_EQ(alpha_->callback_errors(), 2u);
}

TEST_F(HookApiTest, InstallHookSlotsSetsEveryHookSlot) {
  molt_host_api table{};
  InstallHookSlots(table);
  EXPECT_NE(table.hook_define, nullptr);
  EXPECT_NE(table.hook_on, nullptr);
  EXPECT_NE(table.hook_off, nullptr);
  EXPECT_NE(table.hook_fire, nullptr);
  EXPECT_EQ(table.task_schedule, nullptr) << "and nothing else";
}

}  // namespace
}  // namespace molt::kernel::abi
