// SPDX-License-Identifier: Apache-2.0
// Generations (loader/plugin_host.h): real builds of one plugin (tests/fixtures/plugins/
// generation.cc, one build per directory) swapped under real loopback clients.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kernel/src/loader/build.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/net_api.h"
#include "net_fixture.h"
#include "tests/support/run_on_loop.h"

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;
namespace w = ::molt::wire;
using molt::test::Frame;
using molt::test::TestClient;
using net::AddPayload;

std::string Build(const std::string& name) {
  return std::string(MOLT_FIXTURE_DIR) + "/gen/" + name;
}

std::string PayloadText(const Frame& f) {
  const w::Response* r = f.envelope()->body_as_Response();
  return r->payload() != nullptr ? std::string(r->payload()->begin(), r->payload()->end()) : "";
}

class GenerationsTest : public net::NetTest {
 protected:
  // Short, so that a blocking callback costs the test little; long enough for ASan.
  static constexpr Duration kDeadline = std::chrono::milliseconds(300);

  void SetUp() override {
    NetTest::SetUp();
    copies_ = ::testing::TempDir() + "molt_gen_" + std::to_string(::getpid());
    fs::remove_all(copies_);
    Attach();
  }
  // A new kernel and network with `o` (resume tests), with this fixture's host on it.
  void Reboot(net::NetOptions o) {
    events_sub_.Disconnect();
    plugins_.reset();
    Boot(std::move(o));
    Attach();
  }
  void Attach() {
    plugins_ = std::make_unique<PluginHost>(*kernel_, copies_);
    // Every callback with a deadline, as moltd runs them (off the kernel thread, waited for).
    plugins_->set_callback_deadline(kDeadline);
    abi::AttachNetwork(plugins_->shared(), net_.get());
    events_sub_ = kernel_->bus().Subscribe("Gen.*", [this](std::string_view topic, Args a) {
      std::string line(topic);
      for (const Value& v : a) {
        line += " " + (v.type == Value::kString   ? std::string(v.AsString())
                       : v.type == Value::kHandle ? std::to_string(v.AsHandle())
                                                  : std::to_string(v.AsInt()));
      }
      events_.push_back(line);
    });
  }
  void TearDown() override {
    if (kernel_) {
      (void)kernel_->Shutdown();
    }
    plugins_.reset();
    NetTest::TearDown();
    fs::remove_all(copies_);
  }
  // Boots `build` as the first generation and listens.
  void BootWith(const std::string& build) {
    Status s = plugins_->LoadDirectory(Build(build));
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = kernel_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
    Listen();
    Steps(2);
  }
  void Steps(int n) {
    for (int i = 0; i < n; ++i) {
      kernel_->scheduler().Step();
    }
  }
  // Runs `fn` on the kernel thread (from a client body) and waits for it.
  void OnKernel(const std::function<void()>& fn) { molt::test::RunOnLoop(kernel_->loop(), fn); }
  bool Saw(const std::string& line) const {
    return std::find(events_.begin(), events_.end(), line) != events_.end();
  }
  std::size_t Count(const std::string& prefix) const {
    return std::count_if(events_.begin(), events_.end(),
                         [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  }
  net::ChannelId Id(const char* name) { return net_->channels().Find(name)->id(); }
  std::set<std::string> FailedIds() const {
    std::set<std::string> ids;
    for (const auto& [id, why] : plugins_->failed_builds()) {
      ids.insert(id);
    }
    return ids;
  }
  // The rollbacks' reports from here on (a reload's own report comes in a later task: left out).
  void HearRollbacks(std::vector<SwapReport>* heard) {
    plugins_->set_swap_listener([heard](const SwapReport& x) {
      if (x.rollback) {
        heard->push_back(x);
      }
    });
  }
  // A client whose one gen.Add fails in a v2_faulty build: one error for the health window.
  void SendOneFaultyAdd() {
    Run([&] {
      TestClient c(port_);
      ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
      c.Intent(Id("gen.Add"), AddPayload(1));
      c.Request(Id("gen.Total"), 1, AddPayload(0));
      ASSERT_EQ(c.NextOf(w::Body::Response).type(), w::Body::Response);
    });
  }

  std::string copies_;
  std::unique_ptr<PluginHost> plugins_;
  std::vector<std::string> events_;
  Connection events_sub_;
};

TEST_F(GenerationsTest, ASwapKeepsClientsChannelsStateAndRateLimits) {
  BootWith("v1");
  const std::string first = plugins_->generation();
  EXPECT_EQ(first.substr(first.size() - 2), "#1");
  const net::ChannelId add = Id("gen.Add");
  const net::ChannelId total = Id("gen.Total");
  const std::uint32_t epoch = net_->channels().Find(add)->epoch();
  SwapReport report;
  double reload_ms = 0;  // the whole Reload() call, as its caller sees it
  Run([&] {
    TestClient c(port_);
    const Frame welcome = c.Hello("ada");
    ASSERT_EQ(welcome.type(), w::Body::Welcome);
    for (int i = 0; i < 3; ++i) {
      c.Intent(add, AddPayload(2));
    }
    c.Request(total, 1, AddPayload(0));
    EXPECT_EQ(PayloadText(c.NextOf(w::Body::Response)), "v1:6");
    OnKernel([&] {
      const TimePoint t0 = RealNow();
      report = plugins_->Reload(Build("v2"), "test");
      reload_ms = std::chrono::duration<double, std::milli>(RealNow() - t0).count();
    });
    // The same connection, the same ids: the new generation answers with the state it imported.
    c.Request(total, 2, AddPayload(0));
    Frame f = c.NextOf(w::Body::Response);
    ASSERT_EQ(f.type(), w::Body::Response) << "the client lost its connection";
    EXPECT_EQ(f.envelope()->body_as_Response()->status(), MOLT_OK);
    EXPECT_EQ(PayloadText(f), "v2:6");
    c.Intent(add, AddPayload(1));
    c.Request(total, 3, AddPayload(0));
    EXPECT_EQ(PayloadText(c.NextOf(w::Body::Response)), "v2:7");
  });
  EXPECT_TRUE(report.ok) << report.error;
  EXPECT_EQ(report.stage, "done");
  EXPECT_EQ(report.previous, first);
  EXPECT_EQ(report.serving, plugins_->generation());
  EXPECT_NE(report.generation, first);
  EXPECT_EQ(report.generation.substr(report.generation.size() - 2), "#2");
  EXPECT_TRUE(report.retired.empty());
  // What v1 exported ("<total> <replica handle>", state version 1) is what v2 was handed.
  ASSERT_EQ(report.handed.size(), 1u);
  EXPECT_EQ(report.handed[0].plugin, "fx_gen");
  EXPECT_EQ(report.handed[0].state_version, 1u);
  EXPECT_GE(report.handed[0].bytes, 3u);
  EXPECT_NE(report.Json().find(R"("handed":[{"plugin":"fx_gen","state_version":1,"bytes":)"),
            std::string::npos)
      << report.Json();
  // A direct Reload() holds the kernel thread for its mount (load, init) and the swap (export
  // through replay), and the hold is all of it, within the one Reload() call. Durations measured
  // against each other, not against a threshold.
  EXPECT_GE(report.hold_ms, report.load_ms + report.init_ms + report.swap_ms);
  EXPECT_LT(report.stop_ms, report.swap_ms);
  EXPECT_LE(report.hold_ms, reload_ms);
  // Channels kept their ids, their epoch (so every session's token bucket) and their counters.
  EXPECT_EQ(Id("gen.Add"), add);
  EXPECT_EQ(Id("gen.Total"), total);
  EXPECT_EQ(net_->channels().Find(add)->epoch(), epoch);
  EXPECT_EQ(net_->channels().Find(add)->counters().accepted, 4u);
  EXPECT_EQ(net_->stats().transport_rejected[static_cast<int>(net::Reject::kUnknownChannel)], 0u);
  // Export, soft stop, import, start, in that order; the old generation heard nothing after.
  const std::vector<std::string> order = {"Gen.Stopped v1", "Gen.Imported v2 6", "Gen.Started v2"};
  std::vector<std::size_t> at;
  for (const std::string& e : order) {
    at.push_back(std::find(events_.begin(), events_.end(), e) - events_.begin());
    ASSERT_LT(at.back(), events_.size()) << e;
  }
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end()));
  events_.clear();
  kernel_->bus().Publish("Gen.Ping");
  EXPECT_EQ(events_, std::vector<std::string>({"Gen.Ping", "Gen.Pong v2"}));
  // The report is one JSON object.
  EXPECT_NE(report.Json().find("\"swap\":\"ok\""), std::string::npos) << report.Json();
  EXPECT_NE(report.Json().find("\"hold_ms\":"), std::string::npos);
}

// Replica frames until the first that is not a snapshot of value 0 (the join's own snapshot).
const w::Replica* NextReplica(TestClient& c, Frame& holder) {
  holder = c.NextOf(w::Body::Replica);
  return holder.type() == w::Body::Replica ? holder.envelope()->body_as_Replica() : nullptr;
}

