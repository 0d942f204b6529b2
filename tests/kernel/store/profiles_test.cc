// SPDX-License-Identifier: Apache-2.0
// Profiles (kernel/src/store/profiles.h), the driver as its parts make it: the load lifecycle,
// reading and writing, autosave, the final save and the drain, manual keys and declarations that
// come and go; over a real SQLite file, with sessions of a real network (started in process, and
// one joined by a real client over loopback), results delivered to the kernel loop as in moltd
// (profiles_fixture.h). Each part has a test file of its own too (profile_loader_test.cc, ...).
#include "kernel/src/store/profiles.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <future>
#include <mutex>

#include "tests/kernel/store/profiles_fixture.h"

namespace molt::kernel::store {
namespace {

namespace fs = std::filesystem;
using net::SessionId;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_F(ProfilesTest, AJoinLoadsANewProfileWithItsDefaultsThenProfileLoaded) {
  Start();
  const SessionId s = Join("ada");
  EXPECT_EQ(profiles_->state(s), ProfileState::kPending);  // loading off the kernel thread
  EXPECT_EQ(profiles_->Get(s, "/coins").status().message(),
            "the PlayerData profile of session " + std::to_string(s) +
                " is pending: wait for Kernel.ProfileLoaded");
  ASSERT_TRUE(Loaded(s));
  EXPECT_TRUE(Saw("Kernel.ProfileLoaded " + std::to_string(s)));
  EXPECT_EQ(Doc(s), R"({"coins":0,"items":[],"settings":{"music":true}})");
  EXPECT_EQ(Doc(s, "/settings/music"), "true");
  EXPECT_EQ(Stored("PlayerData/ada").lease.owner, "host-a");
}

TEST_F(ProfilesTest, WritesReachTheStoreByAutosaveAndTheFinalSaveReleasesTheLease) {
  ProfileSpec spec = Spec();
  spec.autosave = milliseconds(50);
  Start(std::move(spec));
  const SessionId s = Join("ada");
  ASSERT_TRUE(Loaded(s));
  ASSERT_TRUE(profiles_->Set(s, "/coins", "10").ok());
  ASSERT_TRUE(profiles_->Set(s, "/items/-", "\"sword\"").ok());
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().saves >= 1; }));
  Record r = Stored("PlayerData/ada");
  EXPECT_EQ(r.data, R"({"coins":10,"items":["sword"],"settings":{"music":true}})");
  EXPECT_EQ(r.schema_version, 1u);
  EXPECT_EQ(r.lease.owner, "host-a");
  // A write after the autosave, then the player leaves: the final save has it, and lets go.
  ASSERT_TRUE(profiles_->Set(s, "/coins", "11").ok());
  net_->sessions().End(s, net::ExitReason::kClientClosed);
  EXPECT_EQ(profiles_->state(s), ProfileState::kNone);
  ASSERT_TRUE(RunUntil([&] { return Stored("PlayerData/ada").lease.owner.empty(); }));
  EXPECT_EQ(*Stored("PlayerData/ada").data,
            R"({"coins":11,"items":["sword"],"settings":{"music":true}})");
}

// A player who rejoins loads what their previous session's final save wrote; while that save
// is still being tried (here the disk is full), the rejoin waits for it rather than loading the
// older revision.
TEST_F(ProfilesTest, ARejoinWaitsForThePreviousSessionsFinalSave) {
  ProfileSpec spec = Spec();
  spec.backoff = {milliseconds(20)};
  Start(std::move(spec));
  const SessionId first = Join("ada");
  ASSERT_TRUE(Loaded(first));
  ASSERT_TRUE(profiles_->Set(first, "/coins", "5").ok());
  net_->sessions().End(first, net::ExitReason::kClientClosed);
  const SessionId second = Join("ada");
  ASSERT_TRUE(Loaded(second));
  EXPECT_EQ(Doc(second, "/coins"), "5");

  store_->SetMaxPageCount(8);
  ASSERT_TRUE(profiles_->Set(second, "/blob", "\"" + std::string(100'000, 'y') + "\"").ok());
  net_->sessions().End(second, net::ExitReason::kClientClosed);
  const SessionId third = Join("ada");
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().save_failures >= 2; }));
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().lease_waits >= 1; }));
  EXPECT_EQ(profiles_->state(third), ProfileState::kPending);
  store_->SetMaxPageCount(0);
  ASSERT_TRUE(Loaded(third));
  EXPECT_EQ(Doc(third, "/blob").size(), 100'002u);
}

