// SPDX-License-Identifier: Apache-2.0
// Sessions without sockets: announcement order, bind order, bindLast, data, exit reasons,
// onSession replay, owner release.
#include "kernel/src/net/session.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace molt::kernel::net {
namespace {

class SessionsTest : public ::testing::Test {
 protected:
  Hooks hooks_;
  Bus bus_;
  Sessions sessions_{hooks_, bus_};
  TimePoint now_{};
};

TEST_F(SessionsTest, JoinFiresTheHookThenOnSessionThenTheTopic) {
  std::vector<std::string> order;
  Connection h = hooks_.On("Session.Start", [&](HookContext& ctx) {
    order.push_back("hook " + std::string(ctx.args[1].AsString()));
    return false;  // observational: the verdict is ignored
  });
  Connection o = sessions_.OnSession([&](Session& s) { order.push_back("onSession " + s.user()); });
  Connection t = bus_.Subscribe("Kernel.SessionStart", [&](std::string_view, Args a) {
    order.push_back("topic " + std::to_string(a[0].AsHandle()));
  });
  const SessionId id = sessions_.Start("ada", {1, 2}, "127.0.0.1", now_);
  EXPECT_EQ(order, (std::vector<std::string>{"hook ada", "onSession ada", "topic 1"}));
  ASSERT_NE(sessions_.Get(id), nullptr);
  EXPECT_TRUE(sessions_.Get(id)->active());
  EXPECT_EQ(sessions_.Get(id)->join_data().size(), 2u);
  EXPECT_EQ(sessions_.count(), 1u);
}

TEST_F(SessionsTest, OnSessionAlsoRunsForSessionsAlreadyLive) {
  sessions_.Start("a", {}, "x", now_);
  sessions_.Start("b", {}, "x", now_);
  std::vector<std::string> seen;
  Connection c = sessions_.OnSession([&](Session& s) { seen.push_back(s.user()); });
  sessions_.Start("c", {}, "x", now_);
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "c"}));
  c.Disconnect();
  sessions_.Start("d", {}, "x", now_);
  EXPECT_EQ(seen.size(), 3u);
}

TEST_F(SessionsTest, LeaveRunsHookTopicBindsInOrderThenBindLastThenData) {
  std::vector<std::string> order;
  const SessionId id = sessions_.Start("ada", {}, "x", now_);
  Session* s = sessions_.Get(id);
  int* score = new int(5);
  s->SetData("score", score, [&](void* p) {
    order.push_back("data");
    delete static_cast<int*>(p);
  });
  s->BindLast([&] { order.push_back("last 1"); });
  s->Bind([&] { order.push_back("bind 1"); });
  s->Bind([&] { order.push_back("bind 2"); });
  s->BindLast([&] { order.push_back("last 2"); });
  const std::uint64_t dropped = s->Bind([&] { order.push_back("never"); });
  EXPECT_TRUE(s->Unbind(dropped).ok());
  EXPECT_EQ(s->Unbind(dropped).code(), Status::Code::kNotFound);
  Connection h = hooks_.On("Session.End", [&](HookContext& ctx) {
    // Gone for getSession, still readable with its data.
    EXPECT_EQ(sessions_.Get(ctx.session), nullptr);
    Session* ending = sessions_.Find(ctx.session);
    EXPECT_NE(ending, nullptr);
    EXPECT_EQ(*static_cast<int*>(ending->GetData("score")), 5);
    EXPECT_FALSE(ending->active());
    order.push_back("hook " + std::string(ctx.args[1].AsString()));
    return true;
  });
  Connection t = bus_.Subscribe("Kernel.SessionEnd", [&](std::string_view, Args a) {
    order.push_back("topic " + std::string(a[1].AsString()));
  });
  sessions_.End(id, ExitReason::kKicked);
  sessions_.End(id, ExitReason::kTimedOut);  // idempotent: the first reason wins
  EXPECT_EQ(order, (std::vector<std::string>{"hook Kicked", "topic Kicked", "bind 1", "bind 2",
                                             "last 1", "last 2", "data"}));
  EXPECT_EQ(sessions_.Get(id), nullptr);
  EXPECT_EQ(sessions_.Find(id), nullptr);
  EXPECT_EQ(sessions_.count(), 0u);
  const Sessions::Stats st = sessions_.stats();
  EXPECT_EQ(st.ended, 1u);
  EXPECT_EQ(st.by_reason[static_cast<int>(ExitReason::kKicked)], 1u);
}

