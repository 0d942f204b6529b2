// SPDX-License-Identifier: Apache-2.0
// The bundled walk plugin, tested as its author would test it: with the plugin test kit
// (molt/testkit.hpp), loading the walk.so just built (MOLT_PLUGIN_WALK, from
// molt_add_plugin_test). walk.Move is a predicted intent and walk.Pos an unreliable channel; the
// kit reports each intent's verdict, which is what the server acknowledges to a real client.
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <molt/testkit.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "walk_generated.h"

namespace {

using molt::testkit::Kit;

std::string Move(int dx, int dy) {
  flatbuffers::FlatBufferBuilder b;
  b.Finish(molt::walk::CreateMove(b, static_cast<std::int8_t>(dx), static_cast<std::int8_t>(dy)));
  return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
}

struct Pos {
  molt_session_t session = 0;
  int x = 0;
  int y = 0;
  bool operator==(const Pos& o) const { return session == o.session && x == o.x && y == o.y; }
};

std::ostream& operator<<(std::ostream& os, const Pos& p) {
  return os << "{" << p.session << ": " << p.x << ", " << p.y << "}";
}

class WalkTest : public ::testing::Test {
 protected:
  // The walk.Pos events queued for `session`, oldest first.
  std::vector<Pos> Positions(molt_session_t session) {
    std::vector<Pos> out;
    for (const molt::testkit::Message& m : kit_.Events(session, "walk.Pos")) {
      const auto* p = flatbuffers::GetRoot<molt::walk::Pos>(m.payload.data());
      out.push_back({p->session(), p->x(), p->y()});
    }
    return out;
  }
  // A step a tick, within walk.Move's 60 a second.
  molt::Status Step(molt_session_t session, int dx, int dy) {
    if (molt::Status s = kit_.Advance(1.0 / 50); !s.ok()) {
      return s;
    }
    return kit_.Intent(session, "walk.Move", Move(dx, dy));
  }

  Kit kit_{{MOLT_PLUGIN_WALK}};
};

TEST_F(WalkTest, AnAcceptedMoveGoesToEveryoneAsTheMoversPosition) {
  const molt_session_t ada = kit_.Join("ada");
  const molt_session_t bob = kit_.Join("bob");
  ASSERT_TRUE(Step(ada, 1, 0).ok()) << kit_.error();
  ASSERT_TRUE(Step(ada, 1, -1).ok()) << kit_.error();
  const std::vector<Pos> expected = {{ada, 1, 0}, {ada, 2, -1}};
  EXPECT_EQ(Positions(ada), expected);
  EXPECT_EQ(Positions(bob), expected);
  ASSERT_TRUE(Step(bob, 0, 1).ok()) << kit_.error();
  EXPECT_EQ(Positions(ada), std::vector<Pos>({{bob, 0, 1}})) << "each session walks alone";
}

TEST_F(WalkTest, AStepLongerThanOneIsRefusedByTheRulesBeforeThePluginRuns) {
  const molt_session_t ada = kit_.Join("ada");
  const molt::Status far = Step(ada, 2, 0);
  EXPECT_EQ(far.code(), MOLT_ERR_REJECTED);
  EXPECT_NE(far.message().find("walk.Move: rule"), std::string::npos) << far.message();
  EXPECT_EQ(Step(ada, 0, -3).code(), MOLT_ERR_REJECTED);
  EXPECT_TRUE(Positions(ada).empty());
  ASSERT_TRUE(Step(ada, -1, 0).ok()) << kit_.error();
  EXPECT_EQ(Positions(ada), std::vector<Pos>({{ada, -1, 0}})) << "the refused steps moved nothing";
}

TEST_F(WalkTest, AStepOffTheSquareIsRefusedByTheHandler) {
  const molt_session_t ada = kit_.Join("ada");
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(Step(ada, 1, 1).ok()) << "step " << i + 1 << ": " << kit_.error();
  }
  const std::vector<Pos> walked = Positions(ada);
  ASSERT_EQ(walked.size(), 100u);
  EXPECT_EQ(walked.back(), (Pos{ada, 100, 100}));
  const molt::Status off = Step(ada, 1, 0);
  // A refusal (MOLT_ERR_REJECTED from a predicted intent's handler) is a game rule, not a
  // handler error: rejected with its reason, nothing logged as an error.
  EXPECT_EQ(off.code(), MOLT_ERR_REJECTED);
  EXPECT_EQ(off.message(),
            "walk.Move: refused: a step to (101, 100) leaves the square -100 .. 100");
  EXPECT_EQ(kit_.Logs().find("handler threw"), std::string::npos) << kit_.Logs();
  EXPECT_TRUE(Positions(ada).empty()) << "no position for a refused step";
  ASSERT_TRUE(Step(ada, -1, 0).ok()) << kit_.error();
  EXPECT_EQ(Positions(ada), std::vector<Pos>({{ada, 99, 100}}));
}

TEST_F(WalkTest, AHotSwapKeepsThePositions) {
  const molt_session_t ada = kit_.Join("ada");
  ASSERT_TRUE(Step(ada, 1, 1).ok()) << kit_.error();
  const Kit::SwapResult swap = kit_.Swap({MOLT_PLUGIN_WALK});
  ASSERT_TRUE(swap.ok()) << swap.status.message();
  EXPECT_NE(swap.report.find(R"({"plugin":"walk","state_version":1)"), std::string::npos)
      << swap.report;
  ASSERT_TRUE(Step(ada, 1, 0).ok()) << kit_.error();
  EXPECT_EQ(Positions(ada), std::vector<Pos>({{ada, 1, 1}, {ada, 2, 1}}));
}

TEST_F(WalkTest, ItsOwnTestsPass) {
  const Kit::SelfTestResult r = kit_.SelfTest();
  EXPECT_TRUE(r.ok()) << r.status.message();
  EXPECT_NE(r.report.find(R"("passed":1,"failed":0)"), std::string::npos) << r.report;
}

}  // namespace
