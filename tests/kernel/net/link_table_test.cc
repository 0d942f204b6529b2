// SPDX-License-Identifier: Apache-2.0
// The link table (kernel/src/net/link_table.h) alone, on a manual clock, with connections that keep
// what is written to them: how a link ends, how a lost link's session waits and what it is kept,
// the slow-reader cut-off, and the housekeeping's deadlines and pings.
#include "kernel/src/net/link_table.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "kernel/src/net/link.h"
#include "net_parts_fixture.h"

namespace molt::kernel::net {
namespace {

namespace w = ::molt::wire;
using std::chrono::milliseconds;
using std::chrono::seconds;

class LinkTableTest : public NetPartsTest {};

std::string ByeText(const w::Envelope* e) {
  const w::Bye* bye = e->body_as_Bye();
  return bye == nullptr ? "(not a bye)" : bye->reason()->str() + ": " + bye->text()->str();
}

TEST_F(LinkTableTest, EndSaysByeWithTheReasonThenClosesAfterTheQueuedFrames) {
  Build();
  MemoryPeer& ada = Join("ada");
  const SessionId id = ada.session();
  links_->End(ada, ExitReason::kKicked, "be nice");
  ASSERT_EQ(ada.Kinds(), std::vector<std::string>{"Bye"});
  EXPECT_EQ(ByeText(ada.last()), "Kicked: be nice");
  EXPECT_EQ(ada.close(), std::optional<bool>(true));
  EXPECT_TRUE(ada.closed());
  EXPECT_EQ(sessions_->Get(id), nullptr);
  EXPECT_TRUE(links_->peers().empty());
  links_->End(ada, ExitReason::kKicked, "again");  // idempotent
  EXPECT_EQ(ada.frame_count(), 1u);
}

TEST_F(LinkTableTest, ASlowReaderOrATransportErrorEndsWithoutAByeOrAFlush) {
  Build();
  MemoryPeer& ada = Join("ada");
  links_->End(ada, ExitReason::kTransportError, "tls: bad record");
  EXPECT_EQ(ada.frame_count(), 0u);
  EXPECT_EQ(ada.close(), std::optional<bool>(false));
  MemoryPeer& bob = Join("bob");
  links_->End(bob, ExitReason::kTransportError, "websocket: bad frame", /*flush=*/true);
  EXPECT_EQ(bob.frame_count(), 0u);
  EXPECT_EQ(bob.close(), std::optional<bool>(true));  // the transport's own last words go out
}

TEST_F(LinkTableTest, AReaderQueuingMoreThanTheOutboundCapIsCutOff) {
  options_.max_outbound_bytes = 1000;
  Build();
  MemoryPeer& ada = Join("ada");
  const std::vector<std::uint8_t> frame = {4, 0, 0, 0, 1, 2, 3, 4};
  ada.set_queued(1000);
  links_->SendFrame(ada, frame);
  EXPECT_FALSE(ada.closed());
  ada.set_queued(1001);
  links_->SendFrame(ada, frame);
  EXPECT_TRUE(ada.closed());
  EXPECT_EQ(stats_.slow_readers, 1u);
  EXPECT_EQ(stats_.bytes_out, 2 * frame.size());
}

TEST_F(LinkTableTest, ALostLinksSessionWaitsForItsClientAndKeepsWhatIsSentToIt) {
  options_.resume_window_seconds = 30;
  Build();
  MemoryPeer& ada = Join("ada");
  Session* s = SessionOf(ada);
  ASSERT_NE(s, nullptr);
  links_->Unlink(ada, ExitReason::kTransportError, /*resumable=*/true);
  EXPECT_TRUE(s->detached());
  EXPECT_EQ(s->peer(), nullptr);
  EXPECT_EQ(links_->waiting(), 1u);
  EXPECT_EQ(stats_.links_lost, 1u);
  const std::vector<std::uint8_t> frame = {4, 0, 0, 0, 9, 9, 9, 9};
  links_->SendTo(*s, frame);
  links_->SendTo(*s, frame);
  // The client comes back on a new connection: linked again, and given what it missed.
  MemoryPeer& again = Connect();
  links_->Bind(again, *s);
  EXPECT_FALSE(s->detached());
  EXPECT_EQ(links_->waiting(), 0u);
  links_->FlushOutbox(*s);
  EXPECT_EQ(again.frame_count(), 2u);
}

TEST_F(LinkTableTest, AnOutboxPastHalfTheOutboundCapEndsTheWaitingSessionAsASlowReader) {
  options_.resume_window_seconds = 30;
  options_.max_outbound_bytes = 64;
  Build();
  MemoryPeer& ada = Join("ada");
  const SessionId id = ada.session();
  links_->Unlink(ada, ExitReason::kTransportError, /*resumable=*/true);
  const std::vector<std::uint8_t> frame(10, 0);
  for (int i = 0; i < 3; ++i) {
    links_->SendTo(*sessions_->Get(id), frame);
  }
  ASSERT_NE(sessions_->Get(id), nullptr);
  links_->SendTo(*sessions_->Get(id), frame);  // 40 > 32
  EXPECT_EQ(sessions_->Get(id), nullptr);
  EXPECT_EQ(links_->waiting(), 0u);
  EXPECT_EQ(sessions_->stats().by_reason[static_cast<std::size_t>(ExitReason::kSlowReader)], 1u);
}

TEST_F(LinkTableTest, AWaitingSessionEndsWithItsLinksReasonWhenTheResumeWindowPasses) {
  options_.resume_window_seconds = 2;
  Build();
  MemoryPeer& ada = Join("ada");
  const SessionId id = ada.session();
  links_->Unlink(ada, ExitReason::kClientClosed, /*resumable=*/true);
  Pass(seconds(1));
  EXPECT_NE(sessions_->Get(id), nullptr);
  Pass(milliseconds(1100));
  EXPECT_EQ(sessions_->Get(id), nullptr);
  EXPECT_EQ(stats_.resumes_expired, 1u);
  EXPECT_EQ(sessions_->stats().by_reason[static_cast<std::size_t>(ExitReason::kClientClosed)], 1u);
}

TEST_F(LinkTableTest, WithoutAResumeWindowALostLinksSessionEndsAtOnce) {
  options_.resume_window_seconds = 0;
  Build();
  MemoryPeer& ada = Join("ada");
  const SessionId id = ada.session();
  links_->Unlink(ada, ExitReason::kClientClosed, /*resumable=*/true);
  EXPECT_EQ(sessions_->Get(id), nullptr);
  EXPECT_EQ(links_->waiting(), 0u);
}

TEST_F(LinkTableTest, AHandshakeThatDoesNotFinishInTimeEndsAsTimedOutAndIsCounted) {
  options_.handshake_timeout_seconds = 1;
  Build();
  MemoryPeer& idle = Connect();
  Pass(milliseconds(900));
  EXPECT_FALSE(idle.closed());
  Pass(milliseconds(400));
  EXPECT_TRUE(idle.closed());
  EXPECT_EQ(stats_.handshake_timeouts, 1u);
  EXPECT_EQ(stats_.handshakes_dropped[static_cast<std::size_t>(ExitReason::kTimedOut)], 1u);
  ASSERT_EQ(idle.Kinds(), std::vector<std::string>{"Bye"});
  EXPECT_EQ(ByeText(idle.last()),
            "TimedOut: the handshake did not finish within 1 s (net.handshake_timeout_seconds)");
}

TEST_F(LinkTableTest, PingsGoOutOnceAnIntervalAndASilentLinkIsLost) {
  options_.ping_interval_seconds = 1;
  options_.idle_timeout_seconds = 3;
  options_.resume_window_seconds = 30;
  Build();
  MemoryPeer& ada = Join("ada");
  for (int i = 0; i < 10; ++i) {
    Pass(milliseconds(250));
  }
  EXPECT_EQ(ada.Kinds(), (std::vector<std::string>{"Ping", "Ping"}));
  EXPECT_EQ(ada.link().ping_seq, 2u);
  Pass(milliseconds(800));  // 3.3 s without a byte from the client
  EXPECT_TRUE(ada.closed());
  EXPECT_EQ(ada.close(), std::optional<bool>(false));
  EXPECT_EQ(links_->waiting(), 1u);  // a silent link is a lost link: its session waits
}

TEST_F(LinkTableTest, AUserWhoJoinsAfreshEndsOnlyTheirOwnWaitingSessions) {
  options_.resume_window_seconds = 30;
  Build();
  MemoryPeer& ada = Join("ada");
  MemoryPeer& bob = Join("bob");
  const SessionId ada_id = ada.session(), bob_id = bob.session();
  links_->Unlink(ada, ExitReason::kTransportError, true);
  links_->Unlink(bob, ExitReason::kTransportError, true);
  EXPECT_EQ(links_->EndWaitingOf("ada"), 1u);
  EXPECT_EQ(sessions_->Get(ada_id), nullptr);
  EXPECT_NE(sessions_->Get(bob_id), nullptr);
  EXPECT_EQ(links_->waiting(), 1u);
}

TEST_F(LinkTableTest, BindingALinkedSessionToANewConnectionTakesItFromTheOldOne) {
  options_.resume_window_seconds = 30;
  Build();
  MemoryPeer& old = Join("ada");
  Session* s = SessionOf(old);
  MemoryPeer& fresh = Connect();
  links_->Bind(fresh, *s);
  EXPECT_TRUE(old.closed());
  EXPECT_EQ(old.close(), std::optional<bool>(false));
  EXPECT_EQ(s->peer(), &fresh);
  EXPECT_FALSE(s->detached());
  EXPECT_EQ(links_->waiting(), 0u);
}

TEST_F(LinkTableTest, KickEndsALinkedSessionWithAByeAndAWaitingOneAtOnce) {
  options_.resume_window_seconds = 30;
  Build();
  MemoryPeer& ada = Join("ada");
  MemoryPeer& bob = Join("bob");
  const SessionId bob_id = bob.session();
  ASSERT_TRUE(links_->Kick(ada.session(), "out").ok());
  EXPECT_EQ(ByeText(ada.last()), "Kicked: out");
  links_->Unlink(bob, ExitReason::kTransportError, true);
  ASSERT_TRUE(links_->Kick(bob_id, "out").ok());
  EXPECT_EQ(sessions_->Get(bob_id), nullptr);
  EXPECT_EQ(links_->waiting(), 0u);
  const Status s = links_->Kick(bob_id, "again");
  EXPECT_TRUE(s.code() == Status::Code::kNotFound);
  EXPECT_EQ(s.message(), "session " + std::to_string(bob_id) + " is not active");
}

TEST_F(LinkTableTest, ShutdownEndsEveryLinkWithItsTextAndNoSessionWaitsAfterIt) {
  options_.resume_window_seconds = 30;
  Build();
  MemoryPeer& ada = Join("ada");
  MemoryPeer& bob = Join("bob");
  links_->Unlink(bob, ExitReason::kTransportError, true);
  links_->Shutdown([](Peer& p) { return "bye from " + p.address(); });
  EXPECT_EQ(ByeText(ada.last()), "ServerShutdown: bye from 10.0.0.1");
  EXPECT_EQ(links_->waiting(), 0u);
  EXPECT_EQ(sessions_->count(), 0u);
  EXPECT_TRUE(links_->shut_down());
  MemoryPeer& late = Join("cy");  // a link lost after the shutdown does not wait
  const SessionId late_id = late.session();
  links_->Unlink(late, ExitReason::kTransportError, true);
  EXPECT_EQ(sessions_->Get(late_id), nullptr);
}

}  // namespace
}  // namespace molt::kernel::net