TEST_F(SessionsTest, ACleanupThatThrowsDoesNotStopTheOthers) {
  const SessionId id = sessions_.Start("ada", {}, "x", now_);
  int ran = 0;
  sessions_.Get(id)->Bind([] { throw std::runtime_error("boom"); });
  sessions_.Get(id)->Bind([&] { ++ran; });
  sessions_.End(id, ExitReason::kClientClosed);
  EXPECT_EQ(ran, 1);
}

TEST_F(SessionsTest, AHandlerMayEndItsOwnSessionWhileOthersHoldIt) {
  const SessionId id = sessions_.Start("ada", {}, "x", now_);
  Session* s = sessions_.Get(id);
  int after = 0;
  {
    Sessions::Hold hold(sessions_);
    sessions_.End(id, ExitReason::kKicked);
    EXPECT_FALSE(s->active());  // still a valid object while held
    after = s->exit_reason() == ExitReason::kKicked;
  }
  EXPECT_EQ(after, 1);
}

TEST_F(SessionsTest, ReleaseOwnerRunsThatOwnersBindingsAndDataNowAndDropsItsHandlers) {
  int plugin = 0;
  int other = 0;
  const void* owner = &plugin;
  int calls = 0;
  Connection c = sessions_.OnSession([&](Session&) { ++calls; }, owner);
  const SessionId id = sessions_.Start("ada", {}, "x", now_);
  Session* s = sessions_.Get(id);
  std::vector<std::string> order;
  s->Bind([&] { order.push_back("mine"); }, owner);
  s->Bind([&] { order.push_back("theirs"); }, &other);
  s->SetData(
      "k", nullptr, [&](void*) { order.push_back("my data"); }, owner);
  sessions_.ReleaseOwner(owner);
  EXPECT_EQ(order, (std::vector<std::string>{"mine", "my data"}));
  sessions_.Start("bob", {}, "x", now_);
  EXPECT_EQ(calls, 1);  // the handler went with its owner
  sessions_.End(id, ExitReason::kClientClosed);
  EXPECT_EQ(order, (std::vector<std::string>{"mine", "my data", "theirs"}));
}

// Released is not left: a binding with a release gets only the release when its owner lets go,
// and its end logic then its release when the session ends; Unbind releases too.
TEST_F(SessionsTest, ABindingsReleaseRunsAloneWhenItsOwnerLetsGo) {
  int plugin = 0;
  const void* owner = &plugin;
  std::vector<std::string> order;
  const SessionId a = sessions_.Start("ada", {}, "x", now_);
  sessions_.Get(a)->Bind([&] { order.push_back("a left"); }, owner,
                         [&] { order.push_back("a released"); });
  sessions_.ReleaseOwner(owner);
  EXPECT_EQ(order, std::vector<std::string>{"a released"});
  sessions_.End(a, ExitReason::kClientClosed);
  EXPECT_EQ(order, std::vector<std::string>{"a released"});  // nothing left to run

  order.clear();
  const SessionId b = sessions_.Start("bob", {}, "x", now_);
  Session* s = sessions_.Get(b);
  s->BindLast([&] { order.push_back("b left"); }, owner, [&] { order.push_back("b released"); });
  const std::uint64_t kept =
      s->Bind([&] { order.push_back("never"); }, owner, [&] { order.push_back("unbound"); });
  ASSERT_TRUE(s->Unbind(kept).ok());
  sessions_.End(b, ExitReason::kKicked);
  EXPECT_EQ(order, (std::vector<std::string>{"unbound", "b left", "b released"}));
}

TEST_F(SessionsTest, ExitReasonNames) {
  EXPECT_EQ(ExitReasonName(ExitReason::kClientClosed), "ClientClosed");
  EXPECT_EQ(ExitReasonName(ExitReason::kFlood), "Flood");
  EXPECT_EQ(ExitReasonName(ExitReason::kSlowReader), "SlowReader");
  EXPECT_EQ(ExitReasonName(ExitReason::kOffender), "Offender");
  EXPECT_EQ(ExitReasonName(ExitReason::kServerShutdown), "ServerShutdown");
}

}  // namespace
}  // namespace molt::kernel::net
