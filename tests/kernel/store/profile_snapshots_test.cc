// SPDX-License-Identifier: Apache-2.0
// Profiles' snapshots (kernel/src/store/profile_snapshots.cc): the newest eight kept, rollbacks
// that keep the snapshot, an evicted id named, a rollback saved like any write.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernel/src/store/profiles.h"
#include "tests/kernel/store/profiles_fixture.h"

namespace molt::kernel::store {
namespace {

using net::SessionId;

TEST_F(ProfilesTest, SnapshotsKeepTheNewestEightAndSurviveRepeatedRollbacks) {
  Start();
  const SessionId s = Join("ada");
  ASSERT_TRUE(Loaded(s));
  const std::uint64_t first = profiles_->Snapshot(s, "start").value();
  ASSERT_TRUE(profiles_->Set(s, "/coins", "50").ok());
  const std::uint64_t rich = profiles_->Snapshot(s, "rich").value();
  ASSERT_TRUE(profiles_->Set(s, "/coins", "1").ok());
  ASSERT_TRUE(profiles_->Rollback(s, rich).ok());
  EXPECT_EQ(profiles_->Get(s, "/coins").value(), "50");
  ASSERT_TRUE(profiles_->Set(s, "/coins", "2").ok());
  ASSERT_TRUE(profiles_->Rollback(s, rich).ok());  // the snapshot stayed
  EXPECT_EQ(profiles_->Get(s, "/coins").value(), "50");
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(profiles_->Snapshot(s, "n" + std::to_string(i)).ok());
  }
  const std::vector<SnapshotInfo> kept = profiles_->Snapshots(s).value();
  ASSERT_EQ(kept.size(), Profiles::kSnapshots);
  EXPECT_EQ(kept.front().label, "rich");
  const Status evicted = profiles_->Rollback(s, first);
  EXPECT_EQ(evicted.code(), Status::Code::kNotFound);
  EXPECT_EQ(evicted.message(),
            "snapshot " + std::to_string(first) +
                " of profile \"PlayerData/ada\" is not kept (unknown, or older than the newest 8)");
  // A rollback is saved like any write.
  profiles_->SaveAll();
  ASSERT_TRUE(RunUntil([&] { return profiles_->stats().saves == 1; }));
  EXPECT_NE(Stored("PlayerData/ada").data->find("\"coins\":50"), std::string::npos);
}

}  // namespace
}  // namespace molt::kernel::store
