// SPDX-License-Identifier: Apache-2.0
// The client kernel: controllers loaded by libmolt_client from files (tests/fixtures/plugins/
// controller.cc) or linked into the app, against an in-process Network. The controllers report
// what they observe as fx.Say intents, which the server side of the test records.
#include <gtest/gtest.h>
#include <molt/client.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <molt/molt.hpp>
#include <string>
#include <vector>

#include "client_fixture.h"
#include "kernel/src/net/replica.h"

namespace molt::kernel::net {
namespace {

class ControllerTest : public ClientTest {
 protected:
  void SetUp() override {
    threads_at_start_ = Threads();
    ClientTest::SetUp();
    DeclareSay("fx.Say", true, 1000, [this](Session&, std::span<Value> args) {
      heard_.push_back(flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
    });
    said_ = DeclareEvent("fx.Said");
    ChannelSpec move;  // a predicted intent the probe fires once connected (ABI 1.10)
    move.name = "fx.Move";
    move.kind = ChannelKind::kPredicted;
    move.schema = "molt.test.Say";
    move.verify = VerifySay;
    move.open = true;
    move.on_intent = [](Session&, std::span<Value>) {};
    ASSERT_TRUE(net_->channels().Declare(std::move(move)).ok());
    DeclareAddRequest("fx.Double", [this](Session&, std::span<Value> args, RequestToken reply) {
      const std::string s =
          std::to_string(flatbuffers::GetRoot<molt::test::Add>(args[0].as.ptr)->amount() * 2);
      (void)net_->Reply(reply, Status::Code::kOk,
                        std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
    });
    Listen();
  }
  bool Heard(const std::string& text) {
    return Pump([&] { return std::find(heard_.begin(), heard_.end(), text) != heard_.end(); });
  }
  static std::string Dir() { return std::string(MOLT_FIXTURE_DIR) + "/ctl"; }
  // The threads of this process (/proc/self/task).
  static std::size_t Threads() {
    const auto tasks = std::filesystem::directory_iterator("/proc/self/task");
    return static_cast<std::size_t>(std::distance(begin(tasks), end(tasks)));
  }

  std::size_t threads_at_start_ = 0;
  ChannelId said_ = 0;
  std::vector<std::string> heard_;
};

TEST_F(ControllerTest, ControllersAreSwappedAsANewGenerationWithoutTouchingTheConnection) {
  EXPECT_EQ(molt_client_reload_controllers(client_, Dir().c_str()), MOLT_ERR_STATE);
  EXPECT_NE(Error().find("no controllers run: load and start them first"), std::string::npos)
      << Error();
  ASSERT_EQ(molt_client_load_controllers(client_, Dir().c_str()), MOLT_OK) << Error();
  ASSERT_EQ(molt_client_start(client_), MOLT_OK) << Error();
  ASSERT_TRUE(Connect());
  ASSERT_TRUE(Heard("started: ctl_base ctl_probe")) << ::testing::PrintToString(heard_);
  heard_.clear();
  ASSERT_EQ(molt_client_reload_controllers(client_, Dir().c_str()), MOLT_OK) << Error();
  // The old probe's stop could still send over the connection; the new one hears the server.
  ASSERT_TRUE(Heard("bye")) << ::testing::PrintToString(heard_);
  ASSERT_TRUE(net_->Broadcast(said_, SayPayload("ping")).ok());
  ASSERT_TRUE(Heard("heard ping")) << ::testing::PrintToString(heard_);
  EXPECT_EQ(std::count(heard_.begin(), heard_.end(), "heard ping"), 1);  // the old ones are gone
  EXPECT_EQ(net_->sessions().stats().started, 1u);
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED);
  // A build that does not load leaves the running controllers running, and says where it failed.
  EXPECT_EQ(molt_client_reload_controllers(client_, "/nowhere"), MOLT_ERR_STATE);
  EXPECT_NE(Error().find("reloading controllers from \"/nowhere\" failed at mount: plugin "
                         "directory \"/nowhere\" does not exist"),
            std::string::npos)
      << Error();
  EXPECT_NE(Error().find("(the running controllers keep running)"), std::string::npos);
  heard_.clear();
  ASSERT_TRUE(net_->Broadcast(said_, SayPayload("again")).ok());
  ASSERT_TRUE(Heard("heard again")) << ::testing::PrintToString(heard_);
}

TEST_F(ControllerTest, ControllersBootInTwoPhasesAndSeeEventsRepliesAndReplicas) {
  ASSERT_EQ(molt_client_load_controllers(client_, Dir().c_str()), MOLT_OK) << Error();
  ASSERT_EQ(molt_client_start(client_), MOLT_OK) << Error();
  ASSERT_TRUE(Connect());
  // ctl_probe subscribed to Ctl.Started in its init and saw ctl_base start: every init ran
  // first, and ctl_base (its dependency) started first.
  ASSERT_TRUE(Heard("started: ctl_base ctl_probe")) << ::testing::PrintToString(heard_);
  // A request from a controller's process, waited on: the server doubled 21.
  ASSERT_TRUE(Heard("double=42")) << ::testing::PrintToString(heard_);
  ASSERT_TRUE(Heard("released")) << ::testing::PrintToString(heard_);  // completion_release
  // A predicted intent: pending until acked, then its resolution on the controllers' Bus.
  ASSERT_TRUE(Heard("pending 1 step")) << ::testing::PrintToString(heard_);
  ASSERT_TRUE(Heard("resolved 1 accepted")) << ::testing::PrintToString(heard_);
  // Server events reach the controllers' Bus.
  ASSERT_TRUE(net_->Broadcast(said_, SayPayload("ping")).ok());
  ASSERT_TRUE(Heard("heard ping")) << ::testing::PrintToString(heard_);
  // And replicas, read through client_replica_get.
  ReplicaSpec spec;
  spec.name = "score";
  spec.fields = {{"red", ReplicaFieldType::kInt}};
  spec.tick_rate = 100;
  Result<ReplicaId> score = net_->replicas().Create(std::move(spec), nullptr);
  ASSERT_TRUE(score.ok());
  ASSERT_TRUE(Heard("red=0")) << ::testing::PrintToString(heard_);
  ASSERT_TRUE(net_->replicas().SetInt(*score, 0, 7).ok());
  ASSERT_TRUE(Heard("red=7")) << ::testing::PrintToString(heard_);

  // Destroying the client stops the controllers first, while they can still send; what they
  // sent goes out before the Bye, so the server ends the session as closed by the client.
  std::vector<std::string> ends;
  Connection end = kernel_->bus().Subscribe(
      "Kernel.SessionEnd", [&](std::string_view, Args a) { ends.emplace_back(a[1].AsString()); });
  molt_client_destroy(client_);
  client_ = nullptr;
  ASSERT_TRUE(RunUntil([&] { return !ends.empty(); }));
  EXPECT_EQ(heard_.back(), "bye");
  EXPECT_EQ(ends, std::vector<std::string>{"ClientClosed"});
  end.Disconnect();
}

// A controller compiled into the app and registered with its entry function.
std::vector<std::string>* g_app_log = nullptr;

class AppHud : public molt::Service {
 public:
  static constexpr const char* kName = "app_hud";
  static constexpr const char* kVersion = "2.0.0";
  static constexpr std::int32_t kKind = MOLT_PLUGIN_KIND_CONTROLLER;

