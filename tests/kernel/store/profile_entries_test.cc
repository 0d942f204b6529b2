// SPDX-License-Identifier: Apache-2.0
// ProfileEntries (kernel/src/store/profile_entries.h): one store's profiles in memory, on their
// own: sessions' entries by id, manual keys by name under ids of their own, names that go with
// their entries (or before them, on a release), and the store closing.
#include "kernel/src/store/profile_entries.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace molt::kernel::store {
namespace {

TEST(ProfileEntriesTest, SessionsAndKeysAreFoundByIdAndKeysByName) {
  ProfileEntries entries;
  ProfileEntry& ada = entries.AddSession(7, "PlayerData/ada");
  EXPECT_EQ(ada.session, 7u);
  EXPECT_EQ(ada.key, "PlayerData/ada");
  EXPECT_EQ(ada.state, ProfileState::kPending);
  EXPECT_FALSE(ada.manual());
  ProfileEntry& bank = entries.AddKey("bank", "PlayerData/bank");
  ProfileEntry& world = entries.AddKey("world", "PlayerData/world");
  EXPECT_EQ(bank.session, kManualKeyIds);
  EXPECT_EQ(world.session, kManualKeyIds + 1);
  EXPECT_TRUE(bank.manual());
  EXPECT_EQ(entries.Find(7), &ada);
  EXPECT_EQ(entries.Find(kManualKeyIds), &bank);
  EXPECT_EQ(entries.Find(8), nullptr);
  EXPECT_EQ(entries.KeyId("bank"), kManualKeyIds);
  EXPECT_EQ(entries.KeyId("nope"), 0u);
  EXPECT_EQ(entries.KeyNames(), (std::vector<std::string>{"bank", "world"}));
  EXPECT_EQ(entries.Ids(), (std::vector<net::SessionId>{7, kManualKeyIds, kManualKeyIds + 1}));
}

TEST(ProfileEntriesTest, AKeysNameGoesWithItsEntryOrBeforeItWhenForgotten) {
  ProfileEntries entries;
  const net::SessionId bank = entries.AddKey("bank", "PlayerData/bank").session;
  entries.Erase(bank);
  EXPECT_EQ(entries.KeyId("bank"), 0u);
  EXPECT_TRUE(entries.KeyNames().empty());

  const net::SessionId again = entries.AddKey("bank", "PlayerData/bank").session;
  EXPECT_NE(again, bank) << "a key's id is never reused";
  entries.ForgetKey("bank");  // released while it loads: the entry lives on until the load lands
  EXPECT_EQ(entries.KeyId("bank"), 0u);
  EXPECT_NE(entries.Find(again), nullptr);
  const net::SessionId third = entries.AddKey("bank", "PlayerData/bank").session;
  entries.Erase(again);  // the old entry goes: the name now names the new one
  EXPECT_EQ(entries.KeyId("bank"), third);
  entries.ForgetKey("nope");  // nothing
}

TEST(ProfileEntriesTest, EntriesAreCountedByStateAndWalkedInIdOrder) {
  ProfileEntries entries;
  entries.AddSession(3, "PlayerData/c").state = ProfileState::kLoaded;
  entries.AddSession(1, "PlayerData/a").state = ProfileState::kLoaded;
  entries.AddSession(2, "PlayerData/b");
  EXPECT_EQ(entries.Count(ProfileState::kLoaded), 2u);
  EXPECT_EQ(entries.Count(ProfileState::kPending), 1u);
  std::vector<std::string> keys;
  entries.ForEach([&keys](ProfileEntry& e) { keys.push_back(e.key); });
  EXPECT_EQ(keys, (std::vector<std::string>{"PlayerData/a", "PlayerData/b", "PlayerData/c"}));
  entries.Erase(2);
  entries.Erase(2);  // nothing
  EXPECT_EQ(entries.Ids(), (std::vector<net::SessionId>{1, 3}));
  EXPECT_FALSE(entries.closing());
  entries.Close();
  EXPECT_TRUE(entries.closing());
}

}  // namespace
}  // namespace molt::kernel::store
