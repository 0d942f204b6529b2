// SPDX-License-Identifier: Apache-2.0
// File: tests/net/net_fixture.h
//
// NetTest: a booted kernel, a Network listening on a free loopback port, the test payload
// schema's verifiers and builders, and Run(): the client body on its own thread while this
// thread runs the kernel loop.
#ifndef MOLT_TESTS_NET_NET_FIXTURE_H_
#define MOLT_TESTS_NET_NET_FIXTURE_H_

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>
#include <functional>
#include <memory>
#include <thread>

#include "kernel/src/admin/stats_json.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/net/network.h"
#include "test_client.h"
#include "test_payloads_generated.h"

namespace molt::kernel::net {

inline bool VerifySay(std::span<const std::uint8_t> p) {
  flatbuffers::Verifier v(p.data(), p.size());
  return molt::test::VerifySayBuffer(v);
}

inline bool VerifyAdd(std::span<const std::uint8_t> p) {
  flatbuffers::Verifier v(p.data(), p.size());
  return v.VerifyBuffer<molt::test::Add>(nullptr);
}

inline std::vector<std::uint8_t> SayPayload(const std::string& text, std::uint8_t room = 0,
                                            float volume = 1) {
  flatbuffers::FlatBufferBuilder b;
  auto t = b.CreateString(text);
  b.Finish(molt::test::CreateSay(b, t, room, volume));
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

inline std::vector<std::uint8_t> AddPayload(std::int32_t amount) {
  flatbuffers::FlatBufferBuilder b;
  b.Finish(molt::test::CreateAdd(b, amount));
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

// The network's stats as the server renders them (the "net" section, admin/stats_json.h).
inline std::string NetStatsJson(const Network& net) {
  return boost::json::serialize(admin::NetJson(net.Snapshot()));
}

// Rejections the network counted before a channel was known (transport, envelope, lookup).
inline std::uint64_t Rejected(const Network& net, Reject r) {
  return net.stats().transport_rejected[static_cast<std::size_t>(r)];
}

inline std::string Text(const molt::wire::Envelope* e) {
  if (auto* r = e->body_as_Refuse()) {
    return r->text() ? r->text()->str() : "";
  }
  if (auto* b = e->body_as_Bye()) {
    return b->text() ? b->text()->str() : "";
  }
  if (auto* x = e->body_as_Error()) {
    return x->text() ? x->text()->str() : "";
  }
  return "";
}

class NetTest : public ::testing::Test {
 protected:
  // Closing a test client's socket ends its session at once: resume tests opt in to a window.
  void SetUp() override { Boot(NoResume()); }
  static NetOptions NoResume() {
    NetOptions o;
    o.resume_window_seconds = 0;
    return o;
  }
  void TearDown() override { Teardown(); }

  void Teardown() {
    net_.reset();
    if (kernel_) {
      (void)kernel_->Shutdown();
      kernel_.reset();
    }
  }

  // (Re)boots with `o` (port forced to 0). Does not listen: Listen() does.
  void Boot(NetOptions o) {
    Teardown();
    o.port = 0;
    KernelOptions ko;
    ko.tick_rate = 1000;
    auto k = Kernel::Boot(std::move(ko));
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kernel_ = std::move(k.value());
    net_ = std::make_unique<Network>(*kernel_, std::move(o));
  }

  void Listen() {
    Status s = net_->Listen();
    ASSERT_TRUE(s.ok()) << s.ToString();
    port_ = net_->port();
    ASSERT_NE(port_, 0);
  }

  // Declares an intent on the Say schema; `guard` adds a passing validator.
  ChannelId DeclareSay(const std::string& name, bool guard = true, double rate = 0,
                       IntentHandler handler = nullptr) {
    ChannelSpec spec;
    spec.name = name;
    spec.kind = ChannelKind::kIntent;
    spec.schema = "molt.test.Say";
    spec.verify = VerifySay;
    spec.rate = rate;
    spec.on_intent =
        handler ? std::move(handler) : IntentHandler([](Session&, std::span<Value>) {});
    if (guard) {
      spec.rules = {FieldRule::MaxLength(0, "text", 32)};
    }
    auto id = net_->channels().Declare(std::move(spec));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? id.value() : 0;
  }

  // Declares a channel of `kind` carrying molt.test.Say (a predicted intent, or an unreliable
  // channel, `latest_wins` or not). With a handler, clients send on it (Open: verified, no rules)
  // and `on_intent` takes each; an unreliable channel without one goes server -> client only.
  // `rate`: the channel's rate a second (0: the default 30).
  ChannelId DeclareSayOf(ChannelKind kind, const std::string& name, IntentHandler on_intent,
                         bool latest_wins = false, double rate = 0) {
    ChannelSpec spec;
    spec.name = name;
    spec.kind = kind;
    spec.schema = "molt.test.Say";
    spec.latest_wins = latest_wins;
    spec.rate = rate;
    if (on_intent) {
      spec.verify = VerifySay;
      spec.open = true;
      spec.on_intent = std::move(on_intent);
    }
    auto id = net_->channels().Declare(std::move(spec));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? id.value() : 0;
  }

  // Declares an event channel (server -> client) carrying molt.test.Say.
  ChannelId DeclareEvent(const std::string& name) {
    ChannelSpec spec;
    spec.name = name;
    spec.kind = ChannelKind::kEvent;
    spec.schema = "molt.test.Say";
    auto id = net_->channels().Declare(std::move(spec));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? id.value() : 0;
  }

  // Declares an Open request channel carrying molt.test.Add, answered by `handler`.
  ChannelId DeclareAddRequest(const std::string& name, RequestHandler handler) {
    ChannelSpec spec;
    spec.name = name;
    spec.kind = ChannelKind::kRequest;
    spec.schema = "molt.test.Add";
    spec.verify = VerifyAdd;
    spec.open = true;
    spec.on_request = std::move(handler);
    auto id = net_->channels().Declare(std::move(spec));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? id.value() : 0;
  }

  // Runs the kernel loop until `done` or `timeout`.
  bool RunUntil(const std::function<bool()>& done,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(20000)) {
    auto& io = kernel_->loop().io();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io.restart();
      kernel_->loop().RunFor(std::chrono::milliseconds(5));
    }
    return done();
  }

  // Runs `body` (the client side) on a thread while the loop runs here.
  void Run(const std::function<void()>& body) {
    std::atomic<bool> finished{false};
    std::thread t([&] {
      body();
      finished = true;
    });
    const bool ok = RunUntil([&] { return finished.load(); });
    t.join();
    ASSERT_TRUE(ok) << "the client body did not finish in time";
  }

  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<Network> net_;
  std::uint16_t port_ = 0;
};

}  // namespace molt::kernel::net

#endif  // MOLT_TESTS_NET_NET_FIXTURE_H_