// A swap that adds or retires channels tells the connected clients the whole new table, with
// the ids of the channels that stayed unchanged; a swap that changes nothing sends nothing.
TEST_F(GenerationsTest, ASwapThatChangesTheChannelTableTellsConnectedClients) {
  BootWith("v1");
  const net::ChannelId add = Id("gen.Add");
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    OnKernel([&] { ASSERT_TRUE(plugins_->Reload(Build("v2_more"), "test").ok); });
    Frame f = c.NextOf(w::Body::Channels);
    ASSERT_EQ(f.type(), w::Body::Channels);
    std::map<std::string, std::uint16_t> table;
    for (const w::ChannelInfo* info : *f.envelope()->body_as_Channels()->channels()) {
      table[info->name()->str()] = info->id();
    }
    EXPECT_EQ(table.size(), 4u);
    EXPECT_EQ(table["gen.Add"], add);
    EXPECT_TRUE(table.count("gen.News"));
    OnKernel([&] { ASSERT_TRUE(plugins_->Reload(Build("v1"), "test").ok); });
    f = c.NextOf(w::Body::Channels);
    ASSERT_EQ(f.type(), w::Body::Channels);
    EXPECT_EQ(f.envelope()->body_as_Channels()->channels()->size(), 3u);
    // The same table again: no frame. The next frame the client sees answers its request.
    OnKernel([&] { ASSERT_TRUE(plugins_->Reload(Build("v2"), "test").ok); });
    c.Request(Id("gen.Total"), 1, AddPayload(0));
    f = c.Next();
    ASSERT_EQ(f.type(), w::Body::Response);
  });
}

TEST_F(GenerationsTest, AClaimedReplicaKeepsItsIdAndClientsSeeNoRemove) {
  BootWith("v1");
  SwapReport report;
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    Frame f;
    const w::Replica* snapshot = NextReplica(c, f);
    ASSERT_NE(snapshot, nullptr);
    ASSERT_EQ(snapshot->kind(), w::ReplicaUpdateKind::Snapshot);
    EXPECT_EQ(snapshot->name()->str(), "gen.board");
    const std::uint32_t id = snapshot->id();
    OnKernel([&] { report = plugins_->Reload(Build("v2"), "test"); });
    c.Intent(Id("gen.Add"), AddPayload(3));
    // The next replica frame is a delta of the same replica: no remove, no new snapshot.
    const w::Replica* next = NextReplica(c, f);
    ASSERT_NE(next, nullptr);
    EXPECT_EQ(next->id(), id);
    EXPECT_EQ(next->kind(), w::ReplicaUpdateKind::Delta);
    ASSERT_EQ(next->values()->size(), 1u);
    EXPECT_EQ(next->values()->Get(0)->int_value(), 3);
  });
  EXPECT_TRUE(report.ok) << report.error;
  EXPECT_TRUE(report.retired.empty()) << testing::PrintToString(report.retired);
  EXPECT_EQ(net_->replicas().count(), 1u);
}

TEST_F(GenerationsTest, AReplicaNobodyClaimsIsRetiredAndClientsAreTold) {
  BootWith("v1");
  SwapReport report;
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    Frame f;
    const w::Replica* snapshot = NextReplica(c, f);
    ASSERT_NE(snapshot, nullptr);
    const std::uint32_t id = snapshot->id();
    OnKernel([&] { report = plugins_->Reload(Build("v2_noclaim"), "test"); });
    bool removed = false;
    bool fresh = false;
    for (int i = 0; i < 2; ++i) {
      const w::Replica* r = NextReplica(c, f);
      ASSERT_NE(r, nullptr);
      removed = removed || (r->id() == id && r->kind() == w::ReplicaUpdateKind::Remove);
      fresh = fresh || (r->id() != id && r->kind() == w::ReplicaUpdateKind::Snapshot);
    }
    EXPECT_TRUE(removed);
    EXPECT_TRUE(fresh);
  });
  EXPECT_TRUE(report.ok) << report.error;
  EXPECT_EQ(report.retired, std::vector<std::string>{"replica \"gen.board\" of fx_gen"});
}

// ABI 1.11: a zone is the kernel's. The next generation declares it again by name and finds
// its members: v2_zone enters nobody, yet its own door reaches the session v1_zone put in the
// hall; v1's door, unclaimed, is removed once; the zone itself is not retired.
TEST_F(GenerationsTest, AZoneKeepsItsMembersAcrossASwap) {
  BootWith("v1_zone");
  SwapReport report;
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    std::vector<std::string> seen;
    Frame f;
    for (int i = 0; i < 2; ++i) {  // the board and the door, in either order
      const w::Replica* r = NextReplica(c, f);
      ASSERT_NE(r, nullptr);
      seen.push_back(r->name()->str());
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<std::string>{"gen.board", "gen.door.v1_zone"}));
    OnKernel([&] { report = plugins_->Reload(Build("v2_zone"), "test"); });
    int removes = 0;
    std::string fresh;
    for (int i = 0; i < 2; ++i) {
      const w::Replica* r = NextReplica(c, f);
      ASSERT_NE(r, nullptr);
      removes += r->kind() == w::ReplicaUpdateKind::Remove ? 1 : 0;
      if (r->kind() == w::ReplicaUpdateKind::Snapshot) {
        fresh = r->name()->str();
      }
    }
    EXPECT_EQ(removes, 1);
    EXPECT_EQ(fresh, "gen.door.v2_zone");
  });
  EXPECT_TRUE(report.ok) << report.error;
  EXPECT_EQ(report.retired, std::vector<std::string>{"replica \"gen.door.v1_zone\" of fx_gen"});
  EXPECT_EQ(net_->zones().count(), 1u);
}

TEST_F(GenerationsTest, ASwapReleasesSessionBindingsAndNeverRunsLeaveLogic) {
  BootWith("v1");
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    OnKernel([&] { EXPECT_TRUE(plugins_->Reload(Build("v2"), "test").ok); });
    OnKernel([&] {
      EXPECT_EQ(Count("Gen.Left"), 0u) << testing::PrintToString(events_);  // released, not left
      EXPECT_EQ(Count("Gen.Session v2"), 1u);  // the live session replayed to the new one
    });
    c.Bye();
    c.WaitClosed();
  });
  ASSERT_TRUE(RunUntil([&] { return Count("Gen.Left") > 0; }));
  EXPECT_EQ(Count("Gen.Left v2"), 1u) << testing::PrintToString(events_);
  EXPECT_EQ(Count("Gen.Left v1"), 0u);
  EXPECT_EQ(events_.back().substr(events_.back().size() - 2), " 0");  // MOLT_EXIT_CLIENT_CLOSED
}

// session_bind_end's release may be NULL (molt.h): such a binding has nothing to release, and
// its instance letting go still never runs its on_end. Every combination, from a C plugin.
TEST_F(GenerationsTest, ReleasedIsNotLeftForEveryBindEndCombination) {
  const std::string dir = std::string(MOLT_FIXTURE_DIR) + "/bind";
  ASSERT_TRUE(plugins_->LoadDirectory(dir).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  Listen();
  std::vector<std::string> seen;
  Connection sub = kernel_->bus().Subscribe("Fx.bind.*", [&](std::string_view topic, Args a) {
    seen.push_back(std::string(topic.substr(8)) + " " + std::string(a[0].AsString()));
  });
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    OnKernel([&] {
      SwapReport r = plugins_->Reload(dir, "test");
      EXPECT_TRUE(r.ok) << r.error;
      // The swap released the old instance's four bindings: two releases, no end.
      std::vector<std::string> released = seen;
      std::sort(released.begin(), released.end());
      EXPECT_EQ(released,
                (std::vector<std::string>{"Release end+release", "Release last+release"}));
      seen.clear();
    });
    c.Bye();
    c.WaitClosed();
  });
  // The session's real end runs the new instance's four, ordinary ones first, each release after
  // its end.
  ASSERT_TRUE(RunUntil([&] { return seen.size() == 6; })) << testing::PrintToString(seen);
  EXPECT_EQ(seen,
            (std::vector<std::string>{"End end", "End end+release", "Release end+release",
                                      "End last", "End last+release", "Release last+release"}));
}

TEST_F(GenerationsTest, AClientMidResumeComesBackToTheNewGenerationWithItsSession) {
  net::NetOptions o = NoResume();
  o.resume_window_seconds = 30;
  Reboot(o);
  BootWith("v1");
  std::uint64_t id = 0;
  std::vector<std::uint8_t> token;
  std::uint32_t board = 0;
  Run([&] {
    TestClient c(port_);
    Frame f = c.Hello("ada");
    ASSERT_EQ(f.type(), w::Body::Welcome);
    id = f.envelope()->body_as_Welcome()->session_id();
    const auto* t = f.envelope()->body_as_Welcome()->resume_token();
    token.assign(t->begin(), t->end());
    Frame r;
    const w::Replica* snapshot = NextReplica(c, r);
    ASSERT_NE(snapshot, nullptr);
    board = snapshot->id();
    c.Intent(Id("gen.Add"), AddPayload(4));
    c.Request(Id("gen.Total"), 1, AddPayload(0));
    EXPECT_EQ(PayloadText(c.NextOf(w::Body::Response)), "v1:4");
  });  // no Bye: the link is lost, the session waits for its client
  ASSERT_TRUE(RunUntil([&] { return net_->stats().links_lost == 1; }));
  ASSERT_TRUE(plugins_->Reload(Build("v2"), "test").ok);
  EXPECT_EQ(Count("Gen.Session v2"), 1u);  // the waiting session is live: replayed
  EXPECT_EQ(Count("Gen.Left"), 0u);
  Run([&] {
    TestClient back(port_);
    Frame f = back.Resume("ada", token);
    ASSERT_EQ(f.type(), w::Body::Welcome);
    EXPECT_EQ(f.envelope()->body_as_Welcome()->session_id(), id);
    EXPECT_TRUE(f.envelope()->body_as_Welcome()->resumed());
    back.Request(Id("gen.Total"), 2, AddPayload(0));
    Frame answer = back.NextOf(w::Body::Response);
    ASSERT_EQ(answer.type(), w::Body::Response);
    EXPECT_EQ(PayloadText(answer), "v2:4");
    back.Intent(Id("gen.Add"), AddPayload(1));
    Frame r;
    const w::Replica* update = NextReplica(back, r);
    ASSERT_NE(update, nullptr);
    EXPECT_EQ(update->id(), board);  // the same replica, claimed by the new generation
    back.Bye();
    back.WaitClosed();
  });
  ASSERT_TRUE(RunUntil([&] { return Count("Gen.Left") > 0; }));
  EXPECT_EQ(Count("Gen.Left v2"), 1u);
}

