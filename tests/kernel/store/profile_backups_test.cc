// SPDX-License-Identifier: Apache-2.0
// Profiles' backups (kernel/src/store/profile_backups.h): through the driver, a record that does
// not decode is restored from the newest readable backup, and with backups off it fails closed;
// ProfileBackups on its own (profiles_fixture.h): a backup asked for, the newest backup that
// decodes chosen, and the reason when none does.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <boost/json/serialize.hpp>
#include <optional>
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

class ProfileBackupsTest : public ProfilePartsTest {
 protected:
  // How Restore() ends for `key`.
  Result<RestoredDocument> Restore(const std::string& key) {
    std::optional<Result<RestoredDocument>> out;
    backups_->Restore(key, "it broke",
                      [&out](Result<RestoredDocument> r) { out.emplace(std::move(r)); });
    EXPECT_TRUE(RunUntil([&] { return out.has_value(); }));
    return out.has_value() ? std::move(*out) : Result<RestoredDocument>(Status::TimedOut("none"));
  }
  void PlantBackup(int slot, const char* data, int schema_version, std::int64_t taken) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    const std::string sql = "INSERT INTO profile_backups VALUES ('PlayerData/ada', " +
                            std::to_string(slot) + ", '" + data + "', " +
                            std::to_string(schema_version) + ", " + std::to_string(slot + 10) +
                            ", " + std::to_string(taken) + ")";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
};

TEST_F(ProfileBackupsTest, ABackupAskedForMarksTheLoadedProfile) {
  MakeParts();
  entries_.AddSession(1, "PlayerData/ada");
  EXPECT_EQ(backups_->BackupNow(1).message(), "the PlayerData profile of session 1 is not loaded");
  entries_.Find(1)->state = ProfileState::kLoaded;
  ASSERT_TRUE(backups_->BackupNow(1).ok());
  EXPECT_TRUE(entries_.Find(1)->backup_now);
}

TEST_F(ProfileBackupsTest, TheNewestBackupThatDecodesIsChosen) {
  MakeParts();
  EXPECT_EQ(Restore("PlayerData/ada").status().message(),
            "it broke; no readable backup of it (0 kept): fix the record with the sqlite3 tool "
            "(docs/profiles.md)");
  PlantBackup(0, "{\"coins\":3}", 1, 1000);
  PlantBackup(1, "[broken", 1, 3000);        // newest, and does not decode
  PlantBackup(2, "{\"coins\":4}", 9, 2000);  // of a newer schema than the declaration's
  Result<RestoredDocument> r = Restore("PlayerData/ada");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->slot, 0);
  EXPECT_EQ(r->revision, 10u);
  EXPECT_EQ(r->taken, 1000);
  EXPECT_EQ(r->where, "backup slot 0 of profile \"PlayerData/ada\" (revision 10)");
  EXPECT_EQ(boost::json::serialize(r->doc), R"({"coins":3,"items":[],"settings":{"music":true}})");
}
}  // namespace
}  // namespace molt::kernel::store
