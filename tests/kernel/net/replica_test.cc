// SPDX-License-Identifier: Apache-2.0
// The server's replicas (kernel/src/net/replica.h) on the manual clock: what each session is sent
// and when. Sessions join through peers that keep every frame the network writes, so the test
// reads deliveries deadline by deadline, with no socket and no real time.
#include "kernel/src/net/replica.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/core/kernel.h"
#include "kernel/src/net/network.h"
#include "test_client.h"

namespace molt::kernel::net {
namespace {

namespace w = ::molt::wire;
using std::chrono::milliseconds;

// A connection that keeps what the network writes to it.
class CapturePeer final : public Peer {
 public:
  explicit CapturePeer(std::string address = "10.0.0.1") : Peer(std::move(address)) {}
  void Write(std::span<const std::uint8_t> frame) override {
    frames_.emplace_back(frame.begin(), frame.end());
  }
  std::size_t queued_bytes() const override { return 0; }
  void Close(bool) override { closed_ = true; }

  // The replica updates written since the last call, as "<kind> <field>=<value> ...".
  std::vector<std::string> Replicas() {
    std::vector<std::string> out;
    for (; read_ < frames_.size(); ++read_) {
      const std::vector<std::uint8_t>& f = frames_[read_];
      const w::Envelope* env = w::GetSizePrefixedEnvelope(f.data());
      const w::Replica* r = env->body_as_Replica();
      if (r == nullptr) {
        continue;
      }
      std::string line = w::EnumNameReplicaUpdateKind(r->kind());
      if (r->values() != nullptr) {
        for (const w::ReplicaValue* v : *r->values()) {
          line += " " + std::to_string(v->field()) + "=";
          line += v->bytes() != nullptr ? std::string(v->bytes()->begin(), v->bytes()->end())
                                        : std::to_string(v->int_value());
        }
      }
      out.push_back(line);
    }
    return out;
  }

 private:
  std::vector<std::vector<std::uint8_t>> frames_;
  std::size_t read_ = 0;
  bool closed_ = false;
};

class ReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KernelOptions ko;
    ko.clock = &clock_;
    auto k = Kernel::Boot(std::move(ko));
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kernel_ = std::move(k.value());
    NetOptions o;
    o.port = 0;
    o.handshakes_per_address = 1e6;
    net_ = std::make_unique<Network>(*kernel_, o);
  }
  void TearDown() override {
    for (auto& p : peers_) {
      if (!p->closed()) {
        net_->Detach(*p, ExitReason::kClientClosed);
      }
    }
    net_.reset();
    (void)kernel_->Shutdown();
  }

  // A session joined through a new peer.
  CapturePeer& Join(const std::string& user) {
    peers_.push_back(std::make_unique<CapturePeer>());
    CapturePeer& p = *peers_.back();
    EXPECT_TRUE(net_->Attach(p));
    net_->Receive(p, test::TestClient::HelloFrame(user));
    EXPECT_NE(p.session(), 0u) << user << " was not welcomed";
    return p;
  }
  // A replica "board": joins (int), last (bytes up to 16), at `rate` deliveries per second.
  ReplicaId Board(Audience audience = Audience::kAll, double rate = 10) {
    ReplicaSpec spec;
    spec.name = "board";
    spec.tick_rate = rate;
    spec.audience = audience;
    spec.fields = {{"joins", ReplicaFieldType::kInt, 0}, {"last", ReplicaFieldType::kBytes, 16}};
    Result<ReplicaId> id = net_->replicas().Create(std::move(spec), &owner_);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }
  // Lets `d` pass and runs what is due.
  void Pass(Duration d) {
    clock_.Advance(d);
    kernel_->scheduler().Step();
  }
  static std::vector<std::uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

  ManualClock clock_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<Network> net_;
  std::vector<std::unique_ptr<CapturePeer>> peers_;
  int owner_ = 0;
};