TEST_F(GenerationsTest, APluginMayRequestAReloadThatRunsLaterOnTheKernel) {
  BootWith("v1");
  const std::string first = plugins_->generation();
  kernel_->bus().Publish("Gen.Reload");
  EXPECT_EQ(plugins_->generation(), first);  // not inside the plugin's callback
  ASSERT_TRUE(RunUntil([&] { return plugins_->generation() != first; }));
  EXPECT_EQ(plugins_->generation().substr(plugins_->generation().size() - 2), "#2");
  EXPECT_TRUE(Saw("Gen.Imported v1 0"));
}

TEST_F(GenerationsTest, StateOlderThanTheNewBuildReadsFailsTheSwapBeforeImport) {
  BootWith("v1");
  SwapReport r = plugins_->Reload(Build("v3_state"), "test");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.restored);
  EXPECT_EQ(r.stage, "import");
  EXPECT_NE(r.error.find("plugin \"fx_gen@" + r.generation +
                         "\" reads state versions 2 to 3, but its predecessor exported version 1"),
            std::string::npos)
      << r.error;
  EXPECT_FALSE(Saw("Gen.Imported v3_state 0"));
}

TEST_F(GenerationsTest, AMountedGenerationDispatchesNothingUntilItServes) {
  BootWith("v1");
  EXPECT_TRUE(Saw("Gen.Timer v1"));
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    OnKernel([&] {
      Status s = plugins_->Mount(Build("v2"), "test");
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
    // Both resident: an intent, a Bus event and a timer reach only the serving generation.
    c.Intent(Id("gen.Add"), AddPayload(5));
    c.Request(Id("gen.Total"), 1, AddPayload(0));
    EXPECT_EQ(PayloadText(c.NextOf(w::Body::Response)), "v1:5");
    OnKernel([&] {
      kernel_->bus().Publish("Gen.Ping");
      Steps(3);
    });
    EXPECT_TRUE(plugins_->mounted());
    EXPECT_TRUE(Saw("Gen.Added v1 5"));
    EXPECT_TRUE(Saw("Gen.Pong v1"));
    EXPECT_FALSE(Saw("Gen.Pong v2"));
    EXPECT_FALSE(Saw("Gen.Timer v2"));
    EXPECT_FALSE(Saw("Gen.Process v2"));
    EXPECT_EQ(Count("Gen.Session v2"), 0u);
    OnKernel([&] {
      SwapReport r = plugins_->SwapMounted();
      EXPECT_TRUE(r.ok) << r.error;
      Steps(2);
    });
    // Serving: the timer that came due while dormant runs once, and the session handler sees the
    // live session once.
    EXPECT_EQ(Count("Gen.Timer v2"), 1u);
    EXPECT_EQ(Count("Gen.Process v2"), 1u);
    EXPECT_EQ(Count("Gen.Session v2"), 1u);
    c.Request(Id("gen.Total"), 2, AddPayload(0));
    EXPECT_EQ(PayloadText(c.NextOf(w::Body::Response)), "v2:5");
  });
}

TEST_F(GenerationsTest, AFailedMountLeavesTheOldGenerationServing) {
  BootWith("v1");
  const std::string first = plugins_->generation();
  SwapReport r = plugins_->Reload(Build("fail_init"), "test");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stage, "mount");
  EXPECT_NE(r.error.find("service \"fx_gen\": init failed: init refused"), std::string::npos)
      << r.error;
  EXPECT_EQ(r.serving, first);
  EXPECT_EQ(plugins_->generation(), first);
  EXPECT_EQ(plugins_->failed_builds().count(r.build), 1u);
  r = plugins_->Reload(copies_ + "/nowhere", "test");
  EXPECT_EQ(r.stage, "mount");
  EXPECT_NE(r.error.find("does not exist"), std::string::npos) << r.error;
  events_.clear();
  kernel_->bus().Publish("Gen.Ping");
  EXPECT_EQ(events_, std::vector<std::string>({"Gen.Ping", "Gen.Pong v1"}));
  EXPECT_EQ(net_->channels().size(), 3u);
}

// A build with no plugin is refused at the mount: a swap never leaves the server with nothing.
// The old generation serves on, its clients, state and channels untouched.
TEST_F(GenerationsTest, ASwapToADirectoryWithNoPluginIsRefusedAndTheOldGenerationServesOn) {
  BootWith("v1");
  const std::string first = plugins_->generation();
  const std::string empty = copies_ + "-empty";
  fs::remove_all(empty);
  fs::create_directories(empty);
  const net::ChannelId add = Id("gen.Add");
  const net::ChannelId total = Id("gen.Total");
  SwapReport r;
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Intent(add, AddPayload(4));
    c.Request(total, 1, AddPayload(0));
    EXPECT_EQ(PayloadText(c.NextOf(w::Body::Response)), "v1:4");
    OnKernel([&] { r = plugins_->Reload(empty, "test"); });
    // The same connection, answered by the same generation with the state it holds.
    c.Request(total, 2, AddPayload(0));
    Frame f = c.NextOf(w::Body::Response);
    ASSERT_EQ(f.type(), w::Body::Response) << "the client lost its connection";
    EXPECT_EQ(PayloadText(f), "v1:4");
  });
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stage, "mount");
  EXPECT_EQ(r.error,
            "plugin directory \"" + empty + "\" holds no plugin: a swap to nothing is refused");
  EXPECT_FALSE(r.restored);
  EXPECT_EQ(r.previous, first);
  EXPECT_EQ(r.serving, first);
  EXPECT_EQ(plugins_->generation(), first);
  EXPECT_FALSE(plugins_->mounted());
  EXPECT_EQ(plugins_->resident_generations(), 1u);
  EXPECT_EQ(FailedIds(), std::set<std::string>{r.build});
  EXPECT_EQ(plugins_->swaps(), 0u);
  EXPECT_EQ(plugins_->failed_swaps(), 1u);
  EXPECT_FALSE(Saw("Gen.Stopped v1"));  // never stopped
  EXPECT_EQ(net_->channels().size(), 3u);
  events_.clear();
  kernel_->bus().Publish("Gen.Ping");
  EXPECT_EQ(events_, std::vector<std::string>({"Gen.Ping", "Gen.Pong v1"}));
  fs::remove_all(empty);
}

// A manifest that lists no plugin is the same refusal, whichever way the swap is asked for: a
// mount (Mount) and a queued reload (RequestReload, what SIGHUP and reload_request use).
TEST_F(GenerationsTest, AManifestListingNoPluginIsRefusedByMountAndByAQueuedReload) {
  BootWith("v1");
  const std::string first = plugins_->generation();
  const std::string empty = copies_ + "-empty-manifest";
  fs::remove_all(empty);
  fs::create_directories(empty);
  std::ofstream(empty + "/molt-build.json") << R"({"build": "2026.12.01-0", "plugins": []})";
  const std::string refusal =
      "plugin directory \"" + empty + "\" holds no plugin: a swap to nothing is refused";
  Status s = plugins_->Mount(empty, "test");
  EXPECT_EQ(s.message(), refusal);
  EXPECT_FALSE(plugins_->mounted());
  EXPECT_EQ(FailedIds(), std::set<std::string>{"2026.12.01-0"});
  std::vector<SwapReport> heard;
  plugins_->RequestReload(empty, "SIGHUP", [&](const SwapReport& x) { heard.push_back(x); });
  Steps(2);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_FALSE(heard[0].ok);
  EXPECT_EQ(heard[0].reason, "SIGHUP");
  EXPECT_EQ(heard[0].build, "2026.12.01-0");
  EXPECT_EQ(heard[0].stage, "mount");
  EXPECT_EQ(heard[0].error, refusal);
  EXPECT_EQ(heard[0].serving, first);
  EXPECT_EQ(plugins_->generation(), first);
  EXPECT_EQ(plugins_->failed_swaps(), 2u);
  EXPECT_EQ(plugins_->resident_generations(), 1u);
  events_.clear();
  kernel_->bus().Publish("Gen.Ping");
  EXPECT_EQ(events_, std::vector<std::string>({"Gen.Ping", "Gen.Pong v1"}));
  fs::remove_all(empty);
}

