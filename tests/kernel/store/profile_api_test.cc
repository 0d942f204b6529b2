// SPDX-License-Identifier: Apache-2.0
// The profile slots (ABI 1.4, store/profile_api.h): a real plugin (tests/fixtures/plugins/
// profile.cc, several builds) declares a store over a real SQLite file, reads and writes its
// sessions' profiles, and is swapped for other builds while the profiles stay loaded.
#include "kernel/src/store/profile_api.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>

#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/net_api.h"
#include "kernel/src/store/profile_registry.h"
#include "kernel/src/store/sqlite_store.h"
#include "net_fixture.h"

namespace molt::kernel::store {
namespace {

namespace fs = std::filesystem;
using net::SessionId;
using std::chrono::milliseconds;

std::string Build(const std::string& name) {
  return std::string(MOLT_FIXTURE_DIR) + "/prof/" + name;
}

class ProfileApiTest : public net::NetTest {
 protected:
  void SetUp() override {
    NetTest::SetUp();
    dir_ = ::testing::TempDir() + "molt_profile_api_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto s = SqliteStore::Open(dir_ + "/profiles.db", [this](std::function<void()> fn) {
      kernel_->loop().Post(std::move(fn));
    });
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    registry_ = std::make_unique<ProfileRegistry>(*kernel_, *net_, *store_, "host-a");
    plugins_ = std::make_unique<loader::PluginHost>(*kernel_, dir_ + "/copies");
    abi::AttachNetwork(plugins_->shared(), net_.get());
    abi::AttachProfiles(plugins_->shared(), *registry_);
    events_sub_ = kernel_->bus().Subscribe("*", [this](std::string_view topic, Args a) {
      if (!topic.starts_with("Prof.") && !topic.starts_with("Kernel.Profile")) {
        return;
      }
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
    events_sub_.Disconnect();
    if (kernel_) {
      (void)kernel_->Shutdown();
    }
    plugins_.reset();
    registry_.reset();
    store_.reset();
    NetTest::TearDown();
    fs::remove_all(dir_);
  }
  void BootWith(const std::string& build) {
    Status s = plugins_->LoadDirectory(Build(build));
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = kernel_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  SessionId Join(const std::string& user) {
    return net_->sessions().Start(user, {}, "test", RealNow());
  }
  // The first event starting with `prefix` or `or_prefix` (waiting for it), or "".
  std::string Await(const std::string& prefix, const std::string& or_prefix = "") {
    std::string found;
    RunUntil(
        [&] {
          for (const std::string& e : events_) {
            if (e.rfind(prefix, 0) == 0 || (!or_prefix.empty() && e.rfind(or_prefix, 0) == 0)) {
              found = e;
              return true;
            }
          }
          return false;
        },
        milliseconds(5000));
    return found;
  }
  void Publish(const char* topic, std::initializer_list<Value> args) {
    std::vector<Value> v(args);
    kernel_->bus().Publish(topic, v);
  }
  // Prof.Value for (session, path): "<state> <text>".
  std::string Get(SessionId s, const std::string& path) {
    events_.clear();
    Publish("Prof.Get", {Value::Handle(s), Value::String(path)});
    const std::string e = Await("Prof.Value");
    return e.empty() ? "" : e.substr(e.find(' ', std::string("Prof.Value ").size()) + 1);
  }
  Record Stored(const std::string& key) {
    std::promise<Result<Record>> p;
    store_->Read(key, [&p](Result<Record> r) { p.set_value(std::move(r)); });
    std::future<Result<Record>> f = p.get_future();
    RunUntil([&] { return f.wait_for(milliseconds(0)) == std::future_status::ready; });
    Result<Record> r = f.get();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Record{};
  }
  // Joins `user` and waits for the plugin to see its profile loaded.
  SessionId JoinLoaded(const std::string& user) {
    events_.clear();
    const SessionId s = Join(user);
    EXPECT_NE(Await("Prof.Loaded"), "") << "the profile of " << user << " did not load";
    return s;
  }
  std::string Add(SessionId s, int amount) {
    events_.clear();
    Publish("Prof.Add", {Value::Handle(s), Value::Int(amount)});
    return Await("Prof.Coins", "Prof.Error");
  }

  std::string dir_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<ProfileRegistry> registry_;
  std::unique_ptr<loader::PluginHost> plugins_;
  std::vector<std::string> events_;
  Connection events_sub_;
};

// The tests that make each call of the fixture's store (get, set, state, save, snapshots,
// rollback, transactions, manual keys, writes in stop()), on two builds of the same plugin: v1
// through molt.hpp's ProfileStore methods, v1_rev1 through the revision-1 Host spellings they
// replaced (deprecated, kept for one release). Both must behave the same against the kernel.
class ProfileCallsTest : public ProfileApiTest, public ::testing::WithParamInterface<const char*> {
 protected:
  // The build's tag, in every event it publishes.
  std::string tag() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(EverySpelling, ProfileCallsTest, ::testing::Values("v1", "v1_rev1"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

TEST_P(ProfileCallsTest, APluginDeclaresAStoreReadsAndWritesProfilesAndTheKernelSavesThem) {
  BootWith(GetParam());
  const SessionId s = JoinLoaded("ann");
  EXPECT_EQ(Await("Prof.Loaded"),
            "Prof.Loaded " + tag() + " " + std::to_string(s) + R"( {"coins":0})");
  EXPECT_EQ(Add(s, 5), "Prof.Coins " + tag() + " " + std::to_string(s) + " 5");
  EXPECT_EQ(Get(s, "/coins"), "2 5");
  EXPECT_EQ(Get(s, "/nothing"), R"(2 the Wallet profile of session )" + std::to_string(s) +
                                    R"( has nothing at "/nothing")");
  EXPECT_EQ(Stored("Wallet/ann").lease.owner, "host-a");

  net_->sessions().End(s, net::ExitReason::kClientClosed);  // the final save, then the release
  ASSERT_TRUE(RunUntil([&] { return Stored("Wallet/ann").lease.owner.empty(); }));
  const Record r = Stored("Wallet/ann");
  EXPECT_EQ(r.data.value_or(""), R"({"coins":5})");
  EXPECT_EQ(r.schema_version, 1u);
  EXPECT_EQ(Get(s, ""), "0 the Wallet profile of session " + std::to_string(s) +
                            " is none: wait for Kernel.ProfileLoaded");
}

TEST_P(ProfileCallsTest, ValidateRefusesASaveAndTheStoredRevisionStays) {
  BootWith(GetParam());
  const SessionId s = JoinLoaded("bo");
  Publish("Prof.Add", {Value::Handle(s), Value::Int(3)});
  Publish("Prof.Save", {});
  ASSERT_TRUE(RunUntil([&] { return Stored("Wallet/bo").revision == 1; }));
  Publish("Prof.Add", {Value::Handle(s), Value::Int(-10)});  // coins -7: validate refuses
  Publish("Prof.Save", {});
  ASSERT_TRUE(RunUntil([&] { return registry_->Find("Wallet")->stats().refused == 1; }));
  RunUntil([] { return false; }, milliseconds(50));
  const Record r = Stored("Wallet/bo");
  EXPECT_EQ(r.revision, 1u);
  EXPECT_EQ(r.data.value_or(""), R"({"coins":3})");
}

TEST_F(ProfileApiTest, DeclarationErrorsNameTheProblem) {
  BootWith("v1");
  auto declare = [&](const char* name, const char* defaults) {
    events_.clear();
    Publish("Prof.Declare", {Value::String(name), Value::String(defaults)});
    return Await("Prof.Declared");
  };
  EXPECT_EQ(declare("bad name!", "{}"),
            "Prof.Declared v1 -1 profile store name \"bad name!\" is not 1..64 characters of "
            "[A-Za-z0-9_.-]");
  EXPECT_EQ(declare("Other", "[1]"),
            "Prof.Declared v1 -1 the defaults of profile store \"Other\" are not a JSON object: "
            "give a JSON object such as {\"coins\":0}");
  const std::string taken = declare("Wallet", "{}");
  EXPECT_NE(taken.find("Prof.Declared v1 -8 profile store \"Wallet\" is declared by plugin "
                       "\"fx_profile"),
            std::string::npos)
      << taken;
  EXPECT_EQ(declare("Other", "{}"), "Prof.Declared v1 0 ");
}

TEST_F(ProfileApiTest, ASwapAdoptsTheStoreWithItsLoadedProfilesAndMigratesThem) {
  BootWith("v1");
  const SessionId s = JoinLoaded("cy");
  ASSERT_EQ(Add(s, 5), "Prof.Coins v1 " + std::to_string(s) + " 5");
  events_.clear();
  loader::SwapReport report = plugins_->Reload(Build("v2"), "test");
  ASSERT_TRUE(report.ok) << report.error;
  // Adopted, not reloaded: no second load, the document migrated in memory, v1's stop() write
  // kept, the new defaults filled in.
  EXPECT_EQ(Get(s, ""), R"(2 {"coins":5,"stopped_by":"v1","level":1,"title":"novice"})");
  EXPECT_EQ(std::count_if(events_.begin(), events_.end(),
                          [](const std::string& e) { return e.starts_with("Kernel.Profile"); }),
            0);
  EXPECT_EQ(Add(s, 2), "Prof.Coins v2 " + std::to_string(s) + " 7");
  net_->sessions().End(s, net::ExitReason::kClientClosed);
  ASSERT_TRUE(RunUntil([&] { return Stored("Wallet/cy").lease.owner.empty(); }));
  const Record r = Stored("Wallet/cy");
  EXPECT_EQ(r.schema_version, 2u);
  EXPECT_EQ(r.data.value_or(""), R"({"coins":7,"stopped_by":"v1","level":1,"title":"novice"})");
}

TEST_F(ProfileApiTest, AMigrationThatFailsFailsTheSwapAndTheOldBuildKeepsTheProfiles) {
  BootWith("v1");
  const SessionId s = JoinLoaded("di");
  ASSERT_EQ(Add(s, 5), "Prof.Coins v1 " + std::to_string(s) + " 5");
  loader::SwapReport report = plugins_->Reload(Build("v2_badmig"), "test");
  EXPECT_FALSE(report.ok);
  EXPECT_TRUE(report.restored) << report.error;
  EXPECT_NE(report.error.find("profile \"Wallet/di\": the migration from schema version 1 failed: "
                              "plugin \"fx_profile"),
            std::string::npos)
      << report.error;
  EXPECT_NE(report.error.find("migration refused"), std::string::npos) << report.error;
  EXPECT_EQ(Get(s, "/coins"), "2 5");
  EXPECT_EQ(Add(s, 1), "Prof.Coins v1 " + std::to_string(s) + " 6");
}

TEST_F(ProfileApiTest, ASwapThatFailsAfterMigratingGivesTheOldBuildItsDocumentsBack) {
  BootWith("v1");
  const SessionId s = JoinLoaded("jo");
  ASSERT_EQ(Add(s, 5), "Prof.Coins v1 " + std::to_string(s) + " 5");
  loader::SwapReport report = plugins_->Reload(Build("v2_failstart"), "test");
  EXPECT_FALSE(report.ok);
  ASSERT_TRUE(report.restored) << report.error;
  // v1 serves again with the document as it was before v2's migration (what v1's stop() wrote
  // included), at schema version 1.
  EXPECT_EQ(Get(s, ""), R"(2 {"coins":5,"stopped_by":"v1"})");
  EXPECT_EQ(Add(s, 1), "Prof.Coins v1 " + std::to_string(s) + " 6");
  net_->sessions().End(s, net::ExitReason::kClientClosed);
  ASSERT_TRUE(RunUntil([&] { return Stored("Wallet/jo").lease.owner.empty(); }));
  EXPECT_EQ(Stored("Wallet/jo").schema_version, 1u);
  EXPECT_EQ(Stored("Wallet/jo").data.value_or(""), R"({"coins":6,"stopped_by":"v1"})");
}

TEST_F(ProfileApiTest, ABuildReadingAnOlderSchemaCannotTakeLoadedProfilesOver) {
  BootWith("v1");
  const SessionId s = JoinLoaded("ed");
  loader::SwapReport report = plugins_->Reload(Build("v0"), "test");
  EXPECT_FALSE(report.ok);
  EXPECT_TRUE(report.restored) << report.error;
  EXPECT_NE(report.error.find("profile store \"Wallet\" holds documents at schema version 1 "
                              "(profile \"Wallet/ed\" is loaded): a build that reads up to 0 "
                              "cannot take it over"),
            std::string::npos)
      << report.error;
  EXPECT_EQ(Get(s, "/coins"), "2 0");
}

TEST_F(ProfileApiTest, ASwapToABuildWithoutTheStoreRetiresItWithFinalSaves) {
  BootWith("v1");
  const SessionId s = JoinLoaded("fu");
  ASSERT_EQ(Add(s, 4), "Prof.Coins v1 " + std::to_string(s) + " 4");
  loader::SwapReport report = plugins_->Reload(Build("none"), "test");
  ASSERT_TRUE(report.ok) << report.error;
  EXPECT_NE(std::find(report.retired.begin(), report.retired.end(), "profile store \"Wallet\""),
            report.retired.end());
  ASSERT_TRUE(RunUntil([&] { return Stored("Wallet/fu").lease.owner.empty(); }));
  EXPECT_EQ(Stored("Wallet/fu").data.value_or(""), R"({"coins":4,"stopped_by":"v1"})");
  EXPECT_EQ(registry_->Find("Wallet"), nullptr);
  EXPECT_TRUE(net_->sessions().Find(s) != nullptr) << "the player stays connected";
}

TEST_P(ProfileCallsTest, TheCloseDrainSavesWhatStopWrote) {
  BootWith(GetParam());
  const SessionId s = JoinLoaded("gil");
  ASSERT_EQ(Add(s, 9), "Prof.Coins " + tag() + " " + std::to_string(s) + " 9");
  kernel_->services().StopAll();  // the close phase: stop() writes /stopped_by
  std::optional<std::pair<std::size_t, std::size_t>> drained;
  registry_->Drain([&](std::size_t saved, std::size_t failed) { drained.emplace(saved, failed); });
  ASSERT_TRUE(RunUntil([&] { return drained.has_value(); }));
  EXPECT_EQ(drained->first, 1u);
  EXPECT_EQ(drained->second, 0u);
  const Record r = Stored("Wallet/gil");
  EXPECT_EQ(r.data.value_or(""), R"({"coins":9,"stopped_by":")" + tag() + R"("})");
  EXPECT_TRUE(r.lease.owner.empty());
}

TEST_P(ProfileCallsTest, SnapshotsAndTransactionsThroughTheAbi) {
  BootWith(GetParam());
  const SessionId a = JoinLoaded("hal");
  const SessionId b = JoinLoaded("ivy");
  ASSERT_EQ(Add(a, 10), "Prof.Coins " + tag() + " " + std::to_string(a) + " 10");
  events_.clear();
  Publish("Prof.Snapshot", {Value::Handle(a), Value::String("before")});
  const std::string snap = Await("Prof.Snapshotted");
  ASSERT_EQ(snap.rfind("Prof.Snapshotted " + tag() + " ", 0), 0u);
  const std::int64_t id =
      std::stoll(snap.substr(std::string("Prof.Snapshotted " + tag() + " ").size()));
  ASSERT_GT(id, 0);
  ASSERT_EQ(Add(a, 5), "Prof.Coins " + tag() + " " + std::to_string(a) + " 15");
  events_.clear();
  Publish("Prof.Rollback", {Value::Handle(a), Value::Int(id)});
  EXPECT_EQ(Await("Prof.RolledBack"), "Prof.RolledBack " + tag() + " 0");
  EXPECT_EQ(Get(a, "/coins"), "2 10");
  events_.clear();
  Publish("Prof.Rollback", {Value::Handle(a), Value::Int(id + 100)});
  EXPECT_EQ(Await("Prof.RolledBack"), "Prof.RolledBack " + tag() + " -2");  // MOLT_ERR_NOT_FOUND

  events_.clear();
  Publish("Prof.Trade", {Value::Handle(a), Value::Handle(b), Value::Int(4)});
  EXPECT_EQ(Await("Prof.Traded"), "Prof.Traded " + tag() + " 0 ");
  EXPECT_EQ(Get(a, "/coins"), "2 6");
  EXPECT_EQ(Get(b, "/coins"), "2 4");
  events_.clear();
  Publish("Prof.Trade", {Value::Handle(b), Value::Handle(a), Value::Int(100)});
  EXPECT_EQ(Await("Prof.Traded"),
            "Prof.Traded " + tag() +
                " -10 SaveAFailed: profile \"Wallet/ivy\": validate refused the "
                "transaction's document: coins below zero");
  EXPECT_EQ(Get(b, "/coins"), "2 4");
  events_.clear();
  Publish("Prof.Trade", {Value::Handle(a), Value::Handle(a), Value::Int(1)});  // the same one
  EXPECT_EQ(Await("Prof.Traded"), "Prof.Traded " + tag() + " -9 SameProfile: sessions " +
                                      std::to_string(a) + " and " + std::to_string(a) +
                                      " share one Wallet profile: a transaction needs two");
}

TEST_P(ProfileCallsTest, AManualKeyLoadsWithoutASessionAndIsReleasedBack) {
  BootWith(GetParam());
  events_.clear();
  Publish("Prof.Bank", {Value::Int(5)});
  EXPECT_EQ(Await("Prof.Banked"), "Prof.Banked " + tag() + " 5");
  events_.clear();
  Publish("Prof.Bank", {Value::Int(2)});
  EXPECT_EQ(Await("Prof.Banked"), "Prof.Banked " + tag() + " 7");
  EXPECT_EQ(Stored("Wallet/bank").lease.owner, "host-a");
  events_.clear();
  Publish("Prof.BankRelease", {});
  ASSERT_TRUE(RunUntil([&] { return Stored("Wallet/bank").lease.owner.empty(); }));
  EXPECT_EQ(Stored("Wallet/bank").data.value_or(""), R"({"coins":7})");
  Publish("Prof.BankRelease", {});
  EXPECT_EQ(Await("Prof.Error"),
            "Prof.Error " + tag() + " profile \"Wallet/bank\" is not loaded here");
}

TEST_F(ProfileApiTest, AHostWithoutProfilesRefusesTheSlots) {
  loader::PluginHost bare(*kernel_, dir_ + "/bare");
  abi::AttachNetwork(bare.shared(), net_.get());
  ASSERT_TRUE(bare.LoadDirectory(Build("v1")).ok());
  Status s = kernel_->Start();  // init declares the store
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("this host keeps no profiles"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace molt::kernel::store
