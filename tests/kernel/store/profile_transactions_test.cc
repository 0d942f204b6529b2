// SPDX-License-Identifier: Apache-2.0
// Profiles' transactions (kernel/src/store/profile_transactions.cc): two profiles changed at once
// or not at all, with the spec's reasons for each refusal.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

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

}  // namespace
}  // namespace molt::kernel::store