TEST_F(GenerationsTest, AFailedExportAbortsTheSwapWithTheOldGenerationServing) {
  BootWith("fail_export");
  const std::string first = plugins_->generation();
  SwapReport r = plugins_->Reload(Build("v2"), "test");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stage, "export");
  EXPECT_NE(r.error.find("export_state failed: export refused"), std::string::npos) << r.error;
  EXPECT_EQ(plugins_->generation(), first);
  // The serving build failed, not the new one: nothing is marked failed.
  EXPECT_TRUE(plugins_->failed_builds().empty()) << FailedIds().size();
  EXPECT_FALSE(Saw("Gen.Stopped fail_export"));  // never stopped
  events_.clear();
  kernel_->bus().Publish("Gen.Ping");
  EXPECT_EQ(events_, std::vector<std::string>({"Gen.Ping", "Gen.Pong fail_export"}));
}

// A channel the new generation staged at its mount but cannot declare when it comes to serve
// (here the host took the name meanwhile) fails the swap: the old build is restored, and the
// report names the channel. A generation never serves without a channel it declared.
TEST_F(GenerationsTest, AChannelThatCannotBeDeclaredAtAdoptionFailsTheSwap) {
  BootWith("v1");
  ASSERT_TRUE(plugins_->Mount(Build("v2_more"), "test").ok());  // stages the event gen.News
  net::ChannelSpec news;
  news.name = "gen.News";
  news.kind = net::ChannelKind::kEvent;
  news.schema = "molt.test.Add";
  ASSERT_TRUE(net_->channels().Declare(std::move(news), nullptr).ok());
  SwapReport r = plugins_->SwapMounted();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.restored);
  EXPECT_EQ(r.stage, "adopt");
  EXPECT_NE(r.error.find("plugin \"fx_gen@"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("channel \"gen.News\" could not be declared: channel \"gen.News\" is "
                         "already declared"),
            std::string::npos)
      << r.error;
  events_.clear();
  kernel_->bus().Publish("Gen.Ping");
  EXPECT_EQ(events_, std::vector<std::string>({"Gen.Ping", "Gen.Pong v1"}));
}

// A build that failed here is never taken again by an automatic trigger (--watch, a plugin's
// reload_request): it would fail the same way. An operator may retry it; once it runs, the mark
// goes.
TEST_F(GenerationsTest, AFailedBuildIsNotRetriedAutomaticallyAndASuccessClearsItsMark) {
  BootWith("v1");
  plugins_->set_health(1, std::chrono::seconds(60));
  ASSERT_TRUE(plugins_->Reload(Build("v2_faulty"), "test").ok);
  const std::string faulty = plugins_->generation().substr(0, plugins_->generation().find('#'));
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Intent(Id("gen.Add"), AddPayload(1));  // one error: the window rolls back
    c.Request(Id("gen.Total"), 1, AddPayload(0));
    ASSERT_EQ(c.NextOf(w::Body::Response).type(), w::Body::Response);
  });
  ASSERT_TRUE(RunUntil([&] { return plugins_->rollbacks() == 1; }));
  ASSERT_EQ(plugins_->failed_builds().count(faulty), 1u);
  EXPECT_EQ(plugins_->failed_builds().at(faulty),
            "health: 1 errors in " + faulty + "#2 within 60 s of its swap");
  events_.clear();
  std::vector<SwapReport> heard;
  plugins_->RequestReload(
      Build("v2_faulty"), "watch: fx_gen.so changed",
      [&](const SwapReport& x) { heard.push_back(x); }, PluginHost::Trigger::kAutomatic);
  Steps(2);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_FALSE(heard[0].ok);
  EXPECT_EQ(heard[0].stage, "gate");
  EXPECT_EQ(heard[0].error, "build " + faulty + " failed here (health: 1 errors in " + faulty +
                                "#2 within 60 s of its swap): it is not taken again "
                                "automatically; rebuild it, or reload it yourself (SIGHUP, the "
                                "admin API) to retry it");
  EXPECT_EQ(Count("Gen.Stopped"), 0u);  // nothing was mounted, nothing stopped
  // An operator's reload retries it, and its success clears the mark.
  plugins_->set_health(3, std::chrono::seconds(60));
  SwapReport r = plugins_->Reload(Build("v2_faulty"), "SIGHUP");
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(plugins_->failed_builds().empty());
}

class RestoreTest : public GenerationsTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(RestoreTest, AnImportOrStartFailureRestoresThePreviousBuildWithItsState) {
  const std::string failing = GetParam();
  BootWith("v1");
  const std::string first = plugins_->generation();
  SwapReport r;
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Intent(Id("gen.Add"), AddPayload(4));
    c.Request(Id("gen.Total"), 1, AddPayload(0));
    EXPECT_EQ(PayloadText(c.NextOf(w::Body::Response)), "v1:4");
    OnKernel([&] { r = plugins_->Reload(Build(failing), "test"); });
    c.Request(Id("gen.Total"), 2, AddPayload(0));
    Frame f = c.NextOf(w::Body::Response);
    ASSERT_EQ(f.type(), w::Body::Response) << "the client lost its connection";
    EXPECT_EQ(PayloadText(f), "v1:4");  // a fresh v1 with the state v1 exported
  });
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.restored);
  EXPECT_EQ(r.stage, failing == "fail_start" ? "start" : "import");
  EXPECT_NE(r.error.find(failing == "fail_start" ? "start refused" : "import refused"),
            std::string::npos)
      << r.error;
  // A new generation of the old build: fresh copies of its libraries, not the old instance.
  const std::string build = first.substr(0, first.find('#'));
  EXPECT_EQ(r.serving, build + "#3");
  EXPECT_EQ(plugins_->generation(), build + "#3");
  EXPECT_EQ(Count("Gen.Imported v1 4"), 1u);
  EXPECT_EQ(plugins_->failed_builds().count(r.build), 1u);
  // The replica went to the failed build and back: the restored one claimed it by the handle
  // its own state names.
  EXPECT_TRUE(r.retired.empty()) << testing::PrintToString(r.retired);
  EXPECT_EQ(net_->replicas().count(), 1u);
  events_.clear();
  kernel_->bus().Publish("Gen.Ping");
  EXPECT_EQ(events_, std::vector<std::string>({"Gen.Ping", "Gen.Pong v1"}));
}

// The hold ends when the kernel thread can serve again: what can wait is not in it. Here the
// libraries a failed swap lets go have a static destructor that takes 200 ms; it runs in a later
// task, after Reload() (the whole hold of a direct reload) returned.
TEST_F(GenerationsTest, TheReleaseOfWhatASwapLetsGoRunsAfterTheHold) {
  const std::string mark = copies_ + "-unloaded";
  fs::remove(mark);
  ::setenv("MOLT_FX_DTOR_MARK", mark.c_str(), 1);
  BootWith("slow_dtor");
  SwapReport r = plugins_->Reload(Build("fail_start"), "test");  // restores slow_dtor
  ASSERT_TRUE(r.restored) << r.error;
  EXPECT_FALSE(fs::exists(mark)) << "the old copy was unloaded inside the hold";
  EXPECT_GE(r.hold_ms, r.load_ms + r.init_ms + r.swap_ms);
  ASSERT_TRUE(RunUntil([&] { return fs::exists(mark); }));  // the release: a task of its own
  ::unsetenv("MOLT_FX_DTOR_MARK");
  fs::remove(mark);
}

INSTANTIATE_TEST_SUITE_P(Failures, RestoreTest, ::testing::Values("fail_import", "fail_start"));

TEST_F(GenerationsTest, ARequestLeftPendingAtTheHardStopIsRefusedAtOnceRetryable) {
  BootWith("v1");
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Request(Id("gen.Hold"), 7, AddPayload(0));
    OnKernel([&] { Steps(2); });
    OnKernel([&] { EXPECT_TRUE(plugins_->Reload(Build("v2"), "test").ok); });
    Frame f = c.NextOf(w::Body::Response, std::chrono::milliseconds(2000));
    ASSERT_EQ(f.type(), w::Body::Response);
    const w::Response* resp = f.envelope()->body_as_Response();
    EXPECT_EQ(resp->id(), 7u);
    EXPECT_EQ(resp->status(), MOLT_ERR_CANCELLED);
    EXPECT_GT(resp->retry_after_ms(), 0u);
  });
  EXPECT_EQ(net_->channels().Find("gen.Hold")->counters().timeouts, 0u);
}

TEST_F(GenerationsTest, TheOldGenerationsStopMayStillAnswerWhatItHolds) {
  BootWith("v2_hold");
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Request(Id("gen.Hold"), 9, AddPayload(0));
    OnKernel([&] { Steps(2); });
    OnKernel([&] { EXPECT_TRUE(plugins_->Reload(Build("v1"), "test").ok); });
    Frame f = c.NextOf(w::Body::Response);
    ASSERT_EQ(f.type(), w::Body::Response);
    EXPECT_EQ(f.envelope()->body_as_Response()->status(), MOLT_OK);
    EXPECT_EQ(PayloadText(f), "v2_hold:stopping");
  });
}

// fx_gen holds a parked process, a pending timer and a release deferred inside its stop(): none
// keeps the old copy in the process (the bundled plugins' interface reference is covered by
// MoltdTest.HundredSwapsUnderFiftyVerifyingClientsLoseNothing). Also run under ASan.
TEST_F(GenerationsTest, TheOldLibrariesStayForTheHealthWindowThenLeaveTheProcess) {
  BootWith("v1");
  plugins_->set_health(3, std::chrono::milliseconds(50));
  const std::string copy = plugins_->plugins()[0].library->copy();
  EXPECT_TRUE(fs::exists(copy));
  SwapReport r = plugins_->Reload(Build("v2"), "test");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(plugins_->on_probation());
  EXPECT_TRUE(fs::exists(copy));  // resident: the rollback target
  ASSERT_TRUE(RunUntil([&] { return !plugins_->on_probation(); }));
  // Released in a task of its own, right after.
  ASSERT_TRUE(RunUntil([&] { return !fs::exists(copy); }));
  std::ifstream maps("/proc/self/maps");
  const std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find(copy), std::string::npos) << "still mapped: " << copy;
}

