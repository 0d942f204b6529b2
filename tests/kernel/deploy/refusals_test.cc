// SPDX-License-Identifier: Apache-2.0
// Refusals (deploy/refusals.h): the newest ten kept, newest first; the listener told once per
// kind per gap (times given, not slept).
#include "kernel/src/deploy/refusals.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace molt::kernel::deploy {
namespace {

TEST(RefusalsTest, ARefusalIsRejectedWithItsReasonAndTheNewestTenAreKept) {
  Refusals refusals(nullptr, std::chrono::seconds(60));
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(refusals.Refuse("seq", "reason " + std::to_string(i)),
              Status::Rejected("reason " + std::to_string(i)));
  }
  const std::vector<Refusals::Refusal> kept = refusals.Recent();
  ASSERT_EQ(kept.size(), Refusals::kKept);
  EXPECT_EQ(kept.front().reason, "reason 11");
  EXPECT_EQ(kept.back().reason, "reason 2");
  EXPECT_GT(kept.front().at_ms, 0);
}

TEST(RefusalsTest, TheListenerHearsEachKindOncePerGap) {
  std::vector<std::string> heard;
  Refusals refusals([&](const std::string& kind,
                        const std::string& reason) { heard.push_back(kind + ": " + reason); },
                    std::chrono::seconds(60));
  const Refusals::Clock::time_point t = Refusals::Clock::now();
  refusals.Refuse("signature", "unsigned", t);
  refusals.Refuse("signature", "unsigned again", t + std::chrono::seconds(30));
  refusals.Refuse("seq", "replay", t + std::chrono::seconds(30));
  refusals.Refuse("signature", "a minute on", t + std::chrono::seconds(60));
  EXPECT_EQ(heard, (std::vector<std::string>{"signature: unsigned", "seq: replay",
                                             "signature: a minute on"}));
  EXPECT_EQ(refusals.Recent().size(), 4u);  // every one is kept
}

}  // namespace
}  // namespace molt::kernel::deploy