// A lease another host holds is waited for and taken over when it expires.
TEST_F(ProfilesTest, ALeaseHeldElsewhereIsWaitedForAndTakenOverAtExpiry) {
  Plant("PlayerData/ada", "host-b", WallNow() + 400, R"({"coins":3})", 1);
  Start();
  const SessionId s = Join("ada");
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().lease_waits >= 1; }));
  EXPECT_EQ(profiles_->state(s), ProfileState::kPending);
  ASSERT_TRUE(Loaded(s));
  EXPECT_EQ(Doc(s, "/coins"), "3");
  const Record r = Stored("PlayerData/ada");
  EXPECT_EQ(r.lease.owner, "host-a");
  EXPECT_EQ(r.lease.token, 4u);
}

// A player who leaves while waiting for a lease held elsewhere leaves nothing behind: no wait
// goes on, and nothing is written.
TEST_F(ProfilesTest, LeavingWhileWaitingForALeaseEndsTheWait) {
  Plant("PlayerData/ada", "host-b", WallNow() + 60'000, R"({"coins":3})", 1);
  Start();
  const SessionId s = Join("ada");
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().lease_waits >= 1; }));
  net_->sessions().End(s, net::ExitReason::kClientClosed);
  EXPECT_EQ(profiles_->state(s), ProfileState::kNone);
  RunUntil([] { return false; }, milliseconds(100));
  EXPECT_EQ(profiles_->stats().lease_waits, 1u);
  EXPECT_EQ(Stored("PlayerData/ada").lease.owner, "host-b");
}

// Fencing, as a player sees it: once another host took the lease over, this host never writes
// again; the session is kicked, saying why.
TEST_F(ProfilesTest, ALostLeaseKicksTheSessionAndNeverOverwritesTheNewOwner) {
  Listen();
  Start();
  Run([&] {
    molt::test::TestClient c(port_);
    ASSERT_EQ(c.Hello("ada").type(), molt::wire::Body::Welcome);
    SessionId s = 0;
    bool loaded = false;
    for (int i = 0; i < 500 && !loaded; ++i) {
      OnKernelSync([&] {
        auto ids = net_->sessions().ActiveIds();
        s = ids.empty() ? 0 : ids[0];
        loaded = s != 0 && profiles_->state(s) == ProfileState::kLoaded;
      });
      std::this_thread::sleep_for(milliseconds(2));
    }
    ASSERT_TRUE(loaded);
    OnKernelSync([&] { ASSERT_TRUE(profiles_->Set(s, "/coins", "99").ok()); });
    Plant("PlayerData/ada", "host-b", WallNow() + 60'000, R"({"coins":1})", 1);  // taken over
    OnKernelSync([&] { profiles_->SaveAll(); });
    molt::test::Frame bye = c.NextOf(molt::wire::Body::Bye);
    ASSERT_EQ(bye.type(), molt::wire::Body::Bye);
    EXPECT_EQ(bye.envelope()->body_as_Bye()->reason()->str(), "Kicked");
    EXPECT_EQ(bye.envelope()->body_as_Bye()->text()->str(),
              "your PlayerData profile was opened on another server: this session ends so that "
              "nothing is overwritten");
  });
  EXPECT_EQ(profiles_->stats().lost, 1u);
  EXPECT_EQ(*Stored("PlayerData/ada").data, R"({"coins":1})");
}

TEST_F(ProfilesTest, AProfileThatIsNotJsonFailsClosedAndKicksNamingTheKey) {
  Plant("PlayerData/ada", "", 0, "{\"coins\": 1", 1);
  std::vector<std::string> lines;
  auto capture =
      Logger::Get().Capture([&](std::string_view l, LogLevel) { lines.push_back(std::string(l)); });
  Start();
  const SessionId s = Join("ada");
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().load_failures == 1; }));
  EXPECT_EQ(net_->sessions().Get(s), nullptr);  // kicked, not given the defaults
  EXPECT_TRUE(Saw("Kernel.ProfileFailed " + std::to_string(s)));
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("[Profiles PlayerData] session") != std::string::npos &&
           l.find("profile \"PlayerData/ada\" (revision 7) is not valid JSON") !=
               std::string::npos &&
           l.find("no readable backup of it (0 kept): fix the record with the sqlite3 tool") !=
               std::string::npos;
  })) << ::testing::PrintToString(lines);
  EXPECT_EQ(*Stored("PlayerData/ada").data, "{\"coins\": 1");  // untouched
}

