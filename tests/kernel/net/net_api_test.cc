// SPDX-License-Identifier: Apache-2.0
// The networking slots of the C ABI (1.1, 1.2: net_api.cc), through a real plugin (fx_net, on
// molt.hpp) loaded by the PluginHost into a kernel with a listening Network, driven by real
// loopback clients.
#include "kernel/src/net/net_api.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "kernel/src/loader/plugin_host.h"
#include "net_fixture.h"

namespace molt::kernel::net {
namespace {

using molt::test::Frame;
using molt::test::TestClient;
namespace w = ::molt::wire;

class NetApiTest : public NetTest {
 protected:
  void SetUp() override {
    NetTest::SetUp();
    copies_ = ::testing::TempDir() + "molt_net_abi_" + std::to_string(::getpid());
    std::filesystem::remove_all(copies_);
    plugins_ = std::make_unique<loader::PluginHost>(*kernel_, copies_);
    abi::AttachNetwork(plugins_->shared(), net_.get());
    Status s = plugins_->LoadDirectory(std::string(MOLT_FIXTURE_DIR) + "/net");
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = kernel_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
    Listen();
    log_ = kernel_->bus().Subscribe("Fx.net.*", [this](std::string_view, Args a) {
      events_.push_back(std::string(a[1].AsString()));
    });
    released_ = kernel_->bus().Subscribe("Kernel.SessionEnd", [this](std::string_view, Args a) {
      events_.push_back("end " + std::string(a[1].AsString()));
    });
  }
  void TearDown() override {
    if (kernel_) {
      (void)kernel_->Shutdown();
    }
    plugins_.reset();
    NetTest::TearDown();
    std::filesystem::remove_all(copies_);
  }
  ChannelId Id(const char* name) { return net_->channels().Find(name)->id(); }
  static std::string SayText(const Frame& f) {
    const auto* p = f.envelope()->body_as_Event()->payload();
    return flatbuffers::GetRoot<molt::test::Say>(p->data())->text()->str();
  }

  std::string copies_;
  std::unique_ptr<loader::PluginHost> plugins_;
  std::vector<std::string> events_;
  Connection log_;
  Connection released_;
};

TEST_F(NetApiTest, APluginsChannelsServeRealClients) {
  ASSERT_EQ(net_->channels().size(), 3u);
  const ChannelId say = Id("fx.Say");
  const ChannelId dbl = Id("fx.Double");
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    EXPECT_EQ(SayText(c.NextOf(w::Body::Event)), "hello ada");  // sent from onSession
    c.Intent(say, SayPayload("hi all"));
    EXPECT_EQ(SayText(c.NextOf(w::Body::Event)), "hi all");
    auto answer = [&](std::uint32_t id, std::int32_t amount) {
      c.Request(dbl, id, AddPayload(amount));
      Frame f = c.NextOf(w::Body::Response);
      const w::Response* r = f.envelope()->body_as_Response();
      EXPECT_EQ(r->id(), id);
      return std::make_pair(r->status(), std::string(r->payload()->begin(), r->payload()->end()));
    };
    EXPECT_EQ(answer(1, 21), std::make_pair(0, std::string("42")));
    EXPECT_EQ(answer(2, 13), std::make_pair(MOLT_ERR_NOT_FOUND, std::string()));
    EXPECT_EQ(answer(3, 5000), std::make_pair(MOLT_ERR_REJECTED, std::string("refused")));
    c.Intent(say, SayPayload("kick"));
    Frame bye = c.NextOf(w::Body::Bye);
    ASSERT_EQ(bye.type(), w::Body::Bye);
    EXPECT_EQ(bye.envelope()->body_as_Bye()->reason()->str(), "Kicked");
    EXPECT_EQ(Text(bye.envelope()), "asked to");
  });
  EXPECT_EQ(events_,
            (std::vector<std::string>{"end Kicked", "first", "second", "last", "released"}));
  EXPECT_EQ(
      net_->channels().Find(dbl)->counters().rejected[static_cast<int>(Reject::kRuleViolated)], 1u);
}

