// SPDX-License-Identifier: Apache-2.0
// File: tests/fuzz/net_fuzz.cc
//
// libFuzzer target for the network's inbound pipeline. Each input is the byte stream of one
// connection, fed through Network::Receive on a fresh fuzz Peer in several pieces (so frames
// arrive split anywhere), after a valid Hello for half of the inputs. The kernel and the Network
// are booted once, on a ManualClock, with channels that reach every stage of the pipeline (ids in
// declaration order; tests/fuzz/make_corpus.py writes seeds against them):
//   0 fuzz.Say    intent, Say payload: three rules, an Intent.fuzz.Say validator (room 3 is
//                 refused, room 4 throws), a handler that kicks ("kick"), throws ("throw") or
//                 sends an event back ("echo"); 30 per second, burst 10
//   1 fuzz.Add    request, Add payload: a range rule, a validator refusing 666, a handler that
//                 answers amount * 2 (rejects negatives; 7 is left to the timeout; 8 throws; 9 is
//                 answered twice)
//   2 fuzz.Bare   intent with no validator: fail-closed
//   3 fuzz.Open   intent declared Open, unlimited rate
//   4 fuzz.Event  event (server -> client)
// Auth.Hello refuses the user "mallory" and verifies "alias" as "alice".
//
// Input layout:
//   byte 0      bit 0: send the valid Hello first; bit 1: step the scheduler after each piece;
//               bits 2..7: how far the clock moves after each piece, in 100 ms
//   bytes 1..3  three cut points, each at byte / 256 of the stream
//   bytes 4..   the stream
//
// Besides ASan and UBSan, every input checks (a failure aborts, so libFuzzer keeps the input):
// every frame the server writes is a size-prefixed Envelope that verifies; Close() is called at
// most once and nothing is written after it; once the peer is gone no peer, half-open connection
// or session is left.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/net/network.h"
#include "molt_wire_generated.h"
#include "net_fixture.h"
#include "test_client.h"
#include "test_payloads_generated.h"

namespace molt::kernel::net {
namespace {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "net_fuzz: invariant broken: %s\n", what);
  std::abort();
}

// A copy of a payload at an aligned address: frames start anywhere in the input, and the
// handlers below read fields through the generated accessors.
std::vector<std::uint8_t> Aligned(const Value& bytes) {
  const auto* p = static_cast<const std::uint8_t*>(bytes.as.ptr);
  return std::vector<std::uint8_t>(p, p + bytes.size);
}

// A client that never reads: every frame the Network writes is checked and counted as queued.
class FuzzPeer final : public Peer {
 public:
  FuzzPeer() : Peer("192.0.2.1") {}

  void Write(std::span<const std::uint8_t> frame) override {
    if (close_called_) {
      Fail("Write() after Close()");
    }
    std::uint32_t size = 0;
    if (frame.size() < 4 || (std::memcpy(&size, frame.data(), 4), size != frame.size() - 4)) {
      Fail("a frame's length prefix does not match its size");
    }
    // Verified with its prefix, as the server aligned it (a copy: `frame` may be anywhere).
    const std::vector<std::uint8_t> copy(frame.begin(), frame.end());
    fb::Verifier verifier(copy.data(), copy.size());
    if (!w::VerifySizePrefixedEnvelopeBuffer(verifier)) {
      Fail("the server wrote an envelope that does not verify");
    }
    queued_ += frame.size();
  }
  std::size_t queued_bytes() const override { return queued_; }
  void Close(bool) override {
    if (close_called_) {
      Fail("Close() called twice");
    }
    close_called_ = true;
  }

 private:
  std::size_t queued_ = 0;
  bool close_called_ = false;
};

struct World {
  ManualClock clock;
  std::unique_ptr<Kernel> kernel;
  std::unique_ptr<Network> net;
  ChannelId event = 0;
  std::vector<std::uint8_t> hello;
};

void Declare(Network& net, ChannelSpec spec) {
  if (!net.channels().Declare(std::move(spec)).ok()) {
    Fail("a channel could not be declared");
  }
}

