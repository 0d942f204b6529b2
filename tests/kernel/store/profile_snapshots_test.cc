// SPDX-License-Identifier: Apache-2.0
// Profiles' snapshots (kernel/src/store/profile_snapshots.h): ProfileSnapshots on its own, on
// entries built in the test, then through the driver: the newest eight kept, rollbacks that keep
// the snapshot, an evicted id named, a rollback saved like any write.
#include "kernel/src/store/profile_snapshots.h"

#include <gtest/gtest.h>

#include <boost/json/value.hpp>
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

TEST(ProfileSnapshotsTest, ALoadedDocumentIsCopiedAndPutBackUnlessInATransaction) {
  ProfileEntries entries;
  ProfileSpec spec;
  spec.name = "PlayerData";
  ProfileDeclaration declaration(std::move(spec), LogScope("Profiles PlayerData"));
  ProfileSnapshots snapshots(entries, declaration);
  ProfileEntry& e = entries.AddSession(3, "PlayerData/ada");
  EXPECT_EQ(snapshots.Take(3, "early").status().message(),
            "the PlayerData profile of session 3 is pending: there is nothing to snapshot");
  e.state = ProfileState::kLoaded;
  e.doc = boost::json::object{{"coins", 1}};
  const std::uint64_t first = snapshots.Take(3, "one coin").value();
  e.doc.as_object()["coins"] = 2;
  ++e.version;
  const std::vector<SnapshotInfo> kept = snapshots.List(3).value();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].id, first);
  EXPECT_EQ(kept[0].label, "one coin");
  e.in_txn = true;
  EXPECT_EQ(snapshots.Rollback(3, first).message(),
            "the PlayerData profile of session 3 is in a transaction: roll back on a later step");
  e.in_txn = false;
  ASSERT_TRUE(snapshots.Rollback(3, first).ok());
  EXPECT_EQ(e.doc.at("coins").as_int64(), 1);
  EXPECT_EQ(e.version, 2u) << "a rollback is a change: saved by the next save";
  EXPECT_EQ(snapshots.Rollback(3, first + 7).code(), Status::Code::kNotFound);
  EXPECT_EQ(snapshots.List(4).status().message(),
            "the PlayerData profile of session 4 is not loaded");
}
}  // namespace
}  // namespace molt::kernel::store