TEST_F(NetApiTest, AStoppingPluginTakesItsChannelsAndBindingsAndLeavesTheSession) {
  TestClient c(port_);
  Run([&] {
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    EXPECT_EQ(SayText(c.NextOf(w::Body::Event)), "hello ada");
  });
  ASSERT_EQ(net_->sessions().count(), 1u);
  plugins_->UnloadAll();  // stops fx_net: its bindings run now (still able to send), then its
                          // channels go
  EXPECT_EQ(events_, (std::vector<std::string>{"first", "second", "last", "released"}));
  Run([&] { EXPECT_EQ(SayText(c.NextOf(w::Body::Event)), "goodbye"); });
  EXPECT_EQ(net_->channels().size(), 0u);
  EXPECT_EQ(net_->sessions().count(), 1u);  // the session is the kernel's, not the plugin's
  events_.clear();
  c.Close();
  ASSERT_TRUE(RunUntil([&] { return net_->sessions().count() == 0; }));
  EXPECT_EQ(events_, std::vector<std::string>{"end ClientClosed"});  // nothing ran twice
}

// The board's current values as a client sees them: "joins=2 last=bob", from a Replica frame.
std::string Board(const Frame& f) {
  const w::Replica* r = f.envelope()->body_as_Replica();
  std::string out = std::string(w::EnumNameReplicaUpdateKind(r->kind()));
  if (r->values() == nullptr) {
    return out;
  }
  for (const w::ReplicaValue* v : *r->values()) {
    out += v->field() == 0 ? " joins=" + std::to_string(v->int_value())
                           : " last=" + std::string(v->bytes()->begin(), v->bytes()->end());
  }
  return out;
}

TEST_F(NetApiTest, APluginsReplicaReachesClientsAndGoesWithThePlugin) {
  TestClient ada(port_);
  TestClient bob(port_);
  Run([&] {
    ASSERT_EQ(ada.Hello("ada").type(), w::Body::Welcome);
    Frame first = ada.NextOf(w::Body::Replica);
    EXPECT_EQ(first.envelope()->body_as_Replica()->name()->str(), "fx.board");
    EXPECT_EQ(Board(first), "Snapshot joins=1 last=ada");
    ASSERT_EQ(bob.Hello("bob").type(), w::Body::Welcome);
    EXPECT_EQ(Board(bob.NextOf(w::Body::Replica)), "Snapshot joins=2 last=bob");  // late join
    EXPECT_EQ(Board(ada.NextOf(w::Body::Replica)), "Delta joins=2 last=bob");
  });
  plugins_->UnloadAll();  // the plugin stops: its replica is destroyed, clients get a remove
  Run([&] {
    EXPECT_EQ(Board(ada.NextOf(w::Body::Replica)), "Remove");
    EXPECT_EQ(Board(bob.NextOf(w::Body::Replica)), "Remove");
  });
  EXPECT_EQ(net_->replicas().count(), 0u);
}

// ABI 1.12: when Net.TierChanged names a session, the plugin reads its link's grade through
// session_info. The client answers the server's pings as if each came back 300 ms late.
TEST_F(NetApiTest, APluginReadsTheGradeOfALinkWhoseTierChanged) {
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    for (int answered = 0; answered < 3;) {
      Frame f = c.NextAny(std::chrono::milliseconds(3000));
      ASSERT_FALSE(f.closed || f.timeout) << "no ping came";
      if (f.type() != w::Body::Ping) {
        continue;  // fx_net's hello
      }
      const w::Ping* ping = f.envelope()->body_as_Ping();
      flatbuffers::FlatBufferBuilder b;
      c.SendRaw(TestClient::Finish(
          b, w::Body::Pong, w::CreatePong(b, ping->seq(), ping->time_ns() - 300'000'000).Union()));
      ++answered;
    }
  });
  const auto tier = [&] {
    return std::find_if(events_.begin(), events_.end(),
                        [](const std::string& e) { return e.rfind("poor median ", 0) == 0; });
  };
  ASSERT_TRUE(RunUntil([&] { return tier() != events_.end(); }, std::chrono::milliseconds(5000)))
      << ::testing::PrintToString(events_);
  const int median = std::stoi(tier()->substr(std::string("poor median ").size()));
  EXPECT_GE(median, 300);
  EXPECT_LT(median, 400);
  EXPECT_NE(tier()->find(" ms, loss 0%"), std::string::npos) << *tier();
}