// Booted once and never torn down: the process ends with the fuzzer.
World* Boot() {
  Logger::Get().SetConsoleEnabled(false);  // entries are still formatted, never printed
  auto* world = new World();
  KernelOptions ko;
  ko.clock = &world->clock;
  auto kernel = Kernel::Boot(std::move(ko));
  if (!kernel.ok()) {
    Fail("Kernel::Boot failed");
  }
  world->kernel = std::move(kernel.value());

  // Small budgets and caps, so every limit is reachable within a few KiB of input.
  NetOptions o;
  o.port = 0;
  o.max_frame_bytes = 1024;
  o.bytes_per_tick = 512;
  o.messages_per_tick = 16;
  o.max_outbound_bytes = 16 * 1024;
  o.handshakes_per_address = 1e6;
  o.offender_drop_first = 2;
  o.offender_kick_after = 40;
  o.resume_window_seconds = 0;  // a lost link ends its session at once: nothing may be left
  world->net = std::make_unique<Network>(*world->kernel, o);
  Network& net = *world->net;
  Hooks& hooks = world->kernel->hooks();

  ChannelSpec say;
  say.name = "fuzz.Say";
  say.kind = ChannelKind::kIntent;
  say.schema = "molt.test.Say";
  say.verify = VerifySay;
  say.rules = {FieldRule::MaxLength(0, "text", 32),
               FieldRule::Range(1, "room", FieldType::kUInt8, 0, 7),
               FieldRule::Range(2, "volume", FieldType::kFloat, 0, 1)};
  say.rate = 30;
  say.burst = 10;
  say.on_intent = [world](Session& s, std::span<Value> args) {
    const std::vector<std::uint8_t> payload = Aligned(args[0]);
    const auto* m = fb::GetRoot<molt::test::Say>(payload.data());
    const std::string_view text = m->text() != nullptr ? m->text()->string_view() : "";
    if (text == "kick") {
      (void)world->net->Kick(s.id(), "kicked by the fuzz handler");
    } else if (text == "throw") {
      throw std::runtime_error("the fuzz handler threw");
    } else if (text == "echo") {
      (void)world->net->Send(world->event, s.id(), payload);
    }
  };
  Declare(net, std::move(say));
  hooks.On("Intent.fuzz.Say", [](HookContext& ctx) {
    const std::vector<std::uint8_t> payload = Aligned(ctx.args[0]);
    const std::uint8_t room = fb::GetRoot<molt::test::Say>(payload.data())->room();
    if (room == 4) {
      throw std::runtime_error("the fuzz validator threw");
    }
    return room != 3;
  });

  ChannelSpec add;
  add.name = "fuzz.Add";
  add.kind = ChannelKind::kRequest;
  add.schema = "molt.test.Add";
  add.verify = VerifyAdd;
  add.rules = {FieldRule::Range(0, "amount", FieldType::kInt32, -1000, 1000)};
  add.timeout_seconds = 1;
  add.on_request = [world](Session&, std::span<Value> args, RequestToken token) {
    const std::vector<std::uint8_t> payload = Aligned(args[0]);
    const std::int32_t amount = fb::GetRoot<molt::test::Add>(payload.data())->amount();
    if (amount == 7) {
      return;  // answered by the timeout
    }
    if (amount == 8) {
      throw std::runtime_error("the fuzz request handler threw");
    }
    const auto code = amount < 0 ? Status::Code::kRejected : Status::Code::kOk;
    (void)world->net->Reply(token, code, AddPayload(amount * 2));
    if (amount == 9) {
      (void)world->net->Reply(token, code, {});  // STALE: already answered
    }
  };
  Declare(net, std::move(add));
  hooks.On("Request.fuzz.Add", [](HookContext& ctx) {
    const std::vector<std::uint8_t> payload = Aligned(ctx.args[0]);
    return fb::GetRoot<molt::test::Add>(payload.data())->amount() != 666;
  });

  ChannelSpec bare;
  bare.name = "fuzz.Bare";
  bare.kind = ChannelKind::kIntent;
  bare.schema = "molt.test.Say";
  bare.verify = VerifySay;
  bare.on_intent = [](Session&, std::span<Value>) {};
  Declare(net, std::move(bare));

  ChannelSpec open;
  open.name = "fuzz.Open";
  open.kind = ChannelKind::kIntent;
  open.schema = "molt.test.Add";
  open.verify = VerifyAdd;
  open.open = true;
  open.rate = std::numeric_limits<double>::infinity();
  open.on_intent = [](Session&, std::span<Value>) {};
  Declare(net, std::move(open));

  ChannelSpec event;
  event.name = "fuzz.Event";
  event.kind = ChannelKind::kEvent;
  event.schema = "molt.test.Say";
  auto id = net.channels().Declare(std::move(event));
  if (!id.ok()) {
    Fail("the event channel could not be declared");
  }
  world->event = id.value();

  hooks.On("Auth.Hello", [](HookContext& ctx) {
    const std::string_view user = ctx.args[0].AsString();
    if (user == "alias") {
      ctx.args[0] = Value::String("alice");  // a literal: outlives the fire
    }
    return user != "mallory";
  });

  world->hello = molt::test::TestClient::HelloFrame("fuzz");
  return world;
}

}  // namespace
}  // namespace molt::kernel::net

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace molt::kernel;
  using namespace molt::kernel::net;
  static World* const world = Boot();
  if (size < 4) {
    return 0;
  }
  const std::uint8_t flags = data[0];
  const std::span<const std::uint8_t> stream(data + 4, size - 4);
  std::array<std::size_t, 4> cuts{};
  for (int i = 0; i < 3; ++i) {
    cuts[i] = stream.size() * data[1 + i] / 256;
  }
  cuts[3] = stream.size();
  std::sort(cuts.begin(), cuts.end());

  Network& net = *world->net;
  auto peer = std::make_unique<FuzzPeer>();  // on the heap: ASan sees any use after the input
  if (!net.Attach(*peer)) {
    Fail("Attach() refused a peer although none is attached");
  }
  auto after_piece = [&] {
    world->clock.Advance(std::chrono::milliseconds(100) * (flags >> 2));
    if ((flags & 2) != 0) {
      world->kernel->scheduler().Step();
    }
  };
  if ((flags & 1) != 0 && !peer->closed()) {
    net.Receive(*peer, world->hello);
  }
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    if (!peer->closed() && cut > from) {
      net.Receive(*peer, stream.subspan(from, cut - from));
    }
    from = cut;
    after_piece();
  }
  if (!peer->closed()) {
    net.Detach(*peer, ExitReason::kClientClosed);
  }
  peer.reset();
  if (net.peers() != 0 || net.half_open() != 0 || net.sessions().count() != 0) {
    Fail("a peer, half-open connection or session outlived its connection");
  }
  return 0;
}
