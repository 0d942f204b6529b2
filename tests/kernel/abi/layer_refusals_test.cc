// SPDX-License-Identifier: Apache-2.0
// The refusals of the layer slots (layer_refusals.h): every slot of a layer the host lacks is
// set and answers MOLT_ERR_UNSUPPORTED naming who has it, until the layer replaces it.
#include "kernel/src/abi/layer_refusals.h"

#include <gtest/gtest.h>

#include <string>

#include "kernel/src/net/net_api.h"
#include "tests/kernel/abi/abi_fixture.h"

namespace molt::kernel::abi {
namespace {

using LayerRefusalsTest = AbiFixture;

// A host without the analytics layer (this one: moltd attaches it) refuses analytics_track.
TEST_F(LayerRefusalsTest, AnalyticsWithoutTheLayerAreRefusedSayingWhoKeepsThem) {
  Boot();
  EXPECT_TRUE(MOLT_API_HAS(&api(), analytics_track));
  EXPECT_EQ(api().analytics_track(a(), "purchase", 0, 1, nullptr, 0), MOLT_ERR_UNSUPPORTED);
  EXPECT_EQ(Error(a()), "this host keeps no analytics (moltd does)");
}

TEST_F(LayerRefusalsTest, NetworkingSlotsSayWhenTheHostHasNoNetwork) {
  Boot();
  ASSERT_TRUE(MOLT_API_HAS(&api(), session_kick));
  molt_channel_spec spec{};
  spec.struct_size = sizeof(spec);
  spec.name = "a.B";
  spec.schema = "a.B";
  molt_channel_t ch = 0;
  EXPECT_EQ(api().channel_declare(a(), &spec, nullptr, &ch), MOLT_ERR_UNSUPPORTED);
  EXPECT_EQ(Error(a()), "this host has no network (channels and sessions are server-side)");
  EXPECT_EQ(api().session_kick(a(), 1, nullptr), MOLT_ERR_UNSUPPORTED);
  molt_replica_t r = 0;
  EXPECT_EQ(api().replica_create(a(), nullptr, &r), MOLT_ERR_UNSUPPORTED);
  EXPECT_EQ(Error(a()), "this host has no network (channels and sessions are server-side)");
  // The client side too: a service is not a controller.
  EXPECT_EQ(api().client_intent(a(), "chat.Say", nullptr, 0), MOLT_ERR_UNSUPPORTED);
  EXPECT_EQ(Error(a()),
            "this host is not a client (intents, requests and replica reads are for controllers)");

  // A server layer without a network (not listening) answers the same.
  AttachNetwork(*shared_, nullptr);
  EXPECT_EQ(api().session_kick(a(), 1, nullptr), MOLT_ERR_UNSUPPORTED);
  EXPECT_EQ(Error(a()), "this host has no network (channels and sessions are server-side)");
}

TEST_F(LayerRefusalsTest, EachLayersSlotsNameWhoHasThem) {
  Boot();
  EXPECT_EQ(api().job_cancel(a(), 1), MOLT_ERR_UNSUPPORTED);
  EXPECT_EQ(Error(a()), "this host runs no worker jobs (moltd does)");
  EXPECT_EQ(api().live_get(a(), "x", nullptr, nullptr), MOLT_ERR_UNSUPPORTED);
  EXPECT_EQ(Error(a()), "this host keeps no live values (moltd does)");
  EXPECT_EQ(api().message_publish(a(), "x", nullptr, 0), MOLT_ERR_UNSUPPORTED);
  EXPECT_EQ(Error(a()), "this host sends no messages between servers (moltd does)");
  EXPECT_EQ(api().profile_save(a(), 1), MOLT_ERR_UNSUPPORTED);
  EXPECT_EQ(Error(a()), "this host keeps no profiles (moltd does: profile stores are server-side)");
}

TEST_F(LayerRefusalsTest, ARefusalOfAStoppedInstanceSaysItIsNotRunning) {
  Boot();
  ASSERT_TRUE(alpha_->Stop().ok());
  EXPECT_EQ(api().kv_call(a(), nullptr, nullptr, nullptr, nullptr), MOLT_ERR_STATE);
  EXPECT_EQ(Error(a()),
            "plugin \"alpha\" is not running: host calls are accepted from init until stop "
            "returns");
}

TEST_F(LayerRefusalsTest, InstallLayerRefusalsSetsNoCoreSlot) {
  molt_host_api table{};
  InstallLayerRefusals(table);
  EXPECT_NE(table.channel_declare, nullptr);
  EXPECT_NE(table.client_intent, nullptr);
  EXPECT_NE(table.profile_key_release, nullptr);
  EXPECT_NE(table.analytics_track, nullptr);
  EXPECT_EQ(table.bus_publish, nullptr);
  EXPECT_EQ(table.task_schedule, nullptr);
}

}  // namespace
}  // namespace molt::kernel::abi