  molt::Status Init() override {
    // The client host offers the core and the client slots, never the server's.
    g_app_log->push_back(host().DeclareEvent("hud.Shown", "x").status().message());
    g_app_log->push_back(host().Intent("nope", "").message());
    g_app_log->push_back(host().Predict("nope", "").status().message());
    MOLT_ASSIGN_OR_RETURN(tick_, host().Every(0.001, [] { g_app_log->push_back("tick"); }));
    return molt::Status::Ok();
  }
  molt::Status Stop() override {
    g_app_log->push_back("stop");
    return molt::Status::Ok();
  }

 private:
  molt::Task tick_;
};

TEST_F(ControllerTest, AControllerLinkedIntoTheAppRunsInsideStepAndStopsWithTheClient) {
  std::vector<std::string> log;
  g_app_log = &log;
  ASSERT_EQ(molt_client_add_controller(client_, &molt::EntryOf<AppHud>), MOLT_OK) << Error();
  EXPECT_EQ(molt_client_add_controller(client_, &molt::EntryOf<AppHud>), MOLT_ERR_ALREADY_EXISTS);
  EXPECT_EQ(Error(),
            "plugin file \"(linked into the app)\": name \"app_hud\" is already used by "
            "\"(linked into the app)\": plugin names must be unique");
  ASSERT_EQ(molt_client_start(client_), MOLT_OK) << Error();
  EXPECT_EQ(log, (std::vector<std::string>{
                     "this host has no network (channels and sessions are server-side)",
                     "not connected: channels come with the server's welcome",
                     "not connected: channels come with the server's welcome"}));
  // Its task runs only inside molt_client_step: the client kernel started no thread.
  const std::size_t before = log.size();
  EXPECT_EQ(Threads(), threads_at_start_);
  EXPECT_EQ(log.size(), before);
  ASSERT_TRUE(Pump([&] { return log.size() > before; }));  // steps run it once it is due
  EXPECT_EQ(log.back(), "tick");
  // Loading after the start is refused.
  EXPECT_EQ(molt_client_load_controllers(client_, Dir().c_str()), MOLT_ERR_STATE);
  EXPECT_EQ(Error(), "the controllers already started: load them all before molt_client_start");
  molt_client_destroy(client_);
  client_ = nullptr;
  EXPECT_EQ(log.back(), "stop");
  g_app_log = nullptr;
}

// A controller linked into the app that asks the client to reload its controllers from inside
// its own callback (a task): a swap there would stop the very code that is running.
molt_client* g_reloading_client = nullptr;
std::vector<std::string>* g_reload_log = nullptr;

class ReloadingHud : public molt::Service {
 public:
  static constexpr const char* kName = "reloading_hud";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr std::int32_t kKind = MOLT_PLUGIN_KIND_CONTROLLER;