TEST_F(ReplicaTest, WritesBetweenDeadlinesLeaveAsOneDeltaAtTheNextDeadline) {
  CapturePeer& ada = Join("ada");
  const ReplicaId board = Board();  // 10 deliveries a second: 100 ms apart
  ASSERT_TRUE(net_->replicas().SetInt(board, 0, 1).ok());
  Pass(milliseconds(0));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Snapshot 0=1 1="});
  for (int i = 2; i <= 5; ++i) {  // four writes within one period
    ASSERT_TRUE(net_->replicas().SetInt(board, 0, i).ok());
    ASSERT_TRUE(net_->replicas().SetBytes(board, 1, Bytes("ada" + std::to_string(i))).ok());
    Pass(milliseconds(20));
  }
  EXPECT_TRUE(ada.Replicas().empty());  // 80 ms after the last delivery: not yet
  Pass(milliseconds(20));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Delta 0=5 1=ada5"});
  // Writing what is already there marks nothing: no frame at the next deadline.
  ASSERT_TRUE(net_->replicas().SetInt(board, 0, 5).ok());
  Pass(milliseconds(200));
  EXPECT_TRUE(ada.Replicas().empty());
  // Only the fields written go.
  ASSERT_TRUE(net_->replicas().SetBytes(board, 1, Bytes("bob")).ok());
  Pass(milliseconds(100));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Delta 1=bob"});
  EXPECT_EQ(net_->replicas().stats().deltas_sent, 2u);
}

TEST_F(ReplicaTest, ALateJoinerGetsTheStateAsASnapshotWhileOthersGetTheDelta) {
  CapturePeer& ada = Join("ada");
  const ReplicaId board = Board();
  ASSERT_TRUE(net_->replicas().SetInt(board, 0, 1).ok());
  Pass(milliseconds(100));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Snapshot 0=1 1="});
  CapturePeer& bob = Join("bob");
  ASSERT_TRUE(net_->replicas().SetInt(board, 0, 2).ok());
  Pass(milliseconds(100));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Delta 0=2"});
  EXPECT_EQ(bob.Replicas(), std::vector<std::string>{"Snapshot 0=2 1="});
}

TEST_F(ReplicaTest, AListAudienceReachesOnlyItsSessionsAndLeavingItSendsARemove) {
  CapturePeer& ada = Join("ada");
  CapturePeer& bob = Join("bob");
  const ReplicaId board = Board(Audience::kList);
  ASSERT_TRUE(net_->replicas().AddSession(board, bob.session()).ok());
  ASSERT_TRUE(net_->replicas().AddSession(board, bob.session()).ok());  // twice: once
  Pass(milliseconds(100));
  EXPECT_TRUE(ada.Replicas().empty());
  EXPECT_EQ(bob.Replicas(), std::vector<std::string>{"Snapshot 0=0 1="});
  ASSERT_TRUE(net_->replicas().RemoveSession(board, bob.session()).ok());
  Pass(milliseconds(100));
  EXPECT_EQ(bob.Replicas(), std::vector<std::string>{"Remove"});
  ASSERT_TRUE(net_->replicas().SetInt(board, 0, 9).ok());
  Pass(milliseconds(100));
  EXPECT_TRUE(bob.Replicas().empty());
  EXPECT_EQ(net_->replicas().AddSession(board, 999).message(), "session 999 is not active");
  EXPECT_EQ(net_->replicas().AddSession(Board(), ada.session()).message(),
            "replica \"board\" goes to everyone; create it with the list audience to choose "
            "sessions");
}

TEST_F(ReplicaTest, DestroyingOrItsOwnerLeavingRemovesItFromEverySessionThatHadIt) {
  CapturePeer& ada = Join("ada");
  const ReplicaId first = Board();
  const ReplicaId second = Board(Audience::kAll, 50);  // names need not be unique
  Pass(milliseconds(100));
  EXPECT_EQ(ada.Replicas().size(), 2u);
  ASSERT_TRUE(net_->replicas().Destroy(first).ok());
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Remove"});
  EXPECT_EQ(net_->replicas().SetInt(first, 0, 1).message(),
            "set: replica " + std::to_string(first) + " does not exist (destroyed?)");
  net_->replicas().ReleaseOwner(&owner_);  // the plugin stopped
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Remove"});
  EXPECT_EQ(net_->replicas().count(), 0u);
  EXPECT_FALSE(net_->replicas().Destroy(second).ok());
}

TEST_F(ReplicaTest, AFasterTickRateDeliversSooner) {
  CapturePeer& ada = Join("ada");
  const ReplicaId fast = Board(Audience::kAll, 100);  // 10 ms apart
  Pass(milliseconds(0));
  EXPECT_EQ(ada.Replicas().size(), 1u);
  ASSERT_TRUE(net_->replicas().SetInt(fast, 0, 1).ok());
  Pass(milliseconds(9));
  EXPECT_TRUE(ada.Replicas().empty());
  Pass(milliseconds(1));
  EXPECT_EQ(ada.Replicas(), std::vector<std::string>{"Delta 0=1"});
}

}  // namespace
}  // namespace molt::kernel::net
