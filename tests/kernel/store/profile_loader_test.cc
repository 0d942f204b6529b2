// SPDX-License-Identifier: Apache-2.0
// ProfileLoader (kernel/src/store/profile_loader.h) over a real SQLite file, its completions on
// the kernel loop (profiles_fixture.h): a new profile from the defaults, a lease held elsewhere
// waited for, one this host is releasing waited for until it lands, a load parked while no
// declaration is attached, a session gone meanwhile, and a failure that kicks naming the key.
#include "kernel/src/store/profile_loader.h"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <string>
#include <vector>

#include "tests/kernel/store/profiles_fixture.h"

namespace molt::kernel::store {
namespace {

using std::chrono::milliseconds;

class ProfileLoaderTest : public ProfilePartsTest {
 protected:
  ProfileState StateOf(net::SessionId id) {
    const ProfileEntry* e = entries_.Find(id);
    return e == nullptr ? ProfileState::kNone : e->state;
  }
};

TEST_F(ProfileLoaderTest, ANewProfileLoadsWithTheDefaultsAndTellsTheBus) {
  MakeParts();
  ASSERT_TRUE(LoadSession(1, "ada"));
  const ProfileEntry& e = *entries_.Find(1);
  EXPECT_EQ(boost::json::serialize(e.doc), R"({"coins":0,"items":[],"settings":{"music":true}})");
  EXPECT_TRUE(e.dirty()) << "saved at the next autosave";
  EXPECT_TRUE(Saw("Kernel.ProfileLoaded 1"));
  EXPECT_EQ(stats_.loaded, 1u);
  EXPECT_EQ(Stored("PlayerData/ada").lease.owner, "host-a");
}

TEST_F(ProfileLoaderTest, ALeaseHeldElsewhereIsWaitedForUntilItExpires) {
  MakeParts();
  Plant("PlayerData/ada", "host-b", WallNow() + 300, R"({"coins":7})", 1);
  entries_.AddSession(1, "PlayerData/ada");
  loader_->Load(1, 0);
  ASSERT_TRUE(RunUntil([&] { return stats_.lease_waits == 1; }));
  EXPECT_EQ(StateOf(1), ProfileState::kPending);
  ASSERT_TRUE(RunUntil([&] { return StateOf(1) == ProfileState::kLoaded; }));
  EXPECT_EQ(boost::json::serialize(entries_.Find(1)->doc),
            R"({"coins":7,"items":[],"settings":{"music":true}})");
}

TEST_F(ProfileLoaderTest, ALeaseThisHostIsReleasingIsWaitedForUntilTheReleaseLands) {
  MakeParts();
  Plant("PlayerData/ada", "host-a", WallNow() + 600'000, R"({"coins":7})", 1);
  loader_->Hold("PlayerData/ada");
  entries_.AddSession(1, "PlayerData/ada");
  loader_->Load(1, 0);
  ASSERT_TRUE(RunUntil([&] { return stats_.lease_waits == 1; }));
  EXPECT_FALSE(RunUntil([&] { return StateOf(1) != ProfileState::kPending; }, milliseconds(200)))
      << "no retry on the lease's own time";
  Plant("PlayerData/ada", "", 0, R"({"coins":8})", 1);  // the release lands
  loader_->Released("PlayerData/ada");
  ASSERT_TRUE(RunUntil([&] { return StateOf(1) == ProfileState::kLoaded; }));
  EXPECT_EQ(boost::json::serialize(entries_.Find(1)->doc.at("coins")), "8");
}

TEST_F(ProfileLoaderTest, ALoadThatLandsWhileDetachedIsParkedThenFinished) {
  MakeParts();
  declaration_->Detach(entries_);
  entries_.AddSession(1, "PlayerData/ada");
  loader_->Load(1, 0);
  ASSERT_TRUE(RunUntil([&] { return entries_.Find(1)->parked.has_value(); }));
  EXPECT_EQ(StateOf(1), ProfileState::kPending);
  ASSERT_TRUE(declaration_->Adopt(Spec(), entries_).ok());
  loader_->FinishParked();
  EXPECT_EQ(StateOf(1), ProfileState::kLoaded);
  EXPECT_FALSE(entries_.Find(1)->parked.has_value());
}

TEST_F(ProfileLoaderTest, ASessionGoneWhileItLoadedLetsTheLeaseGo) {
  MakeParts();
  entries_.AddSession(1, "PlayerData/ada").left = true;
  loader_->Load(1, 0);
  ASSERT_TRUE(RunUntil([&] { return entries_.Find(1) == nullptr; }));
  ASSERT_TRUE(RunUntil([&] { return Stored("PlayerData/ada").lease.owner.empty(); }));
  EXPECT_EQ(stats_.loaded, 0u);
}

TEST_F(ProfileLoaderTest, ARecordOfANewerSchemaFailsClosedAndKicksTheSession) {
  MakeParts();
  Plant("PlayerData/ada", "", 0, R"({"coins":1})", 9);
  entries_.AddSession(1, "PlayerData/ada");
  loader_->Load(1, 0);
  ASSERT_TRUE(RunUntil([&] { return stats_.load_failures == 1; }));
  EXPECT_EQ(StateOf(1), ProfileState::kFailed);
  EXPECT_TRUE(Saw("Kernel.ProfileFailed 1"));
  EXPECT_EQ(kicks_, (std::vector<std::string>{"1: your PlayerData profile could not be loaded; "
                                              "nothing was changed: try again later"}));
}

}  // namespace
}  // namespace molt::kernel::store
