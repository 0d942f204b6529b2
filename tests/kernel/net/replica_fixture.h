// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/net/replica_fixture.h
//
// ReplicaTest: a network on the manual clock whose sessions join through CapturePeers, peers
// that keep every frame the network writes, so a test reads replica deliveries deadline by
// deadline, with no socket and no real time (replica_test.cc, interest_test.cc).
#ifndef MOLT_TESTS_KERNEL_NET_REPLICA_FIXTURE_H_
#define MOLT_TESTS_KERNEL_NET_REPLICA_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kernel/src/core/kernel.h"
#include "kernel/src/net/network.h"
#include "kernel/src/net/replica.h"
#include "test_client.h"

namespace molt::kernel::net {

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
      const ::molt::wire::Envelope* env = ::molt::wire::GetSizePrefixedEnvelope(f.data());
      const ::molt::wire::Replica* r = env->body_as_Replica();
      if (r == nullptr) {
        continue;
      }
      std::string line = ::molt::wire::EnumNameReplicaUpdateKind(r->kind());
      if (r->values() != nullptr) {
        for (const ::molt::wire::ReplicaValue* v : *r->values()) {
          line += " " + std::to_string(v->field()) + "=";
          line += v->bytes() != nullptr ? std::string(v->bytes()->begin(), v->bytes()->end())
                                        : std::to_string(v->int_value());
        }
      }
      out.push_back(line);
    }
    return out;
  }
  // Applies the replica updates written since the last call to `copy` (field -> value, as the
  // client keeps it); how many deltas there were.
  int ApplyTo(std::map<int, double>& copy) {
    int deltas = 0;
    for (; applied_ < frames_.size(); ++applied_) {
      const ::molt::wire::Envelope* env =
          ::molt::wire::GetSizePrefixedEnvelope(frames_[applied_].data());
      const ::molt::wire::Replica* r = env->body_as_Replica();
      if (r == nullptr || r->values() == nullptr) {
        continue;
      }
      deltas += r->kind() == ::molt::wire::ReplicaUpdateKind::Delta ? 1 : 0;
      for (const ::molt::wire::ReplicaValue* v : *r->values()) {
        copy[v->field()] =
            v->float_value() != 0 ? v->float_value() : static_cast<double>(v->int_value());
      }
    }
    return deltas;
  }

  // The newest Ping written (its seq and send time); false when none was.
  bool LastPing(std::uint32_t* seq, std::uint64_t* time_ns) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      const ::molt::wire::Envelope* env = ::molt::wire::GetSizePrefixedEnvelope(it->data());
      if (const ::molt::wire::Ping* ping = env->body_as_Ping()) {
        *seq = ping->seq();
        *time_ns = ping->time_ns();
        return true;
      }
    }
    return false;
  }
  // How many events were written on `channel` in all.
  int EventsOn(ChannelId channel) const {
    int n = 0;
    for (const std::vector<std::uint8_t>& f : frames_) {
      const ::molt::wire::Envelope* env = ::molt::wire::GetSizePrefixedEnvelope(f.data());
      const ::molt::wire::Event* e = env->body_as_Event();
      n += e != nullptr && e->channel() == channel ? 1 : 0;
    }
    return n;
  }

  // Applies the snapshots and removes written since the last call to `held` (the ids of the
  // replicas the client has); each one that does not fit (a snapshot of a replica it has, a
  // remove of one it has not) is counted in the result.
  int Track(std::set<ReplicaId>& held) {
    int misfits = 0;
    for (; tracked_ < frames_.size(); ++tracked_) {
      const ::molt::wire::Envelope* env =
          ::molt::wire::GetSizePrefixedEnvelope(frames_[tracked_].data());
      const ::molt::wire::Replica* r = env->body_as_Replica();
      if (r == nullptr) {
        continue;
      }
      if (r->kind() == ::molt::wire::ReplicaUpdateKind::Snapshot) {
        misfits += held.insert(r->id()).second ? 0 : 1;
      } else if (r->kind() == ::molt::wire::ReplicaUpdateKind::Remove) {
        misfits += held.erase(r->id()) == 1 ? 0 : 1;
      } else {
        misfits += held.contains(r->id()) ? 0 : 1;
      }
    }
    return misfits;
  }

 private:
  std::vector<std::vector<std::uint8_t>> frames_;
  std::size_t read_ = 0;
  std::size_t applied_ = 0;
  std::size_t tracked_ = 0;
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

  // A session joined through a new peer (its Hello saying `device_quality`, 0: nothing).
  CapturePeer& Join(const std::string& user, float device_quality = 0) {
    peers_.push_back(std::make_unique<CapturePeer>());
    CapturePeer& p = *peers_.back();
    EXPECT_TRUE(net_->Attach(p));
    net_->Receive(p, test::TestClient::HelloFrame(user, 2, 0, {}, {}, {}, device_quality));
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

}  // namespace molt::kernel::net

#endif  // MOLT_TESTS_KERNEL_NET_REPLICA_FIXTURE_H_