TEST_F(ProfilesTest, MigrationsRunStepByStepAndANewerSchemaFailsClosed) {
  Plant("PlayerData/old", "", 0, R"({"gold":4})", 0);
  Plant("PlayerData/future", "", 0, R"({"coins":4})", 9);
  ProfileSpec spec = Spec();
  spec.schema_version = 2;
  std::vector<std::uint32_t> steps;
  spec.migrate = [&](std::uint32_t from, std::string doc) -> Result<std::string> {
    steps.push_back(from);
    if (from == 0) {  // v0 called it gold
      return std::string(R"({"coins":)") + doc.substr(8, doc.size() - 9) + "}";
    }
    return doc;
  };
  Start(std::move(spec));
  const SessionId old = Join("old");
  ASSERT_TRUE(Loaded(old));
  EXPECT_EQ(steps, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(Doc(old, "/coins"), "4");
  const SessionId future = Join("future");
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().load_failures == 1; }));
  EXPECT_EQ(net_->sessions().Get(future), nullptr);
  // The migrated profile is saved at its new version.
  profiles_->SaveAll();
  ASSERT_TRUE(RunUntil([&] { return Stored("PlayerData/old").schema_version == 2; }));
}

TEST_F(ProfilesTest, AMigrationThatFailsOrIsMissingDoesNotLoad) {
  Plant("PlayerData/ada", "", 0, R"({"coins":1})", 0);
  ProfileSpec spec = Spec();
  spec.schema_version = 1;
  spec.migrate = [](std::uint32_t, std::string) -> Result<std::string> {
    return Status::Internal("the items table changed");
  };
  Start(std::move(spec));
  Join("ada");
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().load_failures == 1; }));
  EXPECT_EQ(*Stored("PlayerData/ada").data, R"({"coins":1})");
}

TEST_F(ProfilesTest, ADocumentValidateRefusesIsNotSavedAndTheLeaseIsStillRenewed) {
  ProfileSpec spec = Spec();
  spec.validate = [](std::string_view doc) {
    return doc.find("\"coins\":-") != std::string_view::npos
               ? Status::Rejected("coins must not be negative")
               : Status::Ok();
  };
  Start(std::move(spec));
  const SessionId s = Join("ada");
  ASSERT_TRUE(Loaded(s));
  profiles_->SaveAll();
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().saves == 1; }));
  const WallMillis first_expiry = Stored("PlayerData/ada").lease.expires;
  ASSERT_TRUE(profiles_->Set(s, "/coins", "-5").ok());
  std::this_thread::sleep_for(milliseconds(5));
  profiles_->SaveAll();
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().refused == 1; }));
  ASSERT_TRUE(RunUntil([&] { return Stored("PlayerData/ada").lease.expires > first_expiry; }));
  EXPECT_EQ(*Stored("PlayerData/ada").data, R"({"coins":0,"items":[],"settings":{"music":true}})");
}

// A full disk: the autosave fails, the profiles stay dirty in memory and are saved once there is
// room again.
TEST_F(ProfilesTest, DetachedProfilesKeepValidateVerdictsAndLoadsWaitForTheNextDeclaration) {
  ProfileSpec spec = Spec();
  int validated = 0;
  spec.validate = [&validated](std::string_view doc) {
    ++validated;
    return doc.find("\"coins\":-") != std::string_view::npos
               ? Status::Rejected("coins must not be negative")
               : Status::Ok();
  };
  Start(spec);
  const SessionId bad = Join("ada");
  const SessionId good = Join("bob");
  ASSERT_TRUE(Loaded(bad) && Loaded(good));
  ASSERT_TRUE(profiles_->Set(bad, "/coins", "-5").ok());
  ASSERT_TRUE(profiles_->Set(good, "/coins", "5").ok());
  profiles_->Detach();  // the declaring instance stops: its validate runs now, for both
  EXPECT_EQ(validated, 2);
  EXPECT_FALSE(profiles_->attached());

  // A join while detached loads (the lease is taken) but waits for a declaration.
  const SessionId late = Join("cid");
  ASSERT_TRUE(RunUntil([&] { return Stored("PlayerData/cid", false).lease.owner == "host-a"; }));
  RunUntil([] { return false; }, milliseconds(30));
  EXPECT_EQ(profiles_->state(late), ProfileState::kPending);

  // Saves while detached keep the verdicts: ada's document is refused, bob's written.
  profiles_->SaveAll();
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().saves == 1; }));
  EXPECT_EQ(profiles_->stats().refused, 1u);
  EXPECT_EQ(validated, 2);
  EXPECT_EQ(*Stored("PlayerData/bob").data, R"({"coins":5,"items":[],"settings":{"music":true}})");

  spec.defaults = R"({"coins":0,"items":[],"settings":{"music":true},"rank":"new"})";
  ASSERT_TRUE(profiles_->Adopt(spec).ok());
  ASSERT_TRUE(Loaded(late));
  EXPECT_EQ(profiles_->Get(late, "/rank").value(), "\"new\"");
  EXPECT_EQ(profiles_->Get(good, "/rank").value(), "\"new\"")
      << "new defaults fill loaded documents";
}