TEST_F(NetApiTest, SlotErrorsNameTheArgumentAndTheFix) {
  const molt_host_api& api = plugins_->shared().api();
  molt_context_t* ctx = plugins_->plugins()[0].instance->context();
  auto error = [&] { return std::string(api.last_error(ctx)); };
  molt_channel_spec spec{};
  molt_channel_t ch = 0;
  EXPECT_EQ(api.channel_declare(ctx, &spec, nullptr, &ch), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(),
            "molt_channel_spec.struct_size is 0, below 120 (its size in ABI 1.1, the smallest "
            "accepted): set it to sizeof(molt_channel_spec)");
  spec.struct_size = sizeof(spec);
  spec.name = "fx.Other";
  spec.schema = "molt.test.Say";
  spec.kind = 7;
  EXPECT_EQ(api.channel_declare(ctx, &spec, nullptr, &ch), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(),
            "spec->kind 7 is not MOLT_CHANNEL_INTENT, _REQUEST, _EVENT, _UNRELIABLE or "
            "_PREDICTED_INTENT");
  spec.kind = MOLT_CHANNEL_UNRELIABLE;
  spec.unreliable_priority = 2;
  EXPECT_EQ(api.channel_declare(ctx, &spec, nullptr, &ch), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(),
            "spec->unreliable_priority 2 is not MOLT_UNRELIABLE_LOW or MOLT_UNRELIABLE_HIGH");
  spec.unreliable_priority = MOLT_UNRELIABLE_HIGH;
  spec.on_intent = [](void*, molt_session_t, const molt_value*, size_t) { return MOLT_OK; };
  EXPECT_EQ(api.channel_declare(ctx, &spec, nullptr, &ch), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(),
            "channel \"fx.Other\": an unreliable channel with a handler takes messages from "
            "clients: give it a payload verifier (the schema's generated Verify...)");
  spec.on_intent = nullptr;
  spec.unreliable_priority = 0;
  spec.kind = MOLT_CHANNEL_PREDICTED_INTENT;
  EXPECT_EQ(api.channel_declare(ctx, &spec, nullptr, &ch), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(),
            "channel \"fx.Other\": an inbound channel needs a payload verifier (the schema's "
            "generated Verify...)");
  spec.kind = MOLT_CHANNEL_INTENT;
  EXPECT_EQ(api.channel_declare(ctx, &spec, nullptr, &ch), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(),
            "channel \"fx.Other\": an inbound channel needs a payload verifier (the schema's "
            "generated Verify...)");
  molt_field_rule rule{};
  rule.rule = MOLT_RULE_MAX_LENGTH;
  rule.type = MOLT_FIELD_INT32;
  spec.rules = &rule;
  spec.rule_count = 1;
  EXPECT_EQ(api.channel_declare(ctx, &spec, nullptr, &ch), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "rule 0: MOLT_RULE_MAX_LENGTH applies to MOLT_FIELD_STRING");
  spec.rule_count = 0;
  spec.name = "fx.Say";
  spec.verify = [](void*, const void*, size_t) -> std::int32_t { return 1; };
  EXPECT_EQ(api.channel_declare(ctx, &spec, nullptr, &ch), MOLT_ERR_ALREADY_EXISTS);

  molt_session_info info{};
  EXPECT_EQ(api.session_info(ctx, 42, &info), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(),
            "molt_session_info.struct_size is 0, below 56 (its size in ABI 1.1, the smallest "
            "accepted): set it to sizeof(molt_session_info)");
  info.struct_size = sizeof(info);
  EXPECT_EQ(api.session_info(ctx, 42, &info), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(error(), "session 42 is not live (it left, or never existed)");
  EXPECT_EQ(api.session_kick(ctx, 42, nullptr), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(api.request_reply(ctx, 99, MOLT_OK, nullptr, 0), MOLT_ERR_STALE);
  EXPECT_EQ(error(), "the request was already answered or timed out");
  // Another plugin's channel (or a made-up handle) is not this plugin's to send on.
  EXPECT_EQ(api.event_send(ctx, 999999u << 4, nullptr, 0, nullptr, 0), MOLT_ERR_STALE);
  EXPECT_EQ(api.event_send(ctx, 9, nullptr, 0, nullptr, 0), MOLT_ERR_INVALID_ARGUMENT);

  // Replicas (ABI 1.2).
  molt_replica_spec rs{};
  molt_replica_t r = 0;
  EXPECT_EQ(api.replica_create(ctx, &rs, &r), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(),
            "molt_replica_spec.struct_size is 0, below 40 (its size in ABI 1.2, the smallest "
            "accepted): set it to sizeof(molt_replica_spec)");
  rs.struct_size = sizeof(rs);
  EXPECT_EQ(api.replica_create(ctx, &rs, &r), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "spec->name is NULL");
  const molt_replica_field fields[] = {{"hp", MOLT_REPLICA_INT, 0}, {"name", 9, 0}};
  rs.name = "fx.hero";
  rs.fields = fields;
  rs.field_count = 1000;  // checked before the host reads the array
  EXPECT_EQ(api.replica_create(ctx, &rs, &r), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(),
            "replica \"fx.hero\": spec->field_count is 1000; a replica has 1 to 64 fields");
  rs.field_count = 2;
  EXPECT_EQ(api.replica_create(ctx, &rs, &r), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "replica \"fx.hero\": field 1 has type 9, not a MOLT_REPLICA_* value");
  rs.field_count = 1;
  rs.audience = MOLT_AUDIENCE_LIST;
  ASSERT_EQ(api.replica_create(ctx, &rs, &r), MOLT_OK) << error();
  EXPECT_EQ(api.replica_set_float(ctx, r, 0, 1.0), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "replica \"fx.hero\": field \"hp\" is int, not float");
  EXPECT_EQ(api.replica_add_session(ctx, r, 42), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(error(), "session 42 is not active");
  EXPECT_EQ(api.replica_set_bytes(ctx, r, 0, nullptr, 3), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api.replica_set_int(ctx, ch, 0, 1), MOLT_ERR_INVALID_ARGUMENT);  // not a replica
  EXPECT_EQ(api.replica_destroy(ctx, r), MOLT_OK);
  EXPECT_EQ(api.replica_set_int(ctx, r, 0, 1), MOLT_ERR_STALE);
}

// ABI 1.11: a deadband, a zone, a grid and a predicate through the slots, to real clients.
TEST_F(NetApiTest, InterestSlotsChooseWhichClientsSeeAReplica) {
  const molt_host_api& api = plugins_->shared().api();
  molt_context_t* ctx = plugins_->plugins()[0].instance->context();
  auto error = [&] { return std::string(api.last_error(ctx)); };
  auto kind = [](const Frame& f) {
    return std::string(w::EnumNameReplicaUpdateKind(f.envelope()->body_as_Replica()->kind()));
  };
  TestClient ada(port_);
  TestClient bob(port_);
  Run([&] {
    ASSERT_EQ(ada.Hello("ada").type(), w::Body::Welcome);
    (void)ada.NextOf(w::Body::Replica);  // the fixture's board
    ASSERT_EQ(bob.Hello("bob").type(), w::Body::Welcome);
    (void)bob.NextOf(w::Body::Replica);
    (void)ada.NextOf(w::Body::Replica);  // bob's join on it
  });
  std::vector<SessionId> ids = net_->sessions().ActiveIds();
  std::sort(ids.begin(), ids.end());
  ASSERT_EQ(ids.size(), 2u);
  const SessionId ada_id = ids[0], bob_id = ids[1];

  // A dot at (x, y) with a deadband of 1 on x, seen through a zone and a grid.
  const molt_replica_field fields[] = {{"x", MOLT_REPLICA_FLOAT, 0}, {"y", MOLT_REPLICA_FLOAT, 0}};
  const double quantize[] = {1, 0};
  molt_replica_spec rs{};
  rs.struct_size = sizeof(rs);
  rs.audience = MOLT_AUDIENCE_LIST;
  rs.name = "fx.dot";
  rs.fields = fields;
  rs.field_count = 2;
  rs.tick_rate = 100;
  rs.quantize = quantize;
  molt_replica_t dot = 0;
  ASSERT_EQ(api.replica_create(ctx, &rs, &dot), MOLT_OK) << error();
  molt_zone_t hall = 0;
  ASSERT_EQ(api.zone_declare(ctx, "hall", &hall), MOLT_OK) << error();
  EXPECT_EQ(api.zone_declare(ctx, "hall", &hall), MOLT_ERR_ALREADY_EXISTS);
  EXPECT_EQ(error(), "zone \"hall\" is already declared by plugin \"fx_net\"");
  ASSERT_EQ(api.zone_bind(ctx, hall, dot), MOLT_OK) << error();
  ASSERT_EQ(api.zone_enter(ctx, hall, ada_id), MOLT_OK) << error();
  Run([&] {
    EXPECT_EQ(ada.NextOf(w::Body::Replica).envelope()->body_as_Replica()->name()->str(), "fx.dot");
  });
  // The deadband: 0.5 is not sent, 1.5 is.
  ASSERT_EQ(api.replica_set_float(ctx, dot, 0, 0.5), MOLT_OK);
  ASSERT_EQ(api.replica_set_float(ctx, dot, 1, 2), MOLT_OK);
  Run([&] {
    const Frame delta = ada.NextOf(w::Body::Replica);  // holds the bytes `r` points into
    const w::Replica* r = delta.envelope()->body_as_Replica();
    ASSERT_EQ(r->values()->size(), 1u);
    EXPECT_EQ(r->values()->Get(0)->field(), 1);
  });
  ASSERT_EQ(api.zone_leave(ctx, hall, ada_id), MOLT_OK);
  Run([&] { EXPECT_EQ(kind(ada.NextOf(w::Body::Replica)), "Remove"); });

  // A grid: bob stands by the dot, ada far away.
  molt_grid_spec gs{};
  molt_grid_t world = 0;
  EXPECT_EQ(api.grid_declare(ctx, &gs, &world), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(),
            "molt_grid_spec.struct_size is 0, below 48 (its size in ABI 1.11, the smallest "
            "accepted): set it to sizeof(molt_grid_spec)");
  gs.struct_size = sizeof(gs);
  gs.name = "world";
  gs.radius = 10;
  gs.rate = 100;
  ASSERT_EQ(api.grid_declare(ctx, &gs, &world), MOLT_OK) << error();
  ASSERT_EQ(api.grid_bind(ctx, world, dot, 0, 1), MOLT_OK) << error();
  ASSERT_EQ(api.grid_place(ctx, world, bob_id, 0, 0), MOLT_OK) << error();
  ASSERT_EQ(api.grid_place(ctx, world, ada_id, 500, 0), MOLT_OK) << error();
  Run([&] {
    EXPECT_EQ(bob.NextOf(w::Body::Replica).envelope()->body_as_Replica()->name()->str(), "fx.dot");
  });

  // A predicate that turns bob away; its user_data is released when it is replaced.
  static int released = 0;
  released = 0;
  ASSERT_EQ(api.replica_set_interest(
                ctx, dot, [](void*, molt_session_t) -> std::int32_t { return 0; }, nullptr,
                [](void*) { ++released; }),
            MOLT_OK)
      << error();
  Run([&] { EXPECT_EQ(kind(bob.NextOf(w::Body::Replica)), "Remove"); });
  ASSERT_EQ(api.replica_set_interest(ctx, dot, nullptr, nullptr, nullptr), MOLT_OK);
  EXPECT_EQ(released, 1);
  Run([&] { EXPECT_EQ(kind(bob.NextOf(w::Body::Replica)), "Snapshot"); });
  EXPECT_EQ(api.replica_refresh_interest(ctx, dot, 0), MOLT_OK);

  // Handles of the wrong kind, and what is gone.
  EXPECT_EQ(api.zone_enter(ctx, world, ada_id), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api.grid_destroy(ctx, world), MOLT_OK);
  Run([&] { EXPECT_EQ(kind(bob.NextOf(w::Body::Replica)), "Remove"); });
  EXPECT_EQ(api.grid_place(ctx, world, bob_id, 0, 0), MOLT_ERR_STALE);
  EXPECT_EQ(api.zone_destroy(ctx, hall), MOLT_OK);
  EXPECT_EQ(net_->zones().count(), 0u);
  EXPECT_EQ(net_->grids().stats().grids, 0u);

  // The arguments the contract allows, and those it does not, each named.
  molt_zone_t z = 0;
  EXPECT_EQ(api.zone_declare(ctx, nullptr, &z), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "name is NULL");
  EXPECT_EQ(api.zone_declare(ctx, "yard", nullptr), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "out_zone is NULL");
  EXPECT_EQ(api.zone_declare(ctx, "", &z), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "a zone needs a name of 1 to 128 characters");
  EXPECT_EQ(api.grid_declare(ctx, nullptr, &world), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "spec is NULL");
  gs.name = nullptr;
  EXPECT_EQ(api.grid_declare(ctx, &gs, &world), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "spec->name is NULL");
  gs.name = "world";
  gs.radius = 0;
  EXPECT_EQ(api.grid_declare(ctx, &gs, &world), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("grid \"world\": "), std::string::npos) << error();
  // A NULL predicate clears it; its user_data may be NULL; a release given with it runs once,
  // also when the call is refused (a replica already destroyed).
  released = 0;
  EXPECT_EQ(api.replica_set_interest(ctx, dot, nullptr, nullptr, [](void*) { ++released; }),
            MOLT_OK);
  EXPECT_EQ(released, 1);
  ASSERT_EQ(api.replica_destroy(ctx, dot), MOLT_OK);
  EXPECT_EQ(api.replica_set_interest(
                ctx, dot, [](void*, molt_session_t) -> std::int32_t { return 1; }, nullptr,
                [](void*) { ++released; }),
            MOLT_ERR_STALE);
  EXPECT_EQ(released, 2);
}

}  // namespace
}  // namespace molt::kernel::net
