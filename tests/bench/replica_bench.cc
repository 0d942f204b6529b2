// SPDX-License-Identifier: Apache-2.0
// Replicas: one delivery (two fields written, then the replica's deadline) to N sessions, beside
// the baseline of a plugin doing it by hand: one event broadcast of a payload the size of the
// delta to the same sessions. The sessions' transports count bytes and write nothing, so both
// measure encoding and fan-out. Time per session is the per_session counter.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/net/network.h"
#include "kernel/src/net/replica.h"
#include "test_client.h"

namespace molt::kernel::net {
namespace {

class CountingPeer final : public Peer {
 public:
  CountingPeer() : Peer("127.0.0.1") {}
  void Write(std::span<const std::uint8_t> frame) override { written_ += frame.size(); }
  std::size_t queued_bytes() const override { return 0; }
  void Close(bool) override {}
  std::size_t written() const { return written_; }

 private:
  std::size_t written_ = 0;
};

// A kernel on a manual clock (so each iteration can reach the replica's next deadline without
// sleeping) and a Network with `sessions` welcomed sessions.
class Fanout {
 public:
  explicit Fanout(int sessions) {
    Logger::Get().SetLevel(LogLevel::kWarn);
    KernelOptions ko;
    ko.clock = &clock_;
    kernel_ = std::move(Kernel::Boot(std::move(ko))).value();
    NetOptions o;
    o.port = 0;
    o.handshakes_per_address = 1e9;
    o.max_half_open = 1 << 20;
    o.ping_interval_seconds = 3600;
    o.idle_timeout_seconds = 3600;
    net_ = std::make_unique<Network>(*kernel_, o);
    peers_.resize(static_cast<std::size_t>(sessions));
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      peers_[i] = std::make_unique<CountingPeer>();
      net_->Attach(*peers_[i]);
      net_->Receive(*peers_[i], molt::test::TestClient::HelloFrame("u" + std::to_string(i)));
    }
  }
  ~Fanout() {
    net_.reset();
    (void)kernel_->Shutdown();
    Logger::Get().SetLevel(LogLevel::kInfo);
  }
  bool ok() const { return net_->sessions().count() == peers_.size(); }
  Network& net() { return *net_; }
  void Step(Duration advance) {
    clock_.Advance(advance);
    kernel_->scheduler().Step();
  }
  std::size_t written() const {
    std::size_t n = 0;
    for (const auto& p : peers_) {
      n += p->written();
    }
    return n;
  }

 private:
  ManualClock clock_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<Network> net_;
  std::vector<std::unique_ptr<CountingPeer>> peers_;
};

void PerSession(benchmark::State& state, int sessions) {
  state.counters["per_session"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * sessions,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// `paced`: the network as built, its NetGovernor asked each session's divisor at each delivery
// (every session Good here); else no pace at all, the baseline of what the asking costs.
void ReplicaDelta(benchmark::State& state, bool paced) {
  const int sessions = static_cast<int>(state.range(0));
  Fanout f(sessions);
  if (!paced) {
    f.net().replicas().SetPace(nullptr);
  }
  ReplicaSpec spec;
  spec.name = "score";
  spec.fields = {{"red", ReplicaFieldType::kInt},
                 {"blue", ReplicaFieldType::kInt},
                 {"clock", ReplicaFieldType::kFloat},
                 {"banner", ReplicaFieldType::kBytes, 32}};
  spec.tick_rate = 1000;
  auto id = f.net().replicas().Create(std::move(spec), nullptr);
  if (!f.ok() || !id.ok()) {
    state.SkipWithError("setup failed");
    return;
  }
  f.Step(Seconds(0.001));  // the snapshots
  std::int64_t v = 0;
  const std::size_t before = f.written();
  for (auto _ : state) {
    (void)f.net().replicas().SetInt(*id, 0, ++v);
    (void)f.net().replicas().SetFloat(*id, 2, static_cast<double>(v));
    f.Step(Seconds(0.001));
  }
  if (f.net().replicas().stats().deltas_sent !=
      static_cast<std::uint64_t>(state.iterations()) * static_cast<std::uint64_t>(sessions)) {
    state.SkipWithError("not every session got every delta");
  }
  PerSession(state, sessions);
  state.counters["frame_bytes"] = static_cast<double>(f.written() - before) /
                                  static_cast<double>(state.iterations() * sessions);
}
void BM_ReplicaDelta(benchmark::State& state) { ReplicaDelta(state, true); }
BENCHMARK(BM_ReplicaDelta)->Arg(1)->Arg(100)->Arg(1000);

void BM_ReplicaDelta_NoPace(benchmark::State& state) { ReplicaDelta(state, false); }
BENCHMARK(BM_ReplicaDelta_NoPace)->Arg(100);

// Baseline: the same fan-out by hand, an event of the delta's size broadcast on every step.
void BM_ReplicaBaseline_EventBroadcast(benchmark::State& state) {
  const int sessions = static_cast<int>(state.range(0));
  Fanout f(sessions);
  ChannelSpec spec;
  spec.name = "score.Changed";
  spec.kind = ChannelKind::kEvent;
  spec.schema = "molt.test.Say";
  auto channel = f.net().channels().Declare(std::move(spec));
  if (!f.ok() || !channel.ok()) {
    state.SkipWithError("setup failed");
    return;
  }
  const std::vector<std::uint8_t> payload(40, 7);  // about a two-field delta's body
  for (auto _ : state) {
    (void)f.net().Broadcast(*channel, payload);
    f.Step(Seconds(0.001));
  }
  PerSession(state, sessions);
}
BENCHMARK(BM_ReplicaBaseline_EventBroadcast)->Arg(1)->Arg(100)->Arg(1000);

}  // namespace
}  // namespace molt::kernel::net