// Loads that landed while detached finish at the next declaration, in turn; a ProfileLoaded
// handler of the first may end the second's session meanwhile, which then is simply gone.
TEST_F(ProfilesTest, AdoptionSkipsAParkedLoadWhoseSessionAnEarlierHandlerEnded) {
  Start();
  profiles_->Detach();
  const SessionId cid = Join("cid");
  const SessionId dan = Join("dan");
  ASSERT_TRUE(RunUntil([&] {
    return Stored("PlayerData/cid", false).lease.owner == "host-a" &&
           Stored("PlayerData/dan", false).lease.owner == "host-a";
  }));
  RunUntil([] { return false; }, milliseconds(30));  // both completions reach the kernel
  ASSERT_EQ(profiles_->state(cid), ProfileState::kPending);
  ASSERT_EQ(profiles_->state(dan), ProfileState::kPending);
  Connection kick = kernel_->bus().Subscribe("Kernel.ProfileLoaded", [&](std::string_view, Args a) {
    const SessionId loaded = a[0].AsHandle();
    net_->sessions().End(loaded == cid ? dan : cid, net::ExitReason::kKicked);
  });
  ASSERT_TRUE(profiles_->Adopt(Spec()).ok());
  kick.Disconnect();
  // Exactly one of them loaded (the first in turn); the other's session ended, its lease let go.
  const bool cid_first = profiles_->state(cid) == ProfileState::kLoaded;
  const SessionId ended = cid_first ? dan : cid;
  EXPECT_EQ(profiles_->state(cid_first ? cid : dan), ProfileState::kLoaded);
  EXPECT_EQ(profiles_->state(ended), ProfileState::kNone);
  const std::string ended_key = cid_first ? "PlayerData/dan" : "PlayerData/cid";
  ASSERT_TRUE(RunUntil([&] { return Stored(ended_key).lease.owner.empty(); }));
}

TEST_F(ProfilesTest, AdoptionMigratesLoadedDocumentsAllOrNone) {
  Start();
  const SessionId a = Join("ada");
  const SessionId b = Join("bob");
  ASSERT_TRUE(Loaded(a) && Loaded(b));
  ASSERT_TRUE(profiles_->Set(b, "/coins", "7").ok());
  profiles_->Detach();
  ProfileSpec next = Spec();
  next.schema_version = 2;
  next.migrate = [](std::uint32_t, std::string doc) -> Result<std::string> {
    if (doc.find("\"coins\":7") != std::string::npos) {
      return Status::Rejected("seven is unlucky");
    }
    return doc.substr(0, doc.size() - 1) + R"(,"v2":true})";
  };
  Status refused = profiles_->Adopt(next);
  EXPECT_EQ(refused.message(),
            "profile \"PlayerData/bob\": the migration from schema version 1 failed: seven is "
            "unlucky");
  EXPECT_FALSE(profiles_->attached());
  EXPECT_FALSE(profiles_->Get(a, "/v2").ok()) << "nothing changed";

  ASSERT_TRUE(profiles_->Set(b, "/coins", "8").ok());
  ASSERT_TRUE(profiles_->Adopt(next).ok());
  EXPECT_EQ(profiles_->Get(a, "/v2").value(), "true");
  EXPECT_EQ(profiles_->Get(b, "/v2").value(), "true");
}