// A process body that ignores its cancellation (waits again after MOLT_ERR_CANCELLED) cannot
// hold the swap: it is abandoned, reported, and its library stays mapped (retired), never
// unloaded under its parked frames. The new generation serves meanwhile.
TEST_F(GenerationsTest, AProcessThatIgnoresItsCancellationIsAbandonedAndItsLibraryRetired) {
  std::vector<std::string> lines;
  auto capture = Logger::Get().Capture(
      [&](std::string_view line, LogLevel) { lines.push_back(std::string(line)); });
  BootWith("stubborn");
  plugins_->set_health(3, std::chrono::milliseconds(50));
  const std::string copy = plugins_->plugins()[0].library->copy();
  const std::string old = plugins_->generation();
  SwapReport r = plugins_->Reload(Build("v2"), "test");
  ASSERT_TRUE(r.ok) << r.error;
  const auto abandoned = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("ignored its cancellation") != std::string::npos;
  });
  ASSERT_NE(abandoned, lines.end()) << ::testing::PrintToString(lines);
  EXPECT_NE(abandoned->find("[fx_gen@" + old + "]"), std::string::npos) << *abandoned;
  EXPECT_NE(abandoned->find("its library stays mapped for good (retired)"), std::string::npos);
  ASSERT_TRUE(RunUntil([&] { return plugins_->retired_libraries() == 1; }));  // its release
  EXPECT_FALSE(plugins_->on_probation());
  std::ifstream maps("/proc/self/maps");
  const std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(copy), std::string::npos) << "unloaded under its parked process: " << copy;
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("cannot be unloaded: process") != std::string::npos &&
           l.find("kept mapped as retired") != std::string::npos;
  }));
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Request(Id("gen.Total"), 1, AddPayload(0));
    Frame f = c.NextOf(w::Body::Response);
    ASSERT_EQ(f.type(), w::Body::Response);
    EXPECT_EQ(PayloadText(f), "v2:0");
  });
}

// A callback that blocks (here for 30 s) holds nothing past its deadline: the server goes on,
// the operator is told, and the callback, abandoned, can touch nothing when it wakes.
class BlockingCallbackTest : public GenerationsTest {
 protected:
  void SetUp() override {
    GenerationsTest::SetUp();
    mark_ = copies_ + "-late";
    fs::remove(mark_);
    ::setenv("MOLT_FX_SLEEP_MARK", mark_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("MOLT_FX_SLEEP_MARK");
    ::unsetenv("MOLT_FX_SLEEP_SECONDS");
    GenerationsTest::TearDown();
    fs::remove(mark_);
  }
  // The clients still get answers from the generation serving, tagged `tag`.
  void ServesAs(const std::string& tag) {
    Run([&] {
      TestClient c(port_);
      ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
      c.Request(Id("gen.Total"), 1, AddPayload(0));
      Frame f = c.NextOf(w::Body::Response);
      ASSERT_EQ(f.type(), w::Body::Response);
      EXPECT_EQ(PayloadText(f).substr(0, tag.size() + 1), tag + ":");
    });
  }
  std::string mark_;
};

TEST_F(BlockingCallbackTest, AStopPastItsDeadlineIsAbandonedAndTheNewBuildServes) {
  BootWith("sleep_stop");
  const TimePoint t0 = RealNow();
  SwapReport r = plugins_->Reload(Build("v2"), "test");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_LT(RealNow() - t0, std::chrono::seconds(20)) << "the swap waited for the stop";
  EXPECT_EQ(r.hard_stopped, std::vector<std::string>{"fx_gen"});
  ASSERT_EQ(plugins_->stuck_callbacks().size(), 1u);
  EXPECT_NE(plugins_->stuck_callbacks()[0].find(
                "stop() did not return within 0.3 s: abandoned (it may still be running; its "
                "host calls are refused, and no more of its code runs)"),
            std::string::npos)
      << plugins_->stuck_callbacks()[0];
  EXPECT_NE(kernel_->StatsJson().find("\"stuck_callbacks\":[\"fx_gen@"), std::string::npos);
  ServesAs("v2");
}

TEST_F(BlockingCallbackTest, AnExportPastItsDeadlineAbandonsTheSwapAndTheOldBuildServesOn) {
  BootWith("sleep_export");
  const std::string first = plugins_->generation();
  SwapReport r = plugins_->Reload(Build("v2"), "test");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stage, "export");
  EXPECT_NE(r.error.find("export_state() did not return within 0.3 s: abandoned"),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("(the swap is aborted; " + first + " serves on)"), std::string::npos);
  EXPECT_TRUE(plugins_->failed_builds().empty());  // v2 did nothing wrong
  EXPECT_EQ(plugins_->generation(), first);
  ServesAs("sleep_export");
  // The next swap asks it for nothing: no state, no stop(); the new build serves.
  r = plugins_->Reload(Build("v2"), "test");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(Saw("Gen.Stopped sleep_export"));
  ServesAs("v2");
  EXPECT_EQ(plugins_->stuck_callbacks().size(), 1u);
}

TEST_F(BlockingCallbackTest, AStartPastItsDeadlineRestoresThePreviousBuild) {
  BootWith("v1");
  SwapReport r = plugins_->Reload(Build("sleep_start"), "test");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.restored) << r.error;
  EXPECT_EQ(r.stage, "start");
  EXPECT_NE(r.error.find("start() did not return within 0.3 s"), std::string::npos) << r.error;
  EXPECT_EQ(plugins_->failed_builds().count(r.build), 1u);
  ServesAs("v1");
}

// A plugin's own tests (ABI 1.8) have the same deadline: the gate fails naming the plugin and
// the deadline instead of waiting. The abandoned tests may still be running, so none of the
// plugin's code runs again: a request to it is answered with an error, not held.
TEST_F(BlockingCallbackTest, ASelfTestPastItsDeadlineFailsTheGateAndThePluginServesOn) {
  BootWith("sleep_self_test");
  const TimePoint t0 = RealNow();
  const std::vector<loader::PluginHost::SelfTestRun> runs = plugins_->RunSelfTests();
  EXPECT_LT(RealNow() - t0, std::chrono::seconds(20)) << "the gate waited for the self-test";
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].ok());
  EXPECT_NE(runs[0].error.message().find("self_test() did not return within 0.3 s: abandoned"),
            std::string::npos)
      << runs[0].error.message();
  EXPECT_NE(loader::PluginHost::SelfTestsJson(runs).find("did not return within 0.3 s"),
            std::string::npos);
  ASSERT_EQ(plugins_->stuck_callbacks().size(), 1u);
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Request(Id("gen.Total"), 1, AddPayload(0));
    Frame f = c.NextOf(w::Body::Response);
    ASSERT_EQ(f.type(), w::Body::Response);
    EXPECT_NE(f.envelope()->body_as_Response()->status(), MOLT_OK);
  });
}

// What an abandoned callback does when it wakes is refused: its host call returns
// MOLT_ERR_STALE and reaches nobody, even once the host that abandoned it is gone.
TEST_F(BlockingCallbackTest, AnAbandonedCallbacksHostCallsAreRefusedWhenItWakes) {
  ::setenv("MOLT_FX_SLEEP_SECONDS", "0.6", 1);
  BootWith("sleep_stop");
  ASSERT_TRUE(plugins_->Reload(Build("v2"), "test").ok);
  const std::string generation = plugins_->generation();
  ASSERT_TRUE(RunUntil([&] { return fs::exists(mark_) && fs::file_size(mark_) > 0; }));
  std::ifstream in(mark_);
  int code = 0;
  in >> code;
  EXPECT_EQ(code, MOLT_ERR_STALE);
  EXPECT_FALSE(Saw("Gen.Late sleep_stop"));
  EXPECT_EQ(plugins_->generation(), generation);
  // Once more with the host gone before the callback wakes.
  fs::remove(mark_);
  auto shut_down = [&] {  // the kernel stops, then the host, its API table, then the network
    (void)kernel_->Shutdown();
    events_sub_.Disconnect();
    plugins_.reset();
    Teardown();
  };
  shut_down();
  Boot(net::NetOptions());
  Attach();
  BootWith("sleep_stop");
  ASSERT_TRUE(plugins_->Reload(Build("v2"), "test").ok);
  shut_down();
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  std::ifstream again(mark_);
  code = 0;
  again >> code;
  EXPECT_EQ(code, MOLT_ERR_STALE);
}

// The soft stop is bounded (5 s by default): past it, the old instances left are halted without
// their stop(), which the report names; what they held is released all the same.
TEST_F(GenerationsTest, ASoftStopPastItsBudgetHardStopsTheRest) {
  BootWith("v1");
  plugins_->set_stop_budget(Duration::zero());  // spent before the first stop
  SwapReport r = plugins_->Reload(Build("v2"), "test");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.hard_stopped, std::vector<std::string>{"fx_gen"});
  EXPECT_NE(r.Json().find("\"hard_stopped\":[\"fx_gen\"]"), std::string::npos) << r.Json();
  EXPECT_FALSE(Saw("Gen.Stopped v1"));
  EXPECT_TRUE(Saw("Gen.Imported v2 0"));
  plugins_->set_stop_budget(PluginHost::kStopBudget);
  r = plugins_->Reload(Build("v1"), "test");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.hard_stopped.empty());
  EXPECT_TRUE(Saw("Gen.Stopped v2"));
}

