// SPDX-License-Identifier: Apache-2.0
// Redirection (kernel/src/net/redirection.h) alone: a draining server's sessions spread over the
// other servers, least loaded first, each told in a Redirect frame, the close's Bye and a refused
// Hello naming the same.
#include "kernel/src/net/redirection.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net_parts_fixture.h"

namespace molt::kernel::net {
namespace {

namespace w = ::molt::wire;

class RedirectionTest : public NetPartsTest {
 protected:
  // "server at address (reason)" of the peer's last frame, a Redirect.
  static std::string Told(const MemoryPeer& p) {
    if (p.frame_count() == 0 || p.last()->body_as_Redirect() == nullptr) {
      return "(nothing)";
    }
    const w::Redirect* r = p.last()->body_as_Redirect();
    return r->server()->str() + " at " + r->address()->str() + " (" + r->reason()->str() + ")";
  }
};

TEST_F(RedirectionTest, EachSessionGoesToTheTargetWithTheFewestSessionsSoFar) {
  Build();
  Redirection redirection(*sessions_, *links_);
  MemoryPeer& ada = Join("ada");
  MemoryPeer& bob = Join("bob");
  MemoryPeer& cy = Join("cy");
  const std::vector<RedirectTarget>& spread = redirection.Begin(
      {{"a", "10.1.0.1:7777", "", 1}, {"b", "10.1.0.2:7777", "", 0}}, "the server is draining");
  EXPECT_EQ(Told(ada), "b at 10.1.0.2:7777 (the server is draining)");
  EXPECT_EQ(Told(bob), "a at 10.1.0.1:7777 (the server is draining)");  // a tie: the first
  EXPECT_EQ(Told(cy), "b at 10.1.0.2:7777 (the server is draining)");
  ASSERT_EQ(spread.size(), 2u);
  EXPECT_EQ(spread[0].sessions, 2u);
  EXPECT_EQ(spread[1].sessions, 2u);
}

TEST_F(RedirectionTest, ASessionIsToldTheSameTargetAgainAndItsByeNamesIt) {
  Build();
  Redirection redirection(*sessions_, *links_);
  MemoryPeer& ada = Join("ada");
  redirection.Begin({{"a", "10.1.0.1:7777", "", 0}}, "moving");
  EXPECT_TRUE(redirection.Send(*SessionOf(ada)));
  EXPECT_EQ(ada.frame_count(), 2u);
  EXPECT_EQ(Told(ada), "a at 10.1.0.1:7777 (moving)");
  EXPECT_EQ(redirection.ByeText(ada), "moving: go to server a at 10.1.0.1:7777");
}

TEST_F(RedirectionTest, ATargetWithoutAnAddressForTheSessionsTransportIsPassedOver) {
  Build();
  Redirection redirection(*sessions_, *links_);
  MemoryPeer& ada = Join("ada");  // over TCP
  redirection.Begin({{"browsers-only", "", "10.1.0.1:7780", 0}}, "moving");
  EXPECT_EQ(ada.frame_count(), 0u);
  EXPECT_FALSE(redirection.Send(*SessionOf(ada)));
  EXPECT_EQ(redirection.ByeText(ada), "the server is shutting down");
}

TEST_F(RedirectionTest, BeforeItBeginsNothingIsSentAndTheTextsSayOnlyWhatHappens) {
  Build();
  Redirection redirection(*sessions_, *links_);
  MemoryPeer& ada = Join("ada");
  EXPECT_FALSE(redirection.active());
  EXPECT_FALSE(redirection.Send(*SessionOf(ada)));
  EXPECT_EQ(redirection.ByeText(ada), "the server is shutting down");
  EXPECT_EQ(redirection.RefusalText(), "the server is draining");
}

TEST_F(RedirectionTest, ARefusedNewPlayerIsToldTheLeastLoadedTarget) {
  Build();
  Redirection redirection(*sessions_, *links_);
  redirection.Begin({{"a", "10.1.0.1:7777", "", 5}, {"b", "10.1.0.2:7777", "", 2}}, "moving");
  EXPECT_EQ(redirection.RefusalText(), "moving: go to server b at 10.1.0.2:7777");
}

}  // namespace
}  // namespace molt::kernel::net
