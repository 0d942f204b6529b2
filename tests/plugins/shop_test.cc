// SPDX-License-Identifier: Apache-2.0
// The bundled shop plugin with the plugin test kit (molt/testkit.hpp): purchases granted once by
// their receipt, replays answered as replays, refusals with their reasons, the ledger and each
// player's profile written together. (Crashes mid-purchase: tests/hosts/moltd_shop_test.cc.)
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <molt/testkit.hpp>
#include <string>

#include "shop_generated.h"

namespace {

using molt::testkit::Kit;

std::string Purchase(const std::string& receipt, const std::string& item) {
  flatbuffers::FlatBufferBuilder b;
  b.Finish(molt::shop::CreatePurchaseDirect(b, receipt.c_str(), item.c_str()));
  return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
}

struct Grant {
  std::int64_t owned = -1;
  bool replay = false;
};

Grant GrantOf(const molt::testkit::Response& r) {
  EXPECT_EQ(r.status, MOLT_OK) << r.payload;
  if (!r.ok()) {
    return {};
  }
  const auto* g = flatbuffers::GetRoot<molt::shop::Granted>(r.payload.data());
  return {g->owned(), g->replay()};
}

molt::testkit::Options CrownStock(int stock) {
  molt::testkit::Options o;
  o.config_json = R"({"plugins": {"shop": {"crown_stock": )" + std::to_string(stock) + "}}}";
  return o;
}

TEST(ShopTest, AReceiptIsGrantedOnceAndAnsweredAsAReplayAfter) {
  Kit kit({MOLT_PLUGIN_SHOP});
  const molt_session_t ada = kit.Join("ada");
  Grant g = GrantOf(kit.Request(ada, "shop.Buy", Purchase("r1", "gem")));
  EXPECT_EQ(g.owned, 1);
  EXPECT_FALSE(g.replay);
  g = GrantOf(kit.Request(ada, "shop.Buy", Purchase("r1", "gem")));
  EXPECT_EQ(g.owned, 1) << "granted twice";
  EXPECT_TRUE(g.replay);
  EXPECT_EQ(GrantOf(kit.Request(ada, "shop.Buy", Purchase("r2", "gem"))).owned, 2);
  EXPECT_NE(kit.Profile("shop", "ada").value().find(R"("gem":2)"), std::string::npos);
  EXPECT_NE(kit.Profile("shop", "#sales").value().find(R"("gem":2)"), std::string::npos);
  // Receipts are each player's own: bob's r1 is another purchase.
  const molt_session_t bob = kit.Join("bob");
  g = GrantOf(kit.Request(bob, "shop.Buy", Purchase("r1", "gem")));
  EXPECT_EQ(g.owned, 1);
  EXPECT_FALSE(g.replay);
}

TEST(ShopTest, RefusalsSayWhatIsWrong) {
  Kit kit({MOLT_PLUGIN_SHOP}, CrownStock(1));
  const molt_session_t ada = kit.Join("ada");
  molt::testkit::Response r = kit.Request(ada, "shop.Buy", Purchase("r1", "axe"));
  EXPECT_EQ(r.status, MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(r.payload, R"(the shop sells no "axe" (gem, sword, crown))");
  EXPECT_EQ(GrantOf(kit.Request(ada, "shop.Buy", Purchase("r2", "crown"))).owned, 1);
  const molt_session_t bob = kit.Join("bob");
  r = kit.Request(bob, "shop.Buy", Purchase("r3", "crown"));
  EXPECT_EQ(r.status, MOLT_ERR_REJECTED);
  EXPECT_EQ(r.payload, "sold out: every crown is sold (1)");
  EXPECT_EQ(kit.Profile("shop", "bob").status().code(), MOLT_OK);
  EXPECT_EQ(kit.Profile("shop", "bob").value().find("crown"), std::string::npos);
}

TEST(ShopTest, ItsOwnTestsPass) {
  Kit kit({MOLT_PLUGIN_SHOP});
  const Kit::SelfTestResult r = kit.SelfTest();
  EXPECT_TRUE(r.ok()) << r.status.message();
  EXPECT_NE(r.report.find(R"("passed":3,"failed":0)"), std::string::npos) << r.report;
}

TEST(ShopTest, WhatWasGrantedSurvivesASwapAndTheClose) {
  Kit kit({MOLT_PLUGIN_SHOP});
  const molt_session_t ada = kit.Join("ada");
  EXPECT_EQ(GrantOf(kit.Request(ada, "shop.Buy", Purchase("r1", "sword"))).owned, 1);
  ASSERT_TRUE(kit.Swap({MOLT_PLUGIN_SHOP}).ok());
  const Grant again = GrantOf(kit.Request(ada, "shop.Buy", Purchase("r1", "sword")));
  EXPECT_TRUE(again.replay) << "the swap forgot the receipt";
  EXPECT_EQ(again.owned, 1);
  ASSERT_TRUE(kit.Close().ok());
  EXPECT_NE(kit.Profile("shop", "ada").value().find(R"("sword":1)"), std::string::npos);
}

}  // namespace
