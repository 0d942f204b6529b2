// SPDX-License-Identifier: Apache-2.0
// Binary compatibility, proved (DESIGN.md §4 rule 7): plugins built against every released
// molt.h / molt.hpp (tests/sdk/compat/abi-*), client apps built against every released client.h
// (client-*), and clients of every released wire protocol (wire-*) against today's host and
// server. The frozen headers are never edited; each later ABI, client-API or wire change adds
// its frozen copy and its cases here in the same commit.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "kernel/src/abi/struct_size.h"
#include "kernel/src/client/connection.h"
#include "kernel/src/fleet/kv_api.h"
#include "kernel/src/fleet/kv_store.h"
#include "kernel/src/fleet/messages.h"
#include "kernel/src/fleet/messages_api.h"
#include "kernel/src/live/live_api.h"
#include "kernel/src/live/live_values.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/net_api.h"
#include "kernel/src/store/profile_api.h"
#include "kernel/src/store/profile_registry.h"
#include "kernel/src/store/sqlite_store.h"
#include "kernel/src/workers/workers_api.h"
#include "net_fixture.h"
#include "tests/support/child_process.h"

namespace molt::kernel::net {
namespace {

using molt::test::Frame;
using molt::test::Process;
using molt::test::TestClient;
namespace w = ::molt::wire;
namespace fs = std::filesystem;

const std::string kCompat = std::string(MOLT_FIXTURE_DIR) + "/compat";

// --- Plugins of every ABI release in today's host --------------------------------------------

struct PluginCase {
  const char* abi;  // "abi-1.0": the frozen headers it was built against
  int minor;
  const char* lang;  // "c" (clang, molt.h only), "cpp" (g++, molt.hpp) or "cpp_rev1" (the same
                     // source in its molt.hpp revision 1 spellings: COMPAT_REVISION_1)
};

void PrintTo(const PluginCase& c, std::ostream* os) { *os << c.abi << " " << c.lang; }

std::string CaseName(const ::testing::TestParamInfo<PluginCase>& info) {
  std::string abi = info.param.abi;
  std::replace_if(
      abi.begin(), abi.end(), [](char c) { return c == '-' || c == '.'; }, '_');
  return abi + "_" + info.param.lang;
}

class CompatPluginTest : public NetTest, public ::testing::WithParamInterface<PluginCase> {
 protected:
  void SetUp() override {
    NetTest::SetUp();
    copies_ = ::testing::TempDir() + "molt_compat_" + std::to_string(::getpid());
    fs::remove_all(copies_);
    log_ = kernel_->bus().Subscribe("Compat.Log", [this](std::string_view, Args a) {
      notes_.emplace_back(a[0].AsString());
      profile_noted_ = profile_noted_ || notes_.back().starts_with("profile ");
    });
    fs::create_directories(copies_);
    auto store = store::SqliteStore::Open(
        copies_ + "/profiles.db",
        [this](std::function<void()> fn) { kernel_->loop().Post(std::move(fn)); });
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    profiles_ = std::make_unique<store::ProfileRegistry>(*kernel_, *net_, *store_, "compat-host");
    plugins_ = std::make_unique<loader::PluginHost>(*kernel_, copies_ + "/copies");
    abi::AttachNetwork(plugins_->shared(), net_.get());
    abi::AttachProfiles(plugins_->shared(), *profiles_);
    workers::AttachWorkers(plugins_->shared(), {});
    live_ = std::make_unique<live::LiveValues>(
        live::LiveOptions{copies_ + "/live.db"},
        [this](std::function<void()> fn) { kernel_->loop().Post(std::move(fn)); }, nullptr,
        [] { return WallMs(); });
    ASSERT_TRUE(live_->Open().ok());
    live::AttachLive(plugins_->shared(), *live_);
    messages_ = std::make_unique<fleet::Messages>(
        fleet::MessagesOptions{"", "compat-host", "prod"},
        [this](std::function<void()> fn) { kernel_->loop().Post(std::move(fn)); },
        [] { return std::size_t{0}; }, [] { return WallMs(); });
    ASSERT_TRUE(messages_->Open().ok());
    fleet::AttachMessages(plugins_->shared(), *messages_);
    kv_ = std::make_unique<fleet::KvStore>(
        "", [this](std::function<void()> fn) { kernel_->loop().Post(std::move(fn)); },
        [] { return WallMs(); });
    ASSERT_TRUE(kv_->Open().ok());
    fleet::AttachKv(plugins_->shared(), *kv_);
    const std::string dir = kCompat + "/" + GetParam().abi + "/" + GetParam().lang;
    Status s = plugins_->LoadDirectory(dir);
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = kernel_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
    Listen();
  }
  void TearDown() override {
    if (kernel_) {
      (void)kernel_->Shutdown();
    }
    plugins_.reset();
    kv_.reset();
    messages_.reset();
    live_.reset();
    profiles_.reset();
    store_.reset();
    NetTest::TearDown();
    fs::remove_all(copies_);
  }
  bool Noted(const std::string& note) {
    return RunUntil([&] { return std::count(notes_.begin(), notes_.end(), note) > 0; });
  }
  std::string Payload(const Frame& f) {
    const flatbuffers::Vector<std::uint8_t>* p = f.type() == w::Body::Event
                                                     ? f.envelope()->body_as_Event()->payload()
                                                     : f.envelope()->body_as_Response()->payload();
    return p == nullptr ? "" : std::string(p->begin(), p->end());
  }
  static std::vector<std::uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