TEST_F(GenerationsTest, ErrorsInTheHealthWindowRollBackToThePreviousBuildWithTheNewState) {
  BootWith("v1");
  plugins_->set_health(2, std::chrono::seconds(60));
  const std::string first = plugins_->generation();
  const std::string build = first.substr(0, first.find('#'));
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Intent(Id("gen.Add"), AddPayload(1));
    // A round trip: v1 handled the first intent before the swap (else it could reach the faulty
    // build, whose two errors would then roll back before the third intent).
    c.Request(Id("gen.Total"), 9, AddPayload(0));
    ASSERT_EQ(c.NextOf(w::Body::Response).type(), w::Body::Response);
    OnKernel([&] { EXPECT_TRUE(plugins_->Reload(Build("v2_faulty"), "test").ok); });
    // Two failing intents in the window: the rollback runs as its own kernel task.
    c.Intent(Id("gen.Add"), AddPayload(2));
    c.Intent(Id("gen.Add"), AddPayload(3));
    bool back = false;
    for (int i = 0; i < 2000 && !back; ++i) {  // up to 10 s: ASan runs are slow
      OnKernel([&] { back = plugins_->generation() == build + "#3"; });
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(back);
    c.Request(Id("gen.Total"), 1, AddPayload(0));
    Frame f = c.NextOf(w::Body::Response);
    ASSERT_EQ(f.type(), w::Body::Response) << "the client lost its connection";
    EXPECT_EQ(PayloadText(f), "v1:6");  // v1 again, with what the faulty build counted
  });
  EXPECT_FALSE(plugins_->on_probation());
  EXPECT_EQ(plugins_->failed_builds().size(), 1u);
  EXPECT_EQ(Count("Gen.Imported v1 6"), 1u);
  // The kernel's stats say so (what stats_json hands plugins, and later the admin endpoint).
  const std::string stats = kernel_->StatsJson();
  EXPECT_NE(stats.find("\"generations\":{\"serving\":\"" + build + "#3\""), std::string::npos)
      << stats;
  EXPECT_NE(stats.find("\"plugins\":[{\"name\":\"fx_gen\",\"version\":\"1.0.0\","
                       "\"errors\":0,\"uses\":[]}]"),
            std::string::npos)
      << stats;
  EXPECT_NE(stats.find("\"swaps\":2,\"failed_swaps\":0,\"rollbacks\":1"), std::string::npos)
      << stats;
  // The swap history (the dashboard's), newest first: the rollback, then the swap to v2.
  const std::size_t history = stats.find("\"history\":[{\"time_ms\":");
  ASSERT_NE(history, std::string::npos) << stats;
  const std::size_t rollback = stats.find("\"rollback\":true", history);
  const std::size_t swap = stats.find("\"rollback\":false", history);
  EXPECT_LT(rollback, swap) << stats;
  EXPECT_NE(swap, std::string::npos) << stats;
  EXPECT_EQ(stats.find("\"report\":", swap), std::string::npos)
      << "two reports, no more: " << stats;
}

// A rollback mounts the previous build in one task and swaps it in the next, as a reload does:
// its hold is the swap, and clients are served between the two.
TEST_F(GenerationsTest, ARollbackMountsAndSwapsInTwoTasks) {
  BootWith("v1");
  const std::string build = plugins_->generation().substr(0, plugins_->generation().find('#'));
  plugins_->set_health(1, std::chrono::seconds(60));
  ASSERT_TRUE(plugins_->Reload(Build("v2_faulty"), "test").ok);
  const std::string faulty = plugins_->generation();
  Steps(2);                                               // the reports of the swap
  plugins_->plugins()[0].instance->CountCallbackError();  // the window's one error
  Steps(1);
  EXPECT_TRUE(plugins_->mounted()) << "the rollback's mount ran";
  EXPECT_EQ(plugins_->generation(), faulty) << "and only the mount";
  EXPECT_EQ(plugins_->rollbacks(), 0u);
  Steps(1);
  EXPECT_FALSE(plugins_->mounted());
  EXPECT_EQ(plugins_->generation(), build + "#3");
  EXPECT_EQ(plugins_->rollbacks(), 1u);
}

// The window's rollback waits while the host is busy with another swap (here a build mounted,
// its swap a step away): it is neither run under it nor dropped, and runs once the host is free.
TEST_F(GenerationsTest, AHealthRollbackWaitsForTheSwapInProgress) {
  BootWith("v1");
  const std::string build = plugins_->generation().substr(0, plugins_->generation().find('#'));
  plugins_->set_health(1, std::chrono::seconds(60));
  ASSERT_TRUE(plugins_->Reload(Build("v2_faulty"), "test").ok);
  const std::string faulty = plugins_->generation();
  ASSERT_TRUE(plugins_->Mount(Build("v2"), "test").ok());
  std::vector<std::string> lines;
  auto capture =
      Logger::Get().Capture([&](std::string_view l, LogLevel) { lines.push_back(std::string(l)); });
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Intent(Id("gen.Add"), AddPayload(1));  // the window's one error
    c.Request(Id("gen.Total"), 1, AddPayload(0));
    ASSERT_EQ(c.NextOf(w::Body::Response).type(), w::Body::Response);
  });
  ASSERT_TRUE(RunUntil([&] {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.find("the health-window rollback of " + faulty +
                    " waits for the swap in progress") != std::string::npos;
    });
  })) << testing::PrintToString(lines);
  EXPECT_EQ(plugins_->generation(), faulty);
  EXPECT_EQ(plugins_->rollbacks(), 0u);
  EXPECT_TRUE(plugins_->mounted());
  // The mount is given up (a newer one that fails): the rollback runs.
  EXPECT_FALSE(plugins_->Mount(copies_ + "/nowhere", "test").ok());
  ASSERT_TRUE(RunUntil([&] { return plugins_->rollbacks() == 1; }))
      << testing::PrintToString(lines);
  EXPECT_EQ(plugins_->generation().substr(0, build.size() + 1), build + "#");
}

// A failed swap during a health window restores the build on probation, which serves out its
// window and then becomes the last known good, as if the failed swap had never been tried.
TEST_F(GenerationsTest, ABuildRestoredInItsWindowStillBecomesLastKnownGood) {
  BootWith("v1");
  const std::string lkg = copies_ + "-lkg";
  fs::remove_all(lkg);
  plugins_->set_last_known_good_dir(lkg);
  plugins_->set_health(3, std::chrono::milliseconds(200));
  ASSERT_TRUE(plugins_->Reload(Build("v2"), "test").ok);
  const std::string v2 = plugins_->generation().substr(0, plugins_->generation().find('#'));
  SwapReport r = plugins_->Reload(Build("fail_start"), "test");
  ASSERT_TRUE(r.restored) << r.error;
  EXPECT_TRUE(plugins_->on_probation());
  EXPECT_EQ(plugins_->resident_generations(), 2u);  // v1 stays, the window's way back
  ASSERT_TRUE(RunUntil([&] { return !plugins_->on_probation(); }));
  Result<loader::Build> kept = ReadBuild(lkg);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->id, v2);
  EXPECT_EQ(plugins_->resident_generations(), 1u);
  fs::remove_all(lkg);
}

TEST_F(GenerationsTest, ABuildThatPassesItsWindowIsKeptAsLastKnownGood) {
  BootWith("v1");
  const std::string lkg = copies_ + "-lkg";
  fs::remove_all(lkg);
  plugins_->set_last_known_good_dir(lkg);
  plugins_->set_health(3, std::chrono::milliseconds(50));
  ASSERT_TRUE(plugins_->Reload(Build("v2"), "test").ok);
  ASSERT_TRUE(RunUntil([&] { return !plugins_->on_probation(); }));
  Result<loader::Build> kept = ReadBuild(lkg);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_TRUE(kept->has_manifest);
  EXPECT_EQ(plugins_->generation().substr(0, kept->id.size() + 1), kept->id + "#");
  ASSERT_EQ(kept->files.size(), 1u);
  EXPECT_EQ(fs::path(kept->files[0]).filename(), "fx_gen_v2.so");
  // Each library described as the descriptor said; no leftover of the save beside it.
  const BuildEntry& e = kept->entries.at("fx_gen_v2.so");
  EXPECT_EQ(e.name, "fx_gen");
  EXPECT_EQ(e.version, "1.0.0");
  EXPECT_EQ(e.kind, "service");
  EXPECT_FALSE(fs::exists(lkg + ".new"));
  EXPECT_FALSE(fs::exists(lkg + ".old"));
  // It loads as it was: the kept build is a swap away.
  SwapReport r = plugins_->Reload(lkg, "test");
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.build, kept->id);
  fs::remove_all(lkg);
}

