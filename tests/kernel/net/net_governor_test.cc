// SPDX-License-Identifier: Apache-2.0
// The NetGovernor (spec §9.6): links graded from their own pings on the manual clock, the tier's
// replica pace, Low unreliable events shed to Poor links and back, Net.TierChanged, the limits.
#include "kernel/src/net/net_governor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kernel/src/wire/envelope.h"
#include "replica_fixture.h"

namespace molt::kernel::net {

namespace w = ::molt::wire;
using std::chrono::milliseconds;

namespace {

class GovernorTest : public ReplicaTest {
 protected:
  void SetUp() override {
    ReplicaTest::SetUp();
    changes_ = kernel_->bus().Subscribe("Net.TierChanged", [this](std::string_view, Args args) {
      heard.push_back(
          fmt::format("{} {} {:.0f}", args[0].as.handle, args[1].AsString(), args[2].as.d));
    });
  }
  void TearDown() override {
    changes_.Disconnect();
    ReplicaTest::TearDown();
  }
  // Answers `p`'s newest ping, unless answered already, as if it came back `rtt` after it left
  // (the pong echoes the ping's time, earlier by what the clock did not move).
  void Answer(CapturePeer& p, Duration rtt) {
    std::uint32_t seq = 0;
    std::uint64_t time_ns = 0;
    if (!p.LastPing(&seq, &time_ns) || answered_[&p] == seq) {
      return;
    }
    answered_[&p] = seq;
    const std::uint64_t now_ns = kernel_->scheduler().Now().time_since_epoch().count();
    const std::uint64_t rtt_ns = std::chrono::nanoseconds(rtt).count();
    const std::uint64_t echoed = std::min(time_ns, now_ns - rtt_ns);
    flatbuffers::FlatBufferBuilder b(64);
    const std::span<const std::uint8_t> pong =
        w::FinishFrame(b, w::Body::Pong, w::CreatePong(b, seq, echoed).Union());
    net_->Receive(p, std::vector<std::uint8_t>(pong.begin(), pong.end()));
  }
  // A second passes, a quarter at a time; the peers in `answer` answer their pings after `rtt`.
  void Second(std::vector<CapturePeer*> answer, Duration rtt) {
    for (int i = 0; i < 4; ++i) {
      Pass(milliseconds(250));
      for (CapturePeer* p : answer) {
        Answer(*p, rtt);
      }
    }
  }
  LinkTier TierOf(const CapturePeer& p) { return net_->sessions().Get(p.session())->grade().tier; }
  ChannelId Unreliable(const std::string& name, UnreliablePriority priority) {
    ChannelSpec spec;
    spec.name = name;
    spec.kind = ChannelKind::kUnreliable;
    spec.schema = "molt.test.Say";  // not checked: the test sends, the server never reads
    spec.priority = priority;
    Result<ChannelId> id = net_->channels().Declare(std::move(spec));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }

