// SPDX-License-Identifier: Apache-2.0
// ProfileFinalSaves (kernel/src/store/profile_final_saves.h) over a real SQLite file, its
// completions on the kernel loop (profiles_fixture.h): a final save writes and lets the lease go
// while a rejoin waits for it, a profile still loading is let go when it lands, and the drain
// writes every profile in one batch once the transactions under way ended.
#include "kernel/src/store/profile_final_saves.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "tests/kernel/store/profiles_fixture.h"

namespace molt::kernel::store {
namespace {

class ProfileFinalSavesTest : public ProfilePartsTest {
 protected:
  void TearDown() override {
    final_saves_.reset();
    transactions_.reset();
    autosave_.reset();
    ProfilePartsTest::TearDown();
  }
  // The final saves over the parts MakeParts() made (the default spec's when none were).
  void MakeFinalSaves() {
    if (declaration_ == nullptr) {
      MakeParts();
    }
    autosave_ = std::make_unique<ProfileAutosave>(kernel_->scheduler(), *store_, entries_,
                                                  *declaration_, *writer_, stats_, log_);
    transactions_ = std::make_unique<ProfileTransactions>(
        *store_, entries_, *declaration_, *writer_, stats_, "host-a",
        [this](net::SessionId id) { final_saves_->FinalSave(id); });
    final_saves_ = std::make_unique<ProfileFinalSaves>(entries_, *loader_, *writer_, *transactions_,
                                                       *autosave_, stats_, log_);
  }
  std::unique_ptr<ProfileAutosave> autosave_;
  std::unique_ptr<ProfileTransactions> transactions_;
  std::unique_ptr<ProfileFinalSaves> final_saves_;
};

TEST_F(ProfileFinalSavesTest, AFinalSaveWritesAndLetsGoWhileARejoinWaitsForIt) {
  ProfileSpec spec = Spec();
  spec.backoff = {std::chrono::milliseconds(20)};
  MakeParts(std::move(spec));
  MakeFinalSaves();
  ASSERT_TRUE(LoadSession(1, "ada"));
  entries_.Find(1)->doc.as_object()["blob"] = std::string(100'000, 'y');
  ++entries_.Find(1)->version;
  store_->SetMaxPageCount(8);  // the final save fails and is tried again
  final_saves_->FinalSave(1);
  EXPECT_EQ(entries_.Find(1), nullptr);
  entries_.AddSession(2, "PlayerData/ada");  // the player is back before the save landed
  loader_->Load(2, 0);
  ASSERT_TRUE(RunUntil([&] { return stats_.lease_waits == 1 && stats_.save_failures >= 1; }));
  EXPECT_EQ(entries_.Find(2)->state, ProfileState::kPending) << "waits for this host's release";
  store_->SetMaxPageCount(0);
  ASSERT_TRUE(RunUntil([&] { return entries_.Find(2)->state == ProfileState::kLoaded; }));
  EXPECT_EQ(entries_.Find(2)->doc.at("blob").as_string().size(), 100'000u)
      << "the final save's document";
  EXPECT_EQ(stats_.saves, 1u);
}

TEST_F(ProfileFinalSavesTest, AProfileStillLoadingIsLetGoWhenItLands) {
  MakeFinalSaves();
  entries_.AddSession(1, "PlayerData/ada");
  loader_->Load(1, 0);
  final_saves_->FinalSave(1);
  EXPECT_TRUE(entries_.Find(1)->left);
  ASSERT_TRUE(RunUntil([&] { return entries_.Find(1) == nullptr; }));
  ASSERT_TRUE(RunUntil([&] { return Stored("PlayerData/ada").lease.owner.empty(); }));
  EXPECT_EQ(stats_.loaded, 0u);
}

TEST_F(ProfileFinalSavesTest, TheDrainWritesEveryProfileOnceTheTransactionsEnded) {
  MakeFinalSaves();
  ASSERT_TRUE(LoadSession(1, "ada"));
  ASSERT_TRUE(LoadSession(2, "bo"));
  std::optional<TxnResult> traded;
  transactions_->Transact(
      "t1", 1, 2,
      [](std::string& a, std::string& b) {
        a = R"({"coins":1})";
        b = R"({"coins":2})";
        return Status::Ok();
      },
      [&traded](TxnResult r) { traded = std::move(r); });
  ASSERT_TRUE(transactions_->busy());
  entries_.Close();
  std::optional<std::pair<std::size_t, std::size_t>> drained;
  final_saves_->Drain(
      [&drained](std::size_t saved, std::size_t failed) { drained.emplace(saved, failed); });
  EXPECT_NE(entries_.Find(1), nullptr) << "the drain waits for the transaction";
  ASSERT_TRUE(RunUntil([&] { return drained.has_value(); }));
  ASSERT_TRUE(traded.has_value());
  EXPECT_TRUE(traded->ok()) << traded->message;
  EXPECT_EQ(*drained, (std::pair<std::size_t, std::size_t>{2, 0}));
  EXPECT_EQ(entries_.Ids().size(), 0u);
  EXPECT_TRUE(Stored("PlayerData/ada").lease.owner.empty());
  EXPECT_EQ(*Stored("PlayerData/bo").data, R"({"coins":2})");
}

}  // namespace
}  // namespace molt::kernel::store