// The kept build keeps its manifest's health settings: booted from it, it gets the same window.
TEST_F(GenerationsTest, TheLastKnownGoodKeepsTheBuildsHealthSettings) {
  BootWith("v1");
  const std::string lkg = copies_ + "-lkg";
  const std::string dir = copies_ + "-healthy";
  fs::remove_all(lkg);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string so = Build("v2") + "/fx_gen_v2.so";
  fs::copy_file(so, dir + "/fx_gen_v2.so");
  std::ofstream(dir + "/molt-build.json")
      << R"({"build": "healthy-1", "plugins": [{"file": "fx_gen_v2.so", "sha256": ")"
      << Sha256File(so).value() << R"("}], "health": {"errors": 7}})";
  plugins_->set_last_known_good_dir(lkg);
  plugins_->set_health(3, std::chrono::milliseconds(50));
  ASSERT_TRUE(plugins_->Reload(dir, "test").ok);
  ASSERT_TRUE(RunUntil([&] { return !plugins_->on_probation(); }));
  Result<loader::Build> kept = ReadBuild(lkg);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->id, "healthy-1");
  EXPECT_EQ(kept->health_errors, 7u);
  EXPECT_EQ(kept->health_window_seconds, 0);  // the host's default, as the build had it
  fs::remove_all(lkg);
  fs::remove_all(dir);
}

TEST_F(GenerationsTest, AManifestsHealthWindowOutsideItsBoundsFallsBackToTheDefault) {
  const std::string dir = copies_ + "-health";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/molt-build.json")
      << R"({"build": "b1", "plugins": [], "health": {"errors": 500, "window_seconds": 10}})";
  Result<loader::Build> b = ReadBuild(dir);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->health_errors, 0u);
  EXPECT_EQ(b->health_window_seconds, 10);
  ASSERT_EQ(b->warnings.size(), 1u);
  EXPECT_NE(b->warnings[0].find("\"errors\" must be 1 to 100: the default applies"),
            std::string::npos)
      << b->warnings[0];
  fs::remove_all(dir);
}

TEST_F(GenerationsTest, AManifestNamesTheBuildAndItsHashesAreCheckedOnTheCopy) {
  BootWith("v1");
  const std::string dir = copies_ + "-build";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string so = fs::path(Build("v2")).string() + "/fx_gen_v2.so";
  ASSERT_TRUE(fs::exists(so)) << so;
  fs::copy_file(so, dir + "/fx_gen_v2.so");
  Result<std::string> sha = Sha256File(so);
  ASSERT_TRUE(sha.ok());
  auto manifest = [&](const std::string& hash, const std::string& name) {
    std::ofstream(dir + "/molt-build.json")
        << R"({"build": "2026.12.01-7", "plugins": [{"file": "fx_gen_v2.so", "sha256": ")" << hash
        << R"(", "name": ")" << name << R"(", "version": "1.0.0", "kind": "service"}]})";
  };
  manifest(std::string(64, 'a'), "fx_gen");
  SwapReport r = plugins_->Reload(dir, "test");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.build, "2026.12.01-7");
  EXPECT_NE(r.error.find("its SHA-256 is " + *sha + ", but molt-build.json says aaaa"),
            std::string::npos)
      << r.error;
  manifest(*sha, "someone_else");
  r = plugins_->Reload(dir, "test");
  EXPECT_NE(r.error.find("is named \"fx_gen\", but molt-build.json says otherwise"),
            std::string::npos)
      << r.error;
  manifest(*sha, "fx_gen");
  r = plugins_->Reload(dir, "test");
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(plugins_->generation(), "2026.12.01-7#4");
  std::ofstream(dir + "/stray.so") << "not a plugin";
  r = plugins_->Reload(dir, "test");
  EXPECT_NE(r.error.find("stray.so\" is not listed in"), std::string::npos) << r.error;
  fs::remove_all(dir);
}

TEST_F(GenerationsTest, BrokenManifestsAreRefusedNamingTheFileAndTheFix) {
  const std::string dir = copies_ + "-manifests";
  auto refusal = [&](const std::string& manifest) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(Build("v1") + "/fx_gen_v1.so", dir + "/fx_gen_v1.so");
    std::ofstream(dir + "/molt-build.json") << manifest;
    Result<loader::Build> b = ReadBuild(dir);
    return b.ok() ? std::string("ok") : b.status().message();
  };
  const std::string where = "build manifest \"" + dir + "/molt-build.json\": ";
  EXPECT_EQ(refusal("{not json"), where + "is not a JSON object (syntax error)");
  EXPECT_EQ(refusal(R"({"build": "a#b", "plugins": []})"),
            where + "\"build\" must be the build id: 1..64 characters, no '#' or spaces");
  EXPECT_EQ(refusal(R"({"build": "b1"})"),
            where + "\"plugins\" must be an array of {file, sha256, ...}");
  const std::string hash(64, 'a');
  EXPECT_EQ(refusal(R"({"build": "b1", "plugins": [{"file": "fx_gen_v1.so", "sha256": "xyz"}]})"),
            where +
                "\"fx_gen_v1.so\": \"sha256\" must be 64 lowercase hex digits (sha256sum "
                "prints them)");
  EXPECT_EQ(refusal(R"({"build": "b1", "plugins": [{"file": "fx_gen_v1.so", "sha256": ")" + hash +
                    R"("}, {"file": "gone.so", "sha256": ")" + hash + R"("}]})"),
            dir + "/molt-build.json lists \"gone.so\", which is not in " + dir);
  EXPECT_EQ(refusal(R"({"build": "b1", "plugins": [{"file": "fx_gen_v1.so", "sha256": ")" + hash +
                    R"(", "kind": "daemon"}]})"),
            where + "\"fx_gen_v1.so\": \"kind\" is \"service\" or \"controller\"");
  fs::remove_all(dir);
}

// Outside a swap too: a plugin that stops (here, the host unloading it) refuses what its handlers
// still hold at once, rather than leaving the client to time out.
// Never a server without a game: when a failed swap cannot restore the previous build either
// (its start fails now too), handshakes are refused saying the server is starting, until a
// reload that works makes a generation serve.
TEST_F(GenerationsTest, WhileNoGenerationServesHandshakesAreRefusedSayingItIsStarting) {
  BootWith("v1");
  ::setenv("MOLT_FX_GEN_REFUSE_START", "1", 1);
  SwapReport r = plugins_->Reload(Build("v2"), "test");
  ::unsetenv("MOLT_FX_GEN_REFUSE_START");
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.restored);
  EXPECT_NE(r.error.find("no generation serves"), std::string::npos) << r.error;
  EXPECT_EQ(r.serving, "");
  EXPECT_FALSE(net_->serving());
  Run([&] {
    TestClient c(port_);
    Frame f = c.Hello("ada");
    ASSERT_EQ(f.type(), w::Body::Refuse);
    const w::Refuse* refuse = f.envelope()->body_as_Refuse();
    EXPECT_EQ(refuse->reason(), w::RefuseReason::Starting);
    EXPECT_EQ(refuse->text()->str(), "the server is starting: no plugin generation serves yet");
    EXPECT_EQ(refuse->retry_after_ms(), 1000u);
  });
  r = plugins_->Reload(Build("v2"), "test");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(net_->serving());
  Run([&] {
    TestClient c(port_);
    EXPECT_EQ(c.Hello("ada").type(), w::Body::Welcome);
  });
}

TEST_F(GenerationsTest, APluginThatStopsRefusesItsPendingRequestsAtOnce) {
  BootWith("v1");
  Run([&] {
    TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), w::Body::Welcome);
    c.Request(Id("gen.Hold"), 3, AddPayload(0));
    OnKernel([&] { Steps(2); });
    OnKernel([&] { plugins_->UnloadAll(); });
    Frame f = c.NextOf(w::Body::Response, std::chrono::milliseconds(2000));
    ASSERT_EQ(f.type(), w::Body::Response);
    EXPECT_EQ(f.envelope()->body_as_Response()->id(), 3u);
    EXPECT_EQ(f.envelope()->body_as_Response()->status(), MOLT_ERR_CANCELLED);
  });
  EXPECT_EQ(net_->channels().size(), 0u);
}

TEST_F(GenerationsTest, ReloadsAreGatedAndTheNewestQueuedRequestWins) {
  Status s = plugins_->LoadDirectory(Build("v1"));
  ASSERT_TRUE(s.ok()) << s.ToString();
  SwapReport r = plugins_->Reload(Build("v2"), "early");
  EXPECT_EQ(r.stage, "gate");
  EXPECT_NE(r.error.find("the kernel has not started"), std::string::npos) << r.error;
  ASSERT_TRUE(kernel_->Start().ok());
  std::vector<std::string> heard;
  plugins_->RequestReload(Build("fail_init"), "first",
                          [&](const SwapReport& x) { heard.push_back(x.reason + " " + x.error); });
  plugins_->RequestReload(Build("v2"), "second", [&](const SwapReport& x) {
    heard.push_back(x.reason + " " + (x.ok ? "ok" : x.error));
  });
  Steps(4);
  EXPECT_EQ(heard, std::vector<std::string>(
                       {"first superseded by a newer reload request (second)", "second ok"}));
  plugins_->Close();
  r = plugins_->Reload(Build("v1"), "late");
  EXPECT_EQ(r.stage, "gate");
  EXPECT_EQ(r.error, "the server is closing: no reload now");
}