  std::vector<std::string> heard;  // "<session> <tier> <median ms>"
  Connection changes_;
  std::map<CapturePeer*, std::uint32_t> answered_;  // the last ping each answered
};

TEST_F(GovernorTest, TheWorstAxisWins) {
  const NetGovernor& g = net_->governor();
  auto grade = [&](std::vector<double> rtts_ms, int lost_of_40) {
    LinkQuality q;
    for (double ms : rtts_ms) {
      q.AddRtt(ms / 1000);
    }
    for (int i = 0; i < 40; ++i) {
      q.AddProbe(i >= lost_of_40);
    }
    return std::string(TierName(g.Grade(q)));
  };
  EXPECT_EQ(grade({}, 0), "good");  // nothing measured
  EXPECT_EQ(grade({100, 100, 100}, 0), "good");
  EXPECT_EQ(grade({101, 101, 101}, 0), "strained");
  EXPECT_EQ(grade({250, 250, 250}, 0), "strained");
  EXPECT_EQ(grade({251, 251, 251}, 0), "poor");
  EXPECT_EQ(grade({10, 40, 40}, 0), "good");       // median 40, jitter (30 + 0 + 0) / 3 = 10
  EXPECT_EQ(grade({10, 10, 100}, 0), "strained");  // jitter 30 > 20
  EXPECT_EQ(grade({10, 10, 250}, 0), "poor");      // jitter 80 > 60
  EXPECT_EQ(grade({10}, 1), "strained");           // 2.5% lost
  EXPECT_EQ(grade({10}, 3), "strained");           // 7.5%
  EXPECT_EQ(grade({10}, 4), "poor");               // 10%
}

// The client's device hint (wire 2.7): below net.governor_device_strained a session is Strained
// at best, from the Hello on (before any pong), and again Good after it says a better device;
// a link worse than Strained still earns Poor; a hint that is not a number counts as not said.
TEST_F(GovernorTest, AWeakDeviceIsStrainedAtBestWhateverItsLink) {
  auto device = [&](CapturePeer& p, float quality) {
    flatbuffers::FlatBufferBuilder b(32);
    const std::span<const std::uint8_t> frame =
        w::FinishFrame(b, w::Body::Device, w::CreateDevice(b, quality).Union());
    net_->Receive(p, std::vector<std::uint8_t>(frame.begin(), frame.end()));
  };
  CapturePeer& weak = Join("weak", 0.3f);
  CapturePeer& fine = Join("fine", 1.0f);
  CapturePeer& odd = Join("odd", std::numeric_limits<float>::quiet_NaN());
  CapturePeer& slow = Join("slow", 0.3f);
  EXPECT_EQ(net_->sessions().Get(weak.session())->grade().device, 0.3f);
  EXPECT_EQ(net_->sessions().Get(odd.session())->grade().device, 0.0f);
  for (int quarter = 0; quarter < 12; ++quarter) {  // weak never answers: graded by its hint
    Pass(milliseconds(250));
    Answer(fine, milliseconds(5));
    Answer(slow, milliseconds(300));
  }
  EXPECT_EQ(TierOf(weak), LinkTier::kStrained);
  EXPECT_EQ(TierOf(fine), LinkTier::kGood);
  EXPECT_EQ(TierOf(odd), LinkTier::kGood);
  EXPECT_EQ(TierOf(slow), LinkTier::kPoor);  // a poor link is poor, whatever the device
  EXPECT_EQ(net_->governor().Divisor(*net_->sessions().Get(weak.session())), 2u);
  // The device caught up: Good again after three gradings in a row (the hysteresis of a link).
  device(weak, 1.2f);
  EXPECT_EQ(net_->sessions().Get(weak.session())->grade().device, 1.2f);
  Second({}, milliseconds(0));
  Second({}, milliseconds(0));
  EXPECT_EQ(TierOf(weak), LinkTier::kStrained);
  Second({}, milliseconds(0));
  EXPECT_EQ(TierOf(weak), LinkTier::kGood);
  // net.governor_device_strained 0: hints are heard, and ignored.
  NetOptions off;
  off.governor_device_strained = 0;
  NetGovernor ignoring(net_->sessions(), kernel_->bus(), off);
  LinkGrade weakest;
  weakest.SayDevice(0.1f);
  EXPECT_EQ(ignoring.Grade(weakest), LinkTier::kGood);
  EXPECT_EQ(net_->governor().Grade(weakest), LinkTier::kStrained);
}

// A link that slows takes its tier at the next grading, says so on the Bus, and gets replicas
// every 4th tick; it climbs back only after three gradings in a row found it better.
TEST_F(GovernorTest, ASlowLinkIsPoorAtOnceAndGoodAgainAfterThreeGoodGradings) {
  CapturePeer& slow = Join("slow");
  CapturePeer& mute = Join("mute");  // never answers a ping: never graded
  Second({&slow}, milliseconds(300));
  Second({&slow}, milliseconds(300));
  EXPECT_EQ(TierOf(slow), LinkTier::kPoor);
  EXPECT_EQ(TierOf(mute), LinkTier::kGood);
  EXPECT_EQ(heard, std::vector<std::string>{fmt::format("{} poor 300", slow.session())});
  const NetGovernor& g = net_->governor();
  EXPECT_EQ(g.Divisor(*net_->sessions().Get(slow.session())), 4u);
  EXPECT_EQ(g.Divisor(*net_->sessions().Get(mute.session())), 1u);
  EXPECT_FALSE(g.Uniform());  // a delivery asks each session's divisor

  // Replicas: the slow link every 4th tick, the mute one every tick.
  const ReplicaId board = Board(Audience::kAll, 10);
  Pass(milliseconds(0));
  slow.Replicas();
  mute.Replicas();
  int slow_sends = 0, mute_sends = 0;
  for (int tick = 1; tick <= 8; ++tick) {
    ASSERT_TRUE(net_->replicas().SetInt(board, 0, tick).ok());
    Pass(milliseconds(100));
    Answer(slow, milliseconds(300));
    slow_sends += slow.Replicas().empty() ? 0 : 1;
    mute_sends += mute.Replicas().empty() ? 0 : 1;
  }
  EXPECT_EQ(slow_sends, 2);
  EXPECT_EQ(mute_sends, 8);

  // Back to 5 ms: the ten kept samples turn over, then three better gradings.
  heard.clear();
  int seconds = 0;
  while (TierOf(slow) != LinkTier::kGood && seconds < 30) {
    Second({&slow}, milliseconds(5));
    ++seconds;
  }
  EXPECT_EQ(TierOf(slow), LinkTier::kGood);
  EXPECT_TRUE(g.Uniform());  // every session Good: a delivery asks nobody
  // Ten samples to push every 300 out (the jitter falls to 0 only then), and three gradings.
  EXPECT_GE(seconds, 10);
  EXPECT_LE(seconds, 14);
  // Down from poor is through strained or straight to good, each said once.
  ASSERT_FALSE(heard.empty());
  EXPECT_EQ(heard.back(), fmt::format("{} good 5", slow.session()));
  const GovernorStats st = net_->governor().stats();
  EXPECT_GE(st.changes[static_cast<int>(LinkTier::kPoor)], 1u);
  EXPECT_GE(st.changes[static_cast<int>(LinkTier::kGood)], 1u);
  EXPECT_GT(st.gradings, 10u);
}

// A ping not answered before the next one goes out is a probe lost.
TEST_F(GovernorTest, PingsLeftUnansweredAreLossAndMakeALinkPoor) {
  CapturePeer& p = Join("lossy");
  Second({&p}, milliseconds(5));
  Second({&p}, milliseconds(5));
  EXPECT_EQ(TierOf(p), LinkTier::kGood);
  Second({}, milliseconds(0));
  std::uint64_t time_ns = 0;
  ASSERT_TRUE(p.LastPing(&answered_[&p], &time_ns));  // that ping is never answered
  Second({&p}, milliseconds(5));
  Second({&p}, milliseconds(5));
  // Five probes: the third lost (counted when the fourth went out), the others answered.
  EXPECT_EQ(net_->sessions().Get(p.session())->grade().quality.probes(), 5u);
  EXPECT_DOUBLE_EQ(net_->sessions().Get(p.session())->grade().quality.Loss(), 0.2);
  EXPECT_EQ(TierOf(p), LinkTier::kPoor);
}

// Spec: Low unreliable channels are shed to Poor clients, High always flows; once the link is
// Good again, Low flows again.
TEST_F(GovernorTest, LowUnreliableEventsAreShedToAPoorLinkUntilItRecovers) {
  CapturePeer& p = Join("p");
  const ChannelId low = Unreliable("low", UnreliablePriority::kLow);
  const ChannelId high = Unreliable("high", UnreliablePriority::kHigh);
  const std::vector<std::uint8_t> payload = Bytes("x");
  const SessionId to[] = {p.session()};
  ASSERT_TRUE(net_->SendList(low, to, payload).ok());
  ASSERT_TRUE(net_->SendList(high, to, payload).ok());
  EXPECT_EQ(p.EventsOn(low), 1);
  EXPECT_EQ(p.EventsOn(high), 1);
  Second({&p}, milliseconds(400));
  Second({&p}, milliseconds(400));
  ASSERT_EQ(TierOf(p), LinkTier::kPoor);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(net_->SendList(low, to, payload).ok());
    ASSERT_TRUE(net_->SendList(high, to, payload).ok());
  }
  EXPECT_EQ(p.EventsOn(low), 1);
  EXPECT_EQ(p.EventsOn(high), 4);
  EXPECT_EQ(net_->governor().stats().shed, 3u);
  EXPECT_EQ(net_->channels().Find(low)->counters().shed, 3u);
  for (int s = 0; s < 30 && TierOf(p) != LinkTier::kGood; ++s) {
    Second({&p}, milliseconds(5));
  }
  ASSERT_EQ(TierOf(p), LinkTier::kGood);
  ASSERT_TRUE(net_->SendList(low, to, payload).ok());
  EXPECT_EQ(p.EventsOn(low), 2);
  EXPECT_EQ(net_->governor().stats().shed, 3u);
}

TEST_F(GovernorTest, TheSessionsAreCountedByTier) {
  CapturePeer& a = Join("a");
  Join("b");
  Second({&a}, milliseconds(150));
  Second({&a}, milliseconds(150));
  const GovernorStats st = net_->governor().stats();
  EXPECT_EQ(st.sessions[static_cast<int>(LinkTier::kGood)], 1u);
  EXPECT_EQ(st.sessions[static_cast<int>(LinkTier::kStrained)], 1u);
  EXPECT_EQ(st.sessions[static_cast<int>(LinkTier::kPoor)], 0u);
  EXPECT_EQ(net_->Snapshot().governor.sessions[static_cast<int>(LinkTier::kStrained)], 1u);
}

TEST(NetGovernorLimits, LimitsOutOfOrderAreRefusedByName) {
  NetOptions o;
  EXPECT_TRUE(NetGovernor::Check(o).ok());
  o.governor_good_rtt_ms = 300;
  Status s = NetGovernor::Check(o);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("net.governor_good_rtt_ms (300) must be at least 0 and at most "
                             "net.governor_poor_rtt_ms (250)"),
            std::string::npos)
      << s.message();
  o = NetOptions();
  o.governor_poor_loss = 1.5;
  s = NetGovernor::Check(o);
  EXPECT_NE(s.message().find("in [0, 1]"), std::string::npos) << s.message();
  o = NetOptions();
  o.governor_up_after = 0;
  EXPECT_NE(NetGovernor::Check(o).message().find("net.governor_up_after must be at least 1"),
            std::string::npos);
}

}  // namespace
}  // namespace molt::kernel::net