TEST_F(ProfilesTest, ManualKeysLoadSaveAndReleaseWithoutASession) {
  Start();
  auto load = [&](const std::string& key) {
    std::optional<Status> out;
    profiles_->LoadKey(key, [&](Status s) { out = std::move(s); });
    RunUntil([&] { return out.has_value(); }, milliseconds(10000));
    return out.value_or(Status::Internal("no answer"));
  };
  ASSERT_TRUE(load("guild:7").ok());
  const SessionId bank = profiles_->KeySession("guild:7");
  ASSERT_NE(bank, 0u);
  EXPECT_EQ(profiles_->Get(bank, "/coins").value(), "0");  // the defaults, like a session's
  ASSERT_TRUE(profiles_->Set(bank, "/coins", "100").ok());
  profiles_->SaveAll();
  ASSERT_TRUE(RunUntil([&] { return Stored("PlayerData/guild:7").revision == 1; }));
  EXPECT_EQ(Stored("PlayerData/guild:7").lease.owner, "host-a");
  EXPECT_EQ(load("guild:7").message(), "profile \"PlayerData/guild:7\" is already loaded here");
  EXPECT_EQ(load("").code(), Status::Code::kInvalidArgument);

  // A transaction between a player and the bank.
  const SessionId ada = Join("ada");
  ASSERT_TRUE(Loaded(ada));
  std::optional<TxnResult> paid;
  profiles_->Transact(
      "", bank, ada,
      [](std::string& from, std::string& to) {
        from = R"({"coins":90})";
        to = R"({"coins":10})";
        return Status::Ok();
      },
      [&](TxnResult r) { paid = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return paid.has_value(); }));
  EXPECT_TRUE(paid->ok()) << paid->message;

  ASSERT_TRUE(profiles_->ReleaseKey("guild:7").ok());
  EXPECT_EQ(profiles_->KeySession("guild:7"), 0u);
  ASSERT_TRUE(RunUntil([&] { return Stored("PlayerData/guild:7").lease.owner.empty(); }));
  EXPECT_EQ(*Stored("PlayerData/guild:7").data,
            R"({"coins":90})");  // the transaction's document, as committed
  EXPECT_EQ(profiles_->ReleaseKey("guild:7").message(),
            "profile \"PlayerData/guild:7\" is not loaded here");

  // A key leased elsewhere is waited for; ReleaseAllKeys lets every key go.
  Plant("PlayerData/world", "host-b", WallNow() + 300, nullptr, 1);
  ASSERT_TRUE(load("world").ok());
  ASSERT_TRUE(load("guild:8").ok());
  profiles_->ReleaseAllKeys();
  ASSERT_TRUE(RunUntil([&] {
    return Stored("PlayerData/world").lease.owner.empty() &&
           Stored("PlayerData/guild:8").lease.owner.empty();
  }));
  EXPECT_EQ(profiles_->KeySession("world"), 0u);
}

TEST_F(ProfilesTest, AFullDiskKeepsProfilesDirtyAndSavesThemWhenSpaceReturns) {
  ProfileSpec spec = Spec();
  spec.backoff = {milliseconds(20)};
  Start(std::move(spec));
  const SessionId s = Join("ada");
  ASSERT_TRUE(Loaded(s));
  profiles_->SaveAll();
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().saves == 1; }));
  store_->SetMaxPageCount(8);
  ASSERT_TRUE(profiles_->Set(s, "/blob", "\"" + std::string(200'000, 'x') + "\"").ok());
  profiles_->SaveAll();
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().save_failures >= 2; }));  // retried
  store_->SetMaxPageCount(0);
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().saves == 2; }));
  EXPECT_EQ(*Stored("PlayerData/ada").data, Doc(s));
}

// A store that cannot be reached (here another process holds the file's write lock past the
// busy timeout; on PostgreSQL, a restarting server) never kicks a joining player: the session
// waits with its profile pending and loads once the store answers.
TEST_F(ProfilesTest, AStoreThatCannotBeReachedKeepsAJoinPendingUntilItAnswers) {
  SqliteOptions quick;
  quick.busy_timeout = milliseconds(20);
  store_ = OpenStore(quick);
  ProfileSpec spec = Spec();
  spec.backoff = {milliseconds(20)};
  Start(std::move(spec));
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::vector<std::string> lines;
  std::mutex mu;
  auto capture = Logger::Get().Capture([&](std::string_view l, LogLevel) {
    std::lock_guard lock(mu);
    lines.push_back(std::string(l));
  });
  const SessionId s = Join("bob");
  ASSERT_TRUE(RunUntil([&] {
    std::lock_guard lock(mu);
    return std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
      return l.find("waits with its profile pending, trying again in") != std::string::npos;
    });
  })) << ::testing::PrintToString(lines);
  EXPECT_EQ(profiles_->state(s), ProfileState::kPending);
  EXPECT_NE(net_->sessions().Get(s), nullptr) << "kicked";
  EXPECT_EQ(profiles_->stats().load_failures, 0u);
  ASSERT_EQ(sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(holder);
  EXPECT_TRUE(Loaded(s));
  EXPECT_TRUE(Saw("Kernel.ProfileLoaded " + std::to_string(s)));
}

