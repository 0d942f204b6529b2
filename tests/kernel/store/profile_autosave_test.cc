// SPDX-License-Identifier: Apache-2.0
// ProfileAutosave (kernel/src/store/profile_autosave.h) over a real SQLite file, its completions
// on the kernel loop (profiles_fixture.h): a pass writes the dirty profiles and renews every
// lease, a failed batch keeps them dirty and is tried again after the backoff, a pass arms the
// next, and nothing is armed once the store closes.
#include "kernel/src/store/profile_autosave.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/kernel/store/profiles_fixture.h"

namespace molt::kernel::store {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class ProfileAutosaveTest : public ProfilePartsTest {
 protected:
  void TearDown() override {
    autosave_.reset();
    ProfilePartsTest::TearDown();
  }
  void MakeAutosave(ProfileSpec spec = Spec()) {
    MakeParts(std::move(spec));
    autosave_ = std::make_unique<ProfileAutosave>(kernel_->scheduler(), *store_, entries_,
                                                  *declaration_, *writer_, stats_, log_);
  }
  std::unique_ptr<ProfileAutosave> autosave_;
};

TEST_F(ProfileAutosaveTest, APassWritesTheDirtyProfilesAndRenewsEveryLease) {
  MakeAutosave();
  ASSERT_TRUE(LoadSession(1, "ada"));  // new: dirty
  ASSERT_TRUE(LoadSession(2, "bo"));
  entries_.Find(2)->saved_version = entries_.Find(2)->version;  // as if saved already
  const WallMillis lease_before = Stored("PlayerData/bo").lease.expires;
  autosave_->Run();
  ASSERT_TRUE(RunUntil([&] { return stats_.saves == 1; }));
  EXPECT_FALSE(entries_.Find(1)->dirty());
  EXPECT_EQ(*Stored("PlayerData/ada").data, R"({"coins":0,"items":[],"settings":{"music":true}})");
  EXPECT_FALSE(Stored("PlayerData/bo").data.has_value()) << "clean: not written";
  EXPECT_GE(Stored("PlayerData/bo").lease.expires, lease_before) << "renewed";
}

TEST_F(ProfileAutosaveTest, AFailedBatchKeepsTheProfilesDirtyAndIsTriedAgain) {
  ProfileSpec spec = Spec();
  spec.backoff = {milliseconds(20)};
  MakeAutosave(std::move(spec));
  ASSERT_TRUE(LoadSession(1, "ada"));
  entries_.Find(1)->doc.as_object()["blob"] = std::string(100'000, 'y');
  ++entries_.Find(1)->version;
  store_->SetMaxPageCount(8);
  autosave_->Run();
  ASSERT_TRUE(RunUntil([&] { return stats_.save_failures >= 2; })) << "tried again";
  EXPECT_TRUE(entries_.Find(1)->dirty());
  store_->SetMaxPageCount(0);
  ASSERT_TRUE(RunUntil([&] { return stats_.saves == 1; }));
  EXPECT_FALSE(entries_.Find(1)->dirty());
}

TEST_F(ProfileAutosaveTest, APassComesEveryPeriodUntilTheStoreCloses) {
  ProfileSpec spec = Spec();
  spec.autosave = milliseconds(30);
  MakeAutosave(std::move(spec));
  ASSERT_TRUE(LoadSession(1, "ada"));
  autosave_->Arm(milliseconds(30));
  ASSERT_TRUE(RunUntil([&] { return stats_.saves == 1; }));
  ++entries_.Find(1)->version;
  ASSERT_TRUE(RunUntil([&] { return stats_.saves == 2; })) << "the next pass, armed by the first";
  entries_.Close();
  autosave_->Stop();
  ++entries_.Find(1)->version;
  autosave_->Arm(milliseconds(1));
  EXPECT_FALSE(RunUntil([&] { return stats_.saves == 3; }, milliseconds(200)));
}

}  // namespace
}  // namespace molt::kernel::store
