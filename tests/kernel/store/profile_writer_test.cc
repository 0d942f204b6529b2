// SPDX-License-Identifier: Apache-2.0
// ProfileWriter (kernel/src/store/profile_writer.h) over a real SQLite file, its completions on
// the kernel loop (profiles_fixture.h): what a profile's write carries (a changed and valid
// document, a renewal, a release), a batch written again until a full disk takes it, and a lost
// lease that stops the profile and kicks its session.
#include "kernel/src/store/profile_writer.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "kernel/src/store/profile_document.h"
#include "tests/kernel/store/profiles_fixture.h"

namespace molt::kernel::store {
namespace {

using std::chrono::milliseconds;

class ProfileWriterTest : public ProfilePartsTest {};

TEST_F(ProfileWriterTest, AWriteCarriesAChangedValidDocumentARenewalOrARelease) {
  ProfileSpec spec = Spec();
  spec.validate = [](std::string_view doc) {
    return doc.find("cheat") == std::string_view::npos ? Status::Ok()
                                                       : Status::Rejected("no cheats");
  };
  spec.mirror = true;
  MakeParts(std::move(spec));
  ProfileEntry& e = entries_.AddSession(1, "PlayerData/ada");
  e.token = 4;
  e.doc = ParseJson(R"({"coins":1})").value();

  Write clean = writer_->WriteFor(e, false);
  EXPECT_EQ(clean.key, "PlayerData/ada");
  EXPECT_EQ(clean.token, 4u);
  EXPECT_FALSE(clean.data.has_value()) << "nothing changed: a renewal only";
  EXPECT_GT(clean.renew_until, WallNow());
  EXPECT_FALSE(clean.release);

  e.version = 1;
  e.backup_now = true;
  Write dirty = writer_->WriteFor(e, true);
  EXPECT_EQ(dirty.data, R"({"coins":1})");
  EXPECT_EQ(dirty.schema_version, 1u);
  EXPECT_EQ(dirty.renew_until, 0) << "a release renews nothing";
  EXPECT_TRUE(dirty.release);
  EXPECT_TRUE(dirty.backup_now);
  EXPECT_FALSE(e.backup_now) << "asked for once";
  EXPECT_TRUE(dirty.mirror);
  EXPECT_EQ(dirty.backup_every, 24 * 3600 * 1000);

  e.doc = ParseJson(R"({"cheat":1})").value();
  EXPECT_FALSE(writer_->WriteFor(e, false).data.has_value()) << "refused by validate";
  EXPECT_EQ(stats_.refused, 1u);
}

TEST_F(ProfileWriterTest, ABatchTheStoreFailsIsWrittenAgainUntilItIsStored) {
  ProfileSpec spec = Spec();
  spec.backoff = {milliseconds(20)};
  MakeParts(std::move(spec));
  Plant("PlayerData/ada", "host-a", WallNow() + 600'000, "{}", 1);  // token 3, this host's
  store_->SetMaxPageCount(8);
  std::optional<std::vector<WriteResult>> stored;
  writer_->Persist({{.key = "PlayerData/ada",
                     .token = 3,
                     .data = "{\"blob\":\"" + std::string(100'000, 'y') + "\"}",
                     .schema_version = 1}},
                   "the test's save", [&stored](std::vector<WriteResult> r) { stored = r; });
  ASSERT_TRUE(RunUntil([&] { return stats_.save_failures >= 2; }));
  EXPECT_FALSE(stored.has_value());
  store_->SetMaxPageCount(0);
  ASSERT_TRUE(RunUntil([&] { return stored.has_value(); }));
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_TRUE((*stored)[0].status.ok());
  EXPECT_EQ(Stored("PlayerData/ada").revision, 8u);
}

TEST_F(ProfileWriterTest, ALostLeaseStopsTheProfileAndKicksItsSession) {
  MakeParts();
  ProfileEntry& e = entries_.AddSession(5, "PlayerData/ada");
  e.state = ProfileState::kLoaded;
  writer_->Lose(e, Status::Stale("profile \"PlayerData/ada\": the lease is host-b's"));
  EXPECT_EQ(e.state, ProfileState::kLost);
  EXPECT_EQ(stats_.lost, 1u);
  EXPECT_EQ(kicks_, (std::vector<std::string>{
                        "5: your PlayerData profile was opened on another server: this session "
                        "ends so that nothing is overwritten"}));
  ProfileEntry& bank = entries_.AddKey("bank", "PlayerData/bank");
  writer_->Lose(bank, Status::Stale("lost"));
  EXPECT_EQ(bank.state, ProfileState::kLost);
  EXPECT_EQ(kicks_.size(), 1u) << "a manual key has no session to kick";
}

}  // namespace
}  // namespace molt::kernel::store