// The close: every profile's final save and release in one batch; sessions keep their link.
TEST_F(ProfilesTest, TheDrainSavesAndReleasesEveryProfile) {
  Start();
  std::vector<SessionId> ids;
  for (int i = 0; i < 20; ++i) {
    ids.push_back(Join("p" + std::to_string(i)));
  }
  for (SessionId s : ids) {
    ASSERT_TRUE(Loaded(s));
    ASSERT_TRUE(profiles_->Set(s, "/coins", std::to_string(s)).ok());
  }
  std::size_t saved = 0;
  bool done = false;
  profiles_->Drain([&](std::size_t n, std::size_t failed) {
    saved = n;
    done = failed == 0;
  });
  ASSERT_TRUE(RunUntil([&] { return done; }));
  EXPECT_EQ(saved, 20u);
  for (int i = 0; i < 20; ++i) {
    const Record r = Stored("PlayerData/p" + std::to_string(i));
    EXPECT_EQ(r.lease.owner, "");
    EXPECT_EQ(*r.data, R"({"coins":)" + std::to_string(ids[i]) +
                           R"(,"items":[],"settings":{"music":true}})");
  }
  EXPECT_EQ(net_->sessions().count(), 20u);
  net_->sessions().End(ids[0], net::ExitReason::kServerShutdown);  // nothing left to save
  EXPECT_EQ(profiles_->stats().saves, 20u);
}

// An autosave of many profiles builds its one batch a slice per scheduler step: every dirty
// profile is written, in one transaction, and the kernel thread keeps stepping meanwhile.
TEST_F(ProfilesTest, ALargeAutosaveIsBuiltAcrossStepsAndWritesEveryProfileOnce) {
  Start();
  std::vector<SessionId> ids;
  for (int i = 0; i < 10000; ++i) {
    ids.push_back(Join("p" + std::to_string(i)));
  }
  ASSERT_TRUE(RunUntil([&] { return profiles_->loaded_count() == ids.size(); }));
  const std::string pad = "\"" + std::string(1000, 'x') + "\"";
  for (SessionId s : ids) {
    ASSERT_TRUE(profiles_->Set(s, "/pad", pad).ok());
  }
  const std::uint64_t steps = kernel_->scheduler().stats().steps;
  profiles_->SaveAll();
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().saves == ids.size(); }));
  EXPECT_GT(kernel_->scheduler().stats().steps, steps + 1);  // it took more than one step
  EXPECT_EQ(store_->stats().batches, 1u);
}

TEST_F(ProfilesTest, DefaultsThatAreNotAJsonObjectAreReportedAndNotUsed) {
  std::vector<std::string> lines;
  auto capture =
      Logger::Get().Capture([&](std::string_view l, LogLevel) { lines.push_back(std::string(l)); });
  ProfileSpec spec = Spec();
  spec.defaults = "[1, 2";
  Start(std::move(spec));
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("[Profiles PlayerData] the defaults are not valid JSON", 0) == 0 &&
           l.find("(give a JSON object)") != std::string::npos;
  })) << ::testing::PrintToString(lines);
  const SessionId s = Join("ada");
  ASSERT_TRUE(Loaded(s));
  EXPECT_EQ(Doc(s), "{}");
}

TEST_F(ProfilesTest, PathsAreJsonPointersWithClearErrors) {
  Start();
  const SessionId s = Join("ada");
  ASSERT_TRUE(Loaded(s));
  EXPECT_TRUE(profiles_->Set(s, "/a~1b/c~0d", "1").ok());
  EXPECT_EQ(Doc(s, "/a~1b"), R"({"c~d":1})");
  EXPECT_EQ(profiles_->Get(s, "/nope").status().code(), Status::Code::kNotFound);
  EXPECT_EQ(profiles_->Set(s, "coins", "1").message(),
            "the path \"coins\" is not a JSON Pointer: start it with '/' (\"/coins\")");
  EXPECT_EQ(profiles_->Set(s, "/coins", "{oops").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(profiles_->Set(s, "", "[1]").message(), "a profile document is a JSON object");
  EXPECT_EQ(profiles_->Set(s, "/items/5", "1").code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace molt::kernel::store
