// SPDX-License-Identifier: Apache-2.0
// Profiles' backups (kernel/src/store/profile_backups.cc): a record that does not decode is
// restored from the newest readable backup; with backups off it fails closed.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <utility>

#include "kernel/src/store/profiles.h"
#include "tests/kernel/store/profiles_fixture.h"

namespace molt::kernel::store {
namespace {

using net::SessionId;

TEST_F(ProfilesTest, ARecordThatDoesNotDecodeIsRestoredFromTheNewestReadableBackup) {
  Start();
  SessionId s = Join("ada");
  ASSERT_TRUE(Loaded(s));
  ASSERT_TRUE(profiles_->Set(s, "/coins", "5").ok());
  profiles_->SaveAll();  // the first save is backed up (none was ever taken)
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().saves == 1; }));
  ASSERT_TRUE(profiles_->Set(s, "/coins", "7").ok());
  net_->sessions().End(s, net::ExitReason::kClientClosed);  // saved, not backed up (not due)
  ASSERT_TRUE(RunUntil([&] { return Stored("PlayerData/ada").lease.owner.empty(); }));
  // The record breaks; a newer backup is broken too.
  Plant("PlayerData/ada", "", 0, "{\"coins\": 7", 1);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO profile_backups VALUES ('PlayerData/ada', 1, '[broken', 1, "
                         "9, 99999999999999)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);

  s = Join("ada");
  ASSERT_TRUE(Loaded(s));
  EXPECT_TRUE(Saw("Kernel.ProfileRestored " + std::to_string(s)));
  EXPECT_EQ(profiles_->Get(s, "/coins").value(), "5");  // the backup's: what the first save wrote
  EXPECT_EQ(profiles_->stats().restored, 1u);
  profiles_->SaveAll();  // the restored document replaces the bad record
  ASSERT_TRUE(RunUntil([&] {
    return Stored("PlayerData/ada").data.value_or("").find("\"coins\":5") != std::string::npos;
  }));
}

TEST_F(ProfilesTest, WithoutBackupsABadRecordFailsClosed) {
  ProfileSpec spec = Spec();
  spec.backup_interval = Duration::zero();
  Start(std::move(spec));
  Plant("PlayerData/bo", "", 0, "[1]", 1);
  const SessionId s = Join("bo");
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().load_failures == 1; }));
  EXPECT_EQ(net_->sessions().Get(s), nullptr);  // kicked, not given the defaults
  EXPECT_EQ(profiles_->stats().restored, 0u);
  EXPECT_EQ(*Stored("PlayerData/bo").data, "[1]");
}

}  // namespace
}  // namespace molt::kernel::store