  molt::Status Init() override {
    MOLT_ASSIGN_OR_RETURN(tick_, host().After(0, [] {
      const molt_status_t s = molt_client_reload_controllers(
          g_reloading_client, (std::string(MOLT_FIXTURE_DIR) + "/ctl").c_str());
      g_reload_log->push_back(std::to_string(s) + " " + molt_client_last_error(g_reloading_client));
    }));
    return molt::Status::Ok();
  }

 private:
  molt::Task tick_;
};

TEST_F(ControllerTest, AReloadFromInsideAControllersCallbackIsRefused) {
  std::vector<std::string> log;
  g_reload_log = &log;
  g_reloading_client = client_;
  ASSERT_EQ(molt_client_add_controller(client_, &molt::EntryOf<ReloadingHud>), MOLT_OK) << Error();
  ASSERT_EQ(molt_client_start(client_), MOLT_OK) << Error();
  ASSERT_TRUE(Pump([&] { return !log.empty(); }));
  EXPECT_EQ(log[0], std::to_string(MOLT_ERR_STATE) + " reloading controllers from \"" + Dir() +
                        "\" failed at gate: a reload from inside plugin "
                        "\"reloading_hud@static#1\"'s callback is refused (the swap would stop "
                        "the code that is running): a controller asks with reload_request, which "
                        "swaps on a later step (the running controllers keep running)");
  // Outside every callback, the same call swaps.
  EXPECT_EQ(molt_client_reload_controllers(client_, Dir().c_str()), MOLT_OK) << Error();
  g_reload_log = nullptr;
  g_reloading_client = nullptr;
}

TEST_F(ControllerTest, ServicesAreRefusedAndOneClientPerProcessRunsControllers) {
  EXPECT_EQ(molt_client_start(client_), MOLT_ERR_STATE);
  EXPECT_EQ(Error(),
            "no controller to start: molt_client_load_controllers or molt_client_add_controller "
            "first");
  const std::string service = std::string(MOLT_FIXTURE_DIR) + "/net/fx_net.so";
  EXPECT_EQ(molt_client_load_controllers(client_, service.c_str()), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Error().find("is a service, but this host loads controllers only: move it to the "
                         "other side's plugin directory"),
            std::string::npos)
      << Error();
  EXPECT_EQ(molt_client_load_controllers(client_, "/nonexistent/hud.so"),
            MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Error().find("/nonexistent/hud.so"), std::string::npos) << Error();

  molt_client* second = nullptr;
  ASSERT_EQ(molt_client_create(nullptr, &second), MOLT_OK);
  EXPECT_EQ(molt_client_load_controllers(second, Dir().c_str()), MOLT_ERR_STATE);
  EXPECT_STREQ(molt_client_last_error(second),
               "another client of this process runs the controllers: one client kernel per "
               "process");
  molt_client_destroy(second);
}

}  // namespace
}  // namespace molt::kernel::net
