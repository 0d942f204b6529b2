// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/store/profiles_fixture.h
//
// ProfilesTest: the driver (kernel/src/store/profiles.h) over a real SQLite file in a temporary
// directory, with the sessions of a real network (NetTest, net_fixture.h) and the store's results
// delivered to the kernel loop as in moltd. ProfilePartsTest: the same, with the driver's parts
// made one by one for the tests of each part (the entries, the declaration, the writer, the
// backups, the loader), wired as Profiles wires them, the kicks recorded. The tests of every part
// of the driver share them: fixture classes, so they are not in an anonymous namespace.
#ifndef MOLT_TESTS_KERNEL_STORE_PROFILES_FIXTURE_H_
#define MOLT_TESTS_KERNEL_STORE_PROFILES_FIXTURE_H_

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kernel/src/store/profile_backups.h"
#include "kernel/src/store/profile_declaration.h"
#include "kernel/src/store/profile_entries.h"
#include "kernel/src/store/profile_loader.h"
#include "kernel/src/store/profile_writer.h"
#include "kernel/src/store/profiles.h"
#include "kernel/src/store/sqlite_store.h"
#include "net_fixture.h"
#include "tests/support/run_on_loop.h"

namespace molt::kernel::store {

class ProfilesTest : public net::NetTest {
 protected:
  void SetUp() override {
    NetTest::SetUp();
    dir_ = ::testing::TempDir() + "molt_profiles_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = dir_ + "/profiles.db";
    store_ = OpenStore();
    loaded_sub_ = kernel_->bus().Subscribe("Kernel.*", [this](std::string_view t, Args a) {
      if (t.starts_with("Kernel.Profile")) {
        events_.push_back(std::string(t) + " " + std::to_string(a[0].AsHandle()));
      }
    });
  }
  void TearDown() override {
    profiles_.reset();
    store_.reset();
    other_.reset();
    loaded_sub_.Disconnect();
    NetTest::TearDown();
    std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<SqliteStore> OpenStore(SqliteOptions options = {}) {
    auto s = SqliteStore::Open(
        path_, [this](std::function<void()> fn) { kernel_->loop().Post(std::move(fn)); },
        std::move(options));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }
  static ProfileSpec Spec() {
    ProfileSpec spec;
    spec.name = "PlayerData";
    spec.defaults = R"({"coins":0,"items":[],"settings":{"music":true}})";
    spec.schema_version = 1;
    spec.autosave = std::chrono::seconds(3600);  // tests save explicitly unless they say otherwise
    spec.lease_ttl = std::chrono::seconds(180);
    return spec;
  }
  void Start(ProfileSpec spec = Spec()) {
    profiles_ = std::make_unique<Profiles>(*kernel_, *net_, *store_, "host-a", std::move(spec));
  }
  net::SessionId Join(const std::string& user) {
    return net_->sessions().Start(user, {}, "test", RealNow());
  }
  bool Loaded(net::SessionId s) {
    return RunUntil([&] { return profiles_->state(s) == ProfileState::kLoaded; },
                    std::chrono::milliseconds(5000));
  }
  // The stored row, read on another connection (what an operator sees). `must_exist` false: a
  // poll for a row that may not be written yet (an empty Record until it is).
  Record Stored(const std::string& key, bool must_exist = true) {
    std::promise<Result<Record>> p;
    other_ = other_ ? std::move(other_) : OpenStore();
    other_->Read(key, [&p](Result<Record> r) { p.set_value(std::move(r)); });
    std::future<Result<Record>> f = p.get_future();
    RunUntil([&] { return f.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready; });
    Result<Record> r = f.get();
    EXPECT_TRUE(r.ok() || !must_exist) << r.status().ToString();
    return r.ok() ? *r : Record{};
  }
  // Writes a row as another host would (a lease of its own, a document).
  void Plant(const std::string& key, const std::string& owner, WallMillis expires, const char* data,
             int schema_version) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db,
                       "INSERT OR REPLACE INTO profiles (key, data, schema_version, revision, "
                       "lease_owner, lease_token, lease_expires_ms, updated_ms) VALUES (?1, ?2, "
                       "?3, 7, ?4, 3, ?5, 0)",
                       -1, &st, nullptr);
    sqlite3_bind_text(st, 1, key.c_str(), -1, SQLITE_TRANSIENT);
    if (data != nullptr) {
      sqlite3_bind_text(st, 2, data, -1, SQLITE_TRANSIENT);
    }
    sqlite3_bind_int(st, 3, schema_version);
    if (!owner.empty()) {
      sqlite3_bind_text(st, 4, owner.c_str(), -1, SQLITE_TRANSIENT);
    }
    sqlite3_bind_int64(st, 5, expires);
    ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  // Runs `fn` on the kernel thread (from a client body) and waits for it.
  void OnKernelSync(const std::function<void()>& fn) { molt::test::RunOnLoop(kernel_->loop(), fn); }
  // The document (or the value at `pointer`), or "<error>".
  std::string Doc(net::SessionId s, std::string_view pointer = "") {
    Result<std::string> r = profiles_->Get(s, pointer);
    return r.ok() ? *r : "<" + r.status().message() + ">";
  }
  bool Saw(const std::string& e) const {
    return std::find(events_.begin(), events_.end(), e) != events_.end();
  }

  std::string dir_;
  std::string path_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<SqliteStore> other_;
  std::unique_ptr<Profiles> profiles_;
  std::vector<std::string> events_;
  Connection loaded_sub_;
};

class ProfilePartsTest : public ProfilesTest {
 protected:
  void TearDown() override {
    loader_.reset();  // the parts before the store their completions come from
    backups_.reset();
    writer_.reset();
    declaration_.reset();
    ProfilesTest::TearDown();
  }
  // The declaration, writer, backups and loader of one store of `spec`.
  void MakeParts(ProfileSpec spec = Spec()) {
    declaration_ = std::make_unique<ProfileDeclaration>(std::move(spec), log_);
    writer_ = std::make_unique<ProfileWriter>(kernel_->scheduler(), *store_, *declaration_, stats_,
                                              log_, Kick());
    backups_ = std::make_unique<ProfileBackups>(*store_, entries_, *declaration_);
    loader_ =
        std::make_unique<ProfileLoader>(kernel_->scheduler(), kernel_->bus(), *store_, "host-a",
                                        entries_, *declaration_, *backups_, stats_, log_, Kick());
  }
  ProfileKick Kick() {
    return [this](net::SessionId session, std::string reason) {
      kicks_.push_back(std::to_string(session) + ": " + reason);
    };
  }
  // An entry for session `id` of user `user`, loaded through the loader; false when it did not
  // load.
  bool LoadSession(net::SessionId id, const std::string& user) {
    entries_.AddSession(id, "PlayerData/" + user);
    loader_->Load(id, 0);
    return RunUntil([&] {
      const ProfileEntry* e = entries_.Find(id);
      return e != nullptr && e->state == ProfileState::kLoaded;
    });
  }

  const LogScope log_{"Profiles PlayerData"};
  ProfileEntries entries_;
  ProfileStats stats_;
  std::vector<std::string> kicks_;
  std::unique_ptr<ProfileDeclaration> declaration_;
  std::unique_ptr<ProfileWriter> writer_;
  std::unique_ptr<ProfileBackups> backups_;
  std::unique_ptr<ProfileLoader> loader_;
};

}  // namespace molt::kernel::store

#endif  // MOLT_TESTS_KERNEL_STORE_PROFILES_FIXTURE_H_