// moltd stages a swap's build on a thread of its own: the kernel thread serves while the build is
// read, copied and hashed; only the open, init and swap run there.
TEST_F(GenerationsTest, ABackgroundStageLeavesTheKernelThreadServing) {
  BootWith("v1");
  const std::string first = plugins_->generation();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> in_stage{false};
  std::thread::id stage_thread;
  plugins_->set_background_staging(std::chrono::seconds(30));
  plugins_->set_stage_hook_for_testing([&, released] {
    stage_thread = std::this_thread::get_id();
    in_stage = true;
    released.wait();
  });
  std::vector<SwapReport> heard;
  plugins_->RequestReload(Build("v2"), "test", [&](const SwapReport& x) { heard.push_back(x); });
  ASSERT_TRUE(RunUntil([&] { return in_stage.load(); }));
  // The stage is held mid-way: the kernel thread runs tasks and the old generation answers.
  bool ran = false;
  kernel_->scheduler().Schedule([&] { ran = true; });
  ASSERT_TRUE(RunUntil([&] { return ran; }));
  events_.clear();
  kernel_->bus().Publish("Gen.Ping");
  EXPECT_EQ(events_, std::vector<std::string>({"Gen.Ping", "Gen.Pong v1"}));
  EXPECT_TRUE(heard.empty());
  EXPECT_EQ(plugins_->generation(), first);
  release.set_value();
  ASSERT_TRUE(RunUntil([&] { return !heard.empty(); }));
  EXPECT_NE(stage_thread, std::this_thread::get_id());
  ASSERT_TRUE(heard[0].ok) << heard[0].error;
  EXPECT_EQ(heard[0].serving, plugins_->generation());
  EXPECT_NE(plugins_->generation(), first);
  events_.clear();
  kernel_->bus().Publish("Gen.Ping");
  EXPECT_EQ(events_, std::vector<std::string>({"Gen.Ping", "Gen.Pong v2"}));
  EXPECT_GT(heard[0].staged_ms, 0);  // the report says what ran elsewhere
  EXPECT_LE(heard[0].staged_ms, heard[0].load_ms);
  // A direct Reload() stages on the calling thread: nothing of it ran elsewhere.
  SwapReport direct = plugins_->Reload(Build("v1"), "direct");
  ASSERT_TRUE(direct.ok) << direct.error;
  EXPECT_EQ(direct.staged_ms, 0);
  EXPECT_GT(direct.load_ms, 0);
}

// A stage stuck past its deadline (a dead disk or network file system) is abandoned: the reload
// fails naming it, the old generation serves on, the next reload runs, and the stuck stage's late
// result is dropped.
TEST_F(GenerationsTest, AStageStuckPastItsDeadlineIsAbandonedAndTheNextReloadRuns) {
  BootWith("v1");
  const std::string first = plugins_->generation();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> stages{0};
  plugins_->set_background_staging(std::chrono::seconds(1));
  plugins_->set_stage_hook_for_testing([&, released] {
    if (stages++ == 0) {
      released.wait();  // the first stage hangs until the end of the test
    }
  });
  std::vector<SwapReport> heard;
  const std::string stuck = Build("v2");
  plugins_->RequestReload(stuck, "first", [&](const SwapReport& x) { heard.push_back(x); });
  ASSERT_TRUE(RunUntil([&] { return !heard.empty(); }));
  EXPECT_FALSE(heard[0].ok);
  EXPECT_EQ(heard[0].stage, "mount");
  EXPECT_EQ(heard[0].error, "reading the build in " + stuck +
                                " took more than 1 s: abandoned (is its disk or file system "
                                "stuck?); the serving generation serves on");
  EXPECT_EQ(heard[0].serving, first);
  EXPECT_EQ(plugins_->generation(), first);
  EXPECT_TRUE(plugins_->failed_builds().empty());  // nothing is known of the build itself
  plugins_->RequestReload(Build("v2"), "second", [&](const SwapReport& x) { heard.push_back(x); });
  ASSERT_TRUE(RunUntil([&] { return heard.size() == 2; }));
  ASSERT_TRUE(heard[1].ok) << heard[1].error;
  const std::string second = plugins_->generation();
  release.set_value();  // the stuck stage ends: its result finds no one waiting
  // Its copies (the boot's are "1.*", the stuck stage's "2.*") go with it.
  auto stuck_copies = [&] {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(copies_)) {
      n += e.path().filename().string().rfind("2.", 0) == 0 ? 1 : 0;
    }
    return n;
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  EXPECT_TRUE(
      RunUntil([&] { return std::chrono::steady_clock::now() > until && stuck_copies() == 0; }));
  EXPECT_EQ(heard.size(), 2u);
  EXPECT_EQ(plugins_->generation(), second);
  EXPECT_EQ(plugins_->resident_generations(), 2u);  // v2 on probation, v1 kept until it passes
}

// With background staging, the two other copies of a build the health window makes run off the
// kernel thread too: the rollback's fresh copies of the previous build, and the last-known-good
// save (every library copied and fsynced). Held mid-way, the server serves on.
TEST_F(GenerationsTest, TheWindowsRollbackStagesItsCopiesOffTheKernelThread) {
  BootWith("v1");
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> in_stage{false};
  std::atomic<std::thread::id> stage_thread;
  plugins_->set_health(1, std::chrono::seconds(60));
  ASSERT_TRUE(plugins_->Reload(Build("v2_faulty"), "test").ok);
  const std::string faulty = plugins_->generation();
  plugins_->set_background_staging(std::chrono::seconds(30));
  plugins_->set_stage_hook_for_testing([&, released] {
    stage_thread = std::this_thread::get_id();
    in_stage = true;
    released.wait();
  });
  std::vector<SwapReport> heard;
  HearRollbacks(&heard);
  SendOneFaultyAdd();  // one error: the window rolls back
  ASSERT_TRUE(RunUntil([&] { return in_stage.load(); }));
  bool ran = false;
  kernel_->scheduler().Schedule([&] { ran = true; });
  ASSERT_TRUE(RunUntil([&] { return ran; }));
  EXPECT_EQ(plugins_->generation(), faulty);  // it serves on while v1 is copied
  EXPECT_EQ(plugins_->rollbacks(), 0u);
  EXPECT_TRUE(heard.empty());
  release.set_value();
  ASSERT_TRUE(RunUntil([&] { return !heard.empty(); }));  // the report: after the swap's task
  EXPECT_EQ(plugins_->rollbacks(), 1u);
  EXPECT_NE(stage_thread.load(), std::this_thread::get_id());
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_TRUE(heard[0].ok) << heard[0].error;
  EXPECT_GT(heard[0].staged_ms, 0);
  EXPECT_LE(heard[0].staged_ms, heard[0].load_ms);
  events_.clear();
  kernel_->bus().Publish("Gen.Ping");
  EXPECT_EQ(events_, std::vector<std::string>({"Gen.Ping", "Gen.Pong v1"}));
}

// The rollback's stage stuck past its deadline: the rollback fails naming it and the build on
// probation serves on, marked failed here; it is never left with no generation.
TEST_F(GenerationsTest, ARollbackWhoseStageIsStuckLeavesTheBuildServing) {
  BootWith("v1");
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  plugins_->set_health(1, std::chrono::seconds(60));
  ASSERT_TRUE(plugins_->Reload(Build("v2_faulty"), "test").ok);
  const std::string faulty = plugins_->generation();
  plugins_->set_background_staging(std::chrono::seconds(1));
  plugins_->set_stage_hook_for_testing([released] { released.wait(); });
  std::vector<SwapReport> heard;
  HearRollbacks(&heard);
  SendOneFaultyAdd();
  ASSERT_TRUE(RunUntil([&] { return !heard.empty(); }));
  release.set_value();
  EXPECT_FALSE(heard[0].ok);
  EXPECT_NE(heard[0].error.find("took more than 1 s: abandoned (is its disk or file system "
                                "stuck?) (" +
                                faulty + " serves on)"),
            std::string::npos)
      << heard[0].error;
  EXPECT_EQ(plugins_->generation(), faulty);
  EXPECT_FALSE(plugins_->on_probation());
  EXPECT_EQ(plugins_->failed_builds().count(faulty.substr(0, faulty.find('#'))), 1u);
  events_.clear();
  kernel_->bus().Publish("Gen.Ping");
  EXPECT_EQ(events_.size(), 2u);  // v2_faulty still answers
}

TEST_F(GenerationsTest, TheLastKnownGoodIsSavedOffTheKernelThread) {
  BootWith("v1");
  const std::string lkg = copies_ + "-lkg";
  fs::remove_all(lkg);
  plugins_->set_last_known_good_dir(lkg);
  plugins_->set_health(3, std::chrono::milliseconds(50));
  ASSERT_TRUE(plugins_->Reload(Build("v2"), "test").ok);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> in_save{false};
  plugins_->set_background_staging(std::chrono::seconds(30));
  plugins_->set_stage_hook_for_testing([&, released] {
    in_save = true;
    released.wait();
  });
  ASSERT_TRUE(RunUntil([&] { return !plugins_->on_probation(); }));
  ASSERT_TRUE(RunUntil([&] { return in_save.load(); }));
  bool ran = false;
  kernel_->scheduler().Schedule([&] { ran = true; });
  ASSERT_TRUE(RunUntil([&] { return ran; }));
  EXPECT_FALSE(fs::exists(lkg));  // held mid-way: nothing is written yet, and the server serves
  release.set_value();
  ASSERT_TRUE(RunUntil([&] { return fs::exists(lkg + "/molt-build.json"); }));
  Result<loader::Build> kept = ReadBuild(lkg);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(plugins_->generation().substr(0, kept->id.size() + 1), kept->id + "#");
  EXPECT_FALSE(fs::exists(lkg + ".new"));
  plugins_->WaitForLastKnownGood(std::chrono::seconds(5));
  fs::remove_all(lkg);
}

}  // namespace
}  // namespace molt::kernel::loader