  std::string copies_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<store::ProfileRegistry> profiles_;
  std::unique_ptr<live::LiveValues> live_;
  std::unique_ptr<fleet::Messages> messages_;
  std::unique_ptr<fleet::KvStore> kv_;
  std::unique_ptr<loader::PluginHost> plugins_;
  std::vector<std::string> notes_;
  std::atomic<bool> profile_noted_{false};
  Connection log_;
};

TEST_P(CompatPluginTest, LoadsAndRunsThroughTheSlotsOfItsRelease) {
  const PluginCase& c = GetParam();
  ASSERT_EQ(plugins_->plugins().size(), 1u);
  EXPECT_EQ(MOLT_ABI_MINOR_OF(plugins_->plugins()[0].instance->info().abi_version),
            static_cast<std::uint32_t>(c.minor));
  EXPECT_TRUE(Noted("role Server")) << testing::PrintToString(notes_);
  EXPECT_TRUE(Noted("started"));
  // A task completes a completion a sleeping process then waits on.
  EXPECT_TRUE(Noted("process waited: ready")) << testing::PrintToString(notes_);
  // Bus in, a hook chain it defined, Bus out.
  const Value pass[] = {Value::Int(5)};
  kernel_->bus().Publish("Compat.Ping", pass);
  EXPECT_TRUE(Noted("pong passed"));
  const Value refuse[] = {Value::Int(-1)};
  kernel_->bus().Publish("Compat.Ping", refuse);
  EXPECT_TRUE(Noted("pong refused"));
  if (c.minor >= 11) {  // a deadband, a zone, a grid and a predicate declared through the slots
    EXPECT_TRUE(Noted("interest declared")) << testing::PrintToString(notes_);
  }

  if (c.minor >= 1) {  // channels and sessions
    const ChannelId echo = net_->channels().Find("compat.Echo")->id();
    const ChannelId twice = net_->channels().Find("compat.Twice")->id();
    Run([&] {
      TestClient ada(port_);
      ASSERT_EQ(ada.Hello("ada").type(), w::Body::Welcome);
      if (c.minor >= 2) {  // replicas
        Frame board = ada.NextOf(w::Body::Replica);
        ASSERT_EQ(board.type(), w::Body::Replica);
        const w::Replica* r = board.envelope()->body_as_Replica();
        EXPECT_EQ(r->name()->str(), "compat.board");
        if (r->kind() == w::ReplicaUpdateKind::Snapshot && r->values()->size() == 1 &&
            r->values()->Get(0)->int_value() == 0) {
          board = ada.NextOf(w::Body::Replica);  // the snapshot came before the join's write
        }
        ASSERT_EQ(board.type(), w::Body::Replica);
        EXPECT_EQ(board.envelope()->body_as_Replica()->values()->Get(0)->int_value(), 1);
      }
      ada.Intent(echo, Bytes("hello"));
      EXPECT_EQ(Payload(ada.NextOf(w::Body::Event)), "hello");
      if (c.minor >= 10) {  // a predicted intent acked, an unreliable message echoed with its seq
        const ChannelId move = net_->channels().Find("compat.Move")->id();
        const ChannelId pos = net_->channels().Find("compat.Pos")->id();
        flatbuffers::FlatBufferBuilder b;
        ada.SendRaw(TestClient::Finish(
            b, w::Body::Intent,
            w::CreateIntent(b, move, TestClient::Payload(b, Bytes("step")), 41).Union()));
        EXPECT_EQ(Payload(ada.NextOf(w::Body::Event)), "step");
        Frame acks = ada.NextOf(w::Body::Acks);
        ASSERT_EQ(acks.type(), w::Body::Acks);
        ASSERT_EQ(acks.envelope()->body_as_Acks()->accepted()->size(), 1u);
        EXPECT_EQ(acks.envelope()->body_as_Acks()->accepted()->Get(0), 41u);
        flatbuffers::FlatBufferBuilder u;
        ada.SendRaw(TestClient::Finish(
            u, w::Body::Intent,
            w::CreateIntent(u, pos, TestClient::Payload(u, Bytes("xy")), 1).Union()));
        Frame back = ada.NextOf(w::Body::Event);
        EXPECT_EQ(Payload(back), "xy");
        EXPECT_EQ(back.envelope()->body_as_Event()->channel(), pos);
        EXPECT_EQ(back.envelope()->body_as_Event()->seq(), 1u);
      }
      ada.Request(twice, 7, Bytes("ab"));
      Frame answer = ada.NextOf(w::Body::Response);
      ASSERT_EQ(answer.type(), w::Body::Response);
      EXPECT_EQ(answer.envelope()->body_as_Response()->status(), MOLT_OK);
      EXPECT_EQ(Payload(answer), "abab");
      if (c.minor >= 4) {  // stay until the profile loaded (it loads off the kernel thread)
        for (int i = 0; i < 5000 && !profile_noted_; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
    });
    EXPECT_TRUE(Noted("session ada"));
    if (c.minor >= 12) {  // session_info's link grade: a new link is Good and not measured yet
      EXPECT_TRUE(Noted("session link good, not measured")) << testing::PrintToString(notes_);
    }
    EXPECT_TRUE(Noted("left ada"));                    // its last binding ran when the client left
    if (c.minor >= 3 && std::string(c.lang) == "c") {  // bindings that hear the end
      EXPECT_TRUE(Noted("ended ada reason 0")) << testing::PrintToString(notes_);
      EXPECT_TRUE(Noted("claim refused outside a swap"));
    }
    if (c.minor >= 5) {  // phases: a task in pre_tick (C) or post_tick (C++) ran
      EXPECT_TRUE(Noted(std::string(c.lang) == "c" ? "pre_tick ran" : "post_tick ran"))
          << testing::PrintToString(notes_);
    }
    if (c.minor >= 6) {  // workers: a job submitted at init, its result heard on the kernel thread
      EXPECT_TRUE(RunUntil([&] { return Noted("job done: krow"); }))
          << testing::PrintToString(notes_);
    }
    if (c.minor >= 7) {  // live values: one declared at init, read back at its default
      EXPECT_TRUE(Noted("live level 3")) << testing::PrintToString(notes_);
    }
    if (c.minor >= 9) {  // messages: one published at init, heard back (a server alone)
      EXPECT_TRUE(Noted(std::string("message ") + (std::string(c.lang) == "c" ? "c" : "cpp") +
                        " hello (self)"))
          << testing::PrintToString(notes_);
      EXPECT_TRUE(Noted("kv visits 1")) << testing::PrintToString(notes_);  // and the kv store
    }
    if (c.minor >= 4) {  // a profile store: loaded on join, written, saved when the session ended
      EXPECT_TRUE(Noted("profile visits 1")) << testing::PrintToString(notes_);
      ASSERT_TRUE(RunUntil([&] { return profiles_->Find("compat")->stats().saves == 1; }));
    }
  } else {
    EXPECT_EQ(net_->channels().size(), 0u);
  }
  // Its own tests (ABI 1.8 self_test): the spec gate hears each, with a failure's reason; a
  // plugin of an earlier release has none (its descriptor is shorter: the field reads as NULL).
  const std::vector<loader::PluginHost::SelfTestRun> runs = plugins_->RunSelfTests();
  if (c.minor >= 8) {
    ASSERT_EQ(runs.size(), 1u);
    ASSERT_EQ(runs[0].tests.size(), 2u);
    EXPECT_EQ(runs[0].tests[0].name, "compat passes");
    EXPECT_TRUE(runs[0].tests[0].status.ok());
    EXPECT_EQ(runs[0].tests[1].name, "compat fails");
    EXPECT_EQ(runs[0].tests[1].status.code(), Status::Code::kRejected);
    EXPECT_EQ(runs[0].tests[1].status.message(), "as it should");
  } else {
    EXPECT_TRUE(runs.empty());
  }
  EXPECT_EQ(plugins_->UnloadAll(), 0u);  // stopped, released, and the library left the process
  EXPECT_TRUE(Noted("stopped"));
  for (const std::string& note : notes_) {
    EXPECT_EQ(note.rfind("init failed", 0), std::string::npos) << note;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryRelease, CompatPluginTest,
    ::testing::Values(PluginCase{"abi-1.0", 0, "c"}, PluginCase{"abi-1.0", 0, "cpp"},
                      PluginCase{"abi-1.1", 1, "c"}, PluginCase{"abi-1.1", 1, "cpp"},
                      PluginCase{"abi-1.2", 2, "c"}, PluginCase{"abi-1.2", 2, "cpp"},
                      PluginCase{"abi-1.2-r2", 2, "c"}, PluginCase{"abi-1.2-r2", 2, "cpp"},
                      PluginCase{"abi-1.3", 3, "c"}, PluginCase{"abi-1.3", 3, "cpp"},
                      PluginCase{"abi-1.4", 4, "c"}, PluginCase{"abi-1.4", 4, "cpp"},
                      PluginCase{"abi-1.4-r2", 4, "c"}, PluginCase{"abi-1.4-r2", 4, "cpp"},
                      PluginCase{"abi-1.5", 5, "c"}, PluginCase{"abi-1.5", 5, "cpp"},
                      PluginCase{"abi-1.6", 6, "c"}, PluginCase{"abi-1.6", 6, "cpp"},
                      PluginCase{"abi-1.7", 7, "c"}, PluginCase{"abi-1.7", 7, "cpp"},
                      PluginCase{"abi-1.8", 8, "c"}, PluginCase{"abi-1.8", 8, "cpp"},
                      PluginCase{"abi-1.9", 9, "c"}, PluginCase{"abi-1.9", 9, "cpp"},
                      PluginCase{"abi-1.10", 10, "c"}, PluginCase{"abi-1.10", 10, "cpp"},
                      PluginCase{"abi-1.11", 11, "c"}, PluginCase{"abi-1.11", 11, "cpp"},
                      PluginCase{"abi-1.12", 12, "c"}, PluginCase{"abi-1.12", 12, "cpp"},
                      // revision-1 source (the deprecated Host spellings) on the r2 header
                      PluginCase{"abi-1.4-r2", 4, "cpp_rev1"}),
    CaseName);

// --- Client apps of every client API release, and clients of every wire protocol -------------

class CompatServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = ::testing::TempDir() + "molt_compat_server_" + std::to_string(::getpid());
    fs::remove_all(data_);
    // Today's moltd serving the compat plugin (built against today's headers).
    server_ = std::make_unique<Process>(
        std::vector<std::string>{MOLTD_PATH, "-p", kCompat + "/abi-1.10/c", "-d", data_, "--port",
                                 "0", "--admin", "127.0.0.1:0", "--ws", "127.0.0.1:0"});
    port_ = molt::test::ServingPort(*server_, 1);
    ASSERT_FALSE(port_.empty()) << server_->output();
    const std::string banner = "WebSocket clients on ws://127.0.0.1:";
    const std::size_t at = server_->output().find(banner);
    ASSERT_NE(at, std::string::npos) << server_->output();
    ws_port_ = std::to_string(std::stoi(server_->output().substr(at + banner.size())));
  }
  void TearDown() override {
    server_->Signal(SIGTERM);
    EXPECT_EQ(server_->Wait(), 0) << server_->output();
    fs::remove_all(data_);
  }
  std::string Run(const std::string& program, bool websocket = false) {
    std::vector<std::string> argv = {kCompat + "/" + program, port_};
    if (websocket) {
      argv.push_back(ws_port_);
    }
    Process p(argv);
    EXPECT_EQ(p.Wait(), 0) << p.output();
    return p.output();
  }

  std::string data_;
  std::unique_ptr<Process> server_;
  std::string port_;
  std::string ws_port_;
};

TEST_F(CompatServerTest, ClientAppsOfEveryClientApiTalkToTodaysServer) {
  for (const char* release :
       {"client-1",       "client-2",       "client-3",       "client-4",       "client-5",
        "client-5-r2",    "client-6",       "client-7",       "client-7+ws",    "client-7-r2",
        "client-7-r2+ws", "client-7-r3",    "client-7-r3+ws", "client-7-r4",    "client-7-r4+ws",
        "client-7-r5",    "client-7-r5+ws", "client-7-r6",    "client-7-r6+ws", "client-8",
        "client-8+ws",    "client-8-r2",    "client-9",       "client-9+ws"}) {
    const int api = release[7] - '0';
    const bool websocket = std::string_view(release).ends_with("+ws");
    const std::string_view dir =
        std::string_view(release).substr(0, std::strlen(release) - (websocket ? 3 : 0));
    const std::string out = Run(std::string(dir) + "/compat_client", websocket);
    EXPECT_EQ(out.find("over WebSocket") != std::string::npos, websocket) << out;
    EXPECT_NE(out.find("client API " + std::to_string(api) + ": connected"), std::string::npos)
        << out;
    EXPECT_NE(out.find("echo: hello"), std::string::npos) << out;
    EXPECT_NE(out.find("twice: abab"), std::string::npos) << out;
    if (api >= 3) {
      EXPECT_NE(out.find("board: joins "), std::string::npos) << out;
    }
    if (api >= 8) {
      EXPECT_NE(out.find("predicted 1: accepted"), std::string::npos) << out;
    }
    if (api >= 9) {
      EXPECT_NE(out.find("device quality: said"), std::string::npos) << out;
    }
    EXPECT_NE(out.find("done"), std::string::npos) << out;
  }
}

TEST_F(CompatServerTest, AnEarlierWireProtocolIsRefusedNamingBothVersions) {
  EXPECT_EQ(Run("wire-1/compat_wire_client"),
            "Refuse ProtocolVersion: protocol version 1 is not supported: this server speaks 2\n");
  for (const char* wire : {"wire-2", "wire-2.1", "wire-2.2", "wire-2.3", "wire-2.4", "wire-2.5",
                           "wire-2.6", "wire-2.7"}) {
    const std::string welcomed = Run(std::string(wire) + "/compat_wire_client");
    EXPECT_EQ(welcomed.rfind("Welcome session=", 0), 0u) << wire << ": " << welcomed;
    // The compat plugin of ABI 1.10 declares five channels; a client of an earlier schema reads
    // the two of kinds it does not know (Unreliable, PredictedIntent) and sends nothing on them.
    EXPECT_NE(welcomed.find(" channels=5"), std::string::npos) << wire << ": " << welcomed;
  }
}

// --- The minimum sizes of abi/struct_size.h are the sizes of the releases they name -----------

TEST(CompatSizesTest, EachMinimumIsTheSizeInTheReleaseThatIntroducedTheStruct) {
  EXPECT_EQ(abi::SizedStruct<molt_plugin_info>::kMinSize, MOLT_COMPAT_SIZEOF_INFO_1_0);
  EXPECT_EQ(abi::SizedStruct<molt_process_options>::kMinSize, MOLT_COMPAT_SIZEOF_PROCESS_1_0);
  EXPECT_EQ(abi::SizedStruct<molt_channel_spec>::kMinSize, MOLT_COMPAT_SIZEOF_CHANNEL_1_1);
  EXPECT_EQ(abi::SizedStruct<molt_session_info>::kMinSize, MOLT_COMPAT_SIZEOF_SESSION_1_1);
  EXPECT_EQ(abi::SizedStruct<molt_replica_spec>::kMinSize, MOLT_COMPAT_SIZEOF_REPLICA_1_2);
  EXPECT_EQ(abi::SizedStruct<molt_profile_spec>::kMinSize, MOLT_COMPAT_SIZEOF_PROFILE_1_4);
  EXPECT_EQ(abi::SizedStruct<molt_task_spec>::kMinSize, MOLT_COMPAT_SIZEOF_TASK_1_5);
  EXPECT_EQ(abi::SizedStruct<molt_job_spec>::kMinSize, MOLT_COMPAT_SIZEOF_JOB_1_6);
  EXPECT_EQ(abi::SizedStruct<molt_job_result>::kMinSize, MOLT_COMPAT_SIZEOF_JOB_RESULT_1_6);
  EXPECT_EQ(abi::SizedStruct<molt_client_options>::kMinSize, MOLT_COMPAT_SIZEOF_CLIENT_OPTIONS_1);
}

}  // namespace
}  // namespace molt::kernel::net
