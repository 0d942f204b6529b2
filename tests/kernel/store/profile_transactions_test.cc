// SPDX-License-Identifier: Apache-2.0
// Profiles' transactions (kernel/src/store/profile_transactions.h): two profiles changed at once
// or not at all, with the spec's reasons for each refusal, through the driver, then
// ProfileTransactions on its own with the parts the test makes (profiles_fixture.h): what is
// refused before the store, and a session that ends meanwhile saved once the transaction ends.
#include "kernel/src/store/profile_transactions.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernel/src/store/profiles.h"
#include "tests/kernel/store/profiles_fixture.h"

namespace molt::kernel::store {
namespace {

using net::SessionId;

TEST_F(ProfilesTest, ATransactionChangesTwoProfilesAtomicallyWithTheSpecsReasons) {
  ProfileSpec spec = Spec();
  spec.validate = [](std::string_view doc) {
    return doc.find("\"coins\":-") != std::string_view::npos ? Status::Rejected("coins below 0")
                                                             : Status::Ok();
  };
  Start(std::move(spec));
  const SessionId a = Join("ada");
  const SessionId b = Join("bo");
  ASSERT_TRUE(Loaded(a) && Loaded(b));
  ASSERT_TRUE(profiles_->Set(a, "/coins", "10").ok());
  // Moves `n` coins from the first document to the second.
  auto give = [](int n) {
    return [n](std::string& from, std::string& to) -> Status {
      auto take = [](std::string& doc, int delta) {
        const std::size_t at = doc.find("\"coins\":") + 8;
        const std::size_t end = doc.find_first_of(",}", at);
        doc.replace(at, end - at, std::to_string(std::stoi(doc.substr(at, end - at)) + delta));
      };
      take(from, -n);
      take(to, n);
      return Status::Ok();
    };
  };
  auto run = [&](const std::string& id, SessionId x, SessionId y,
                 const Profiles::Mutator& m) -> TxnResult {
    std::optional<TxnResult> out;
    profiles_->Transact(id, x, y, m, [&](TxnResult r) { out = std::move(r); });
    RunUntil([&] { return out.has_value(); });
    return out.value_or(TxnResult{TxnReason::kMutatorError, "no answer"});
  };
  TxnResult r = run("trade-1", a, b, give(4));
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(profiles_->Get(a, "/coins").value(), "6");
  EXPECT_EQ(profiles_->Get(b, "/coins").value(), "4");
  EXPECT_NE(Stored("PlayerData/bo").data->find("\"coins\":4"), std::string::npos)
      << "committed before it was applied";
  EXPECT_EQ(run("trade-1", a, b, give(1)).reason, TxnReason::kDuplicateTransaction);
  EXPECT_EQ(run("t2", a, a, give(1)).reason, TxnReason::kSameProfile);
  EXPECT_EQ(run("t3", a, 999, give(1)).reason, TxnReason::kProfileInactive);
  EXPECT_EQ(
      run("t4", a, b, [](std::string&, std::string&) { return Status::Rejected("no"); }).reason,
      TxnReason::kAborted);
  EXPECT_EQ(run("t5", a, b,
                [](std::string&, std::string&) -> Status { throw std::runtime_error("boom"); })
                .reason,
            TxnReason::kMutatorError);
  EXPECT_EQ(run("t6", a, b,
                [](std::string& x, std::string&) {
                  x = "[1]";
                  return Status::Ok();
                })
                .message,
            "the mutator left document A not a JSON object");
  TxnResult refused = run("t7", b, a, give(5));  // bo has 4: coins -1 fails validate
  EXPECT_EQ(refused.reason, TxnReason::kSaveAFailed);
  EXPECT_EQ(
      refused.message,
      "profile \"PlayerData/bo\": validate refused the transaction's document: coins below 0");
  EXPECT_EQ(profiles_->Get(b, "/coins").value(), "4") << "nothing changed";
  // Busy: a second transaction while the first is with the store.
  std::optional<TxnResult> first;
  profiles_->Transact("t8", a, b, give(1), [&](TxnResult x) { first = std::move(x); });
  EXPECT_EQ(run("t9", b, a, give(1)).reason, TxnReason::kBusy);
  EXPECT_FALSE(profiles_->Set(a, "/coins", "0").ok()) << "writes wait for the transaction";
  ASSERT_TRUE(RunUntil([&] { return first.has_value(); }));
  EXPECT_TRUE(first->ok());
  EXPECT_EQ(profiles_->stats().transactions, 2u);
  // B's lease taken over by another host: nothing is stored, B's session is told.
  Plant("PlayerData/bo", "host-b", WallNow() + 60000, "{\"coins\":100}", 1);
  TxnResult lost = run("t10", a, b, give(1));
  EXPECT_EQ(lost.reason, TxnReason::kSaveBFailed);
  EXPECT_NE(Stored("PlayerData/ada").data->find("\"coins\":5"), std::string::npos);
  EXPECT_EQ(net_->sessions().Get(b), nullptr) << "kicked";
}

class ProfileTransactionsTest : public ProfilePartsTest {
 protected:
  void TearDown() override {
    transactions_.reset();
    ProfilePartsTest::TearDown();
  }
  void MakeTransactions() {
    MakeParts();
    transactions_ = std::make_unique<ProfileTransactions>(
        *store_, entries_, *declaration_, *writer_, stats_, "host-a",
        [this](SessionId id) { final_saves_.push_back(id); });
  }
  // How a transaction of `a` and `b` with `mutate` ends, once the store answered.
  TxnResult Run(SessionId a, SessionId b, const ProfileTransactions::Mutator& mutate) {
    std::optional<TxnResult> out;
    transactions_->Transact("", a, b, mutate, [&out](TxnResult r) { out = std::move(r); });
    EXPECT_TRUE(RunUntil([&] { return out.has_value(); }));
    return out.value_or(TxnResult{TxnReason::kMutatorError, "no answer"});
  }
  std::unique_ptr<ProfileTransactions> transactions_;
  std::vector<SessionId> final_saves_;
};

TEST_F(ProfileTransactionsTest, WhatTheMutatorMakesOfItIsRefusedBeforeTheStore) {
  MakeTransactions();
  ASSERT_TRUE(LoadSession(1, "ada"));
  ASSERT_TRUE(LoadSession(2, "bo"));
  const TxnResult declined =
      Run(1, 2, [](std::string&, std::string&) { return Status::Rejected("not today"); });
  EXPECT_EQ(declined.reason, TxnReason::kAborted);
  EXPECT_EQ(declined.message, "not today");
  const TxnResult threw =
      Run(1, 2, [](std::string&, std::string&) -> Status { throw std::runtime_error("boom"); });
  EXPECT_EQ(threw.reason, TxnReason::kMutatorError);
  EXPECT_EQ(threw.message, "the mutator threw: boom");
  const TxnResult broken = Run(1, 2, [](std::string&, std::string& b) {
    b = "[1]";
    return Status::Ok();
  });
  EXPECT_EQ(broken.message, "the mutator left document B not a JSON object");
  EXPECT_EQ(Run(1, 1, [](std::string&, std::string&) { return Status::Ok(); }).reason,
            TxnReason::kSameProfile);
  EXPECT_EQ(Run(1, 9, [](std::string&, std::string&) { return Status::Ok(); }).message,
            "the PlayerData profile of session 9 is none");
  EXPECT_EQ(stats_.transactions, 0u);
  EXPECT_FALSE(transactions_->busy());
}

TEST_F(ProfileTransactionsTest, ASessionThatEndsMeanwhileIsSavedOnceTheTransactionEnds) {
  MakeTransactions();
  ASSERT_TRUE(LoadSession(1, "ada"));
  ASSERT_TRUE(LoadSession(2, "bo"));
  std::optional<TxnResult> out;
  transactions_->Transact(
      "t1", 1, 2,
      [](std::string& a, std::string&) {
        a = R"({"coins":9})";
        return Status::Ok();
      },
      [&out](TxnResult r) { out = std::move(r); });
  ASSERT_TRUE(transactions_->busy());
  ProfileEntry& ada = *entries_.Find(1);
  EXPECT_TRUE(ada.in_txn);
  ada.leave_after_txn = true;  // ProfileFinalSaves found it in the transaction
  bool idle = false;
  transactions_->AfterAll([&idle] { idle = true; });
  ASSERT_TRUE(RunUntil([&] { return out.has_value(); }));
  EXPECT_TRUE(out->ok()) << out->message;
  EXPECT_TRUE(idle);
  EXPECT_EQ(final_saves_, (std::vector<SessionId>{1}));
  EXPECT_FALSE(ada.in_txn);
  EXPECT_FALSE(ada.dirty()) << "committed: clean";
  EXPECT_EQ(*Stored("PlayerData/ada").data, R"({"coins":9})");
  EXPECT_EQ(stats_.transactions, 1u);
}
}  // namespace
}  // namespace molt::kernel::store
