// SPDX-License-Identifier: Apache-2.0
// File: tests/bench/client_bench.cc
//
// libmolt_client against a listening Network on its own thread (results: docs/benchmarks.md):
//   - a request's round trip (DESIGN.md §11: p50 for one client within 1.3 x a raw Asio
//     ping-pong), beside that baseline measured in the same run: a plain Boost.Asio echo server
//     (async_read_some, async_write) and a blocking POSIX client sending the same bytes and
//     waiting for them back; the client spins on the benchmark's thread;
//   - one client sending intents as fast as the API accepts them on an unlimited channel, paced
//     by the client to the server's transport budget (DESIGN.md §11: at least 90% of the budget,
//     0 floods); the app waits on the client (client API 4) whenever the send queue is full.
// Both run over plain TCP and over TLS (tls/1: a test CA and certificate made at start, the
// client verifying them), side by side.
#include <benchmark/benchmark.h>
#include <molt/client.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/net/network.h"
#include "net_fixture.h"
#include "test_client.h"
#include "tests/support/test_pki.h"

namespace molt::kernel::net {
namespace {

using Clock = std::chrono::steady_clock;

// Per-iteration times, reported as p50 and p99 counters (microseconds).
void ReportPercentiles(benchmark::State& state, std::vector<double>& us) {
  if (us.empty()) {
    return;
  }
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
}

void OnAnswer(void* ud, molt_status_t status, const void*, std::size_t) {
  *static_cast<molt_status_t*>(ud) = status;
}

// A kernel with a listening Network on its own thread, and one libmolt_client connected to it:
// what both client benchmarks run against. Channels are declared before Start().
class LoopbackServer {
 public:
  explicit LoopbackServer(NetOptions o, bool tls = false) {
    Logger::Get().SetConsoleEnabled(false);
    if (tls) {
      pki_dir_ = "/tmp/molt_bench_pki_" + std::to_string(::getpid());
      std::filesystem::create_directories(pki_dir_);
      const test::TestPki pki(pki_dir_);
      o.tls_cert_file = pki.path("server.pem");
      o.tls_key_file = pki.path("server.key");
      ca_file_ = pki.path("ca.pem");
    }
    auto booted = Kernel::Boot(KernelOptions());
    if (!booted.ok()) {
      error_ = booted.status().ToString();
      return;
    }
    kernel_ = std::move(booted.value());
    o.port = 0;
    net_ = std::make_unique<Network>(*kernel_, std::move(o));
  }
  ~LoopbackServer() {
    Stop();
    net_.reset();
    if (kernel_) {
      (void)kernel_->Shutdown();
    }
    if (!pki_dir_.empty()) {
      std::filesystem::remove_all(pki_dir_);
    }
    Logger::Get().SetConsoleEnabled(true);
  }
  Network& net() { return *net_; }
  // Listens, runs the loop on its thread, connects the client; false (with error()) on failure.
  bool Start() {
    if (!error_.empty()) {
      return false;
    }
    if (Status s = net_->Listen(); !s.ok()) {
      error_ = s.ToString();
      return false;
    }
    loop_ = std::thread([this] { kernel_->loop().Run(); });
    molt_client_options options{};
    options.struct_size = sizeof(options);
    if (!ca_file_.empty()) {
      options.flags = MOLT_CLIENT_TLS;
      options.tls_ca_file = ca_file_.c_str();
    }
    molt_client_create(&options, &client_);
    molt_client_connect(client_, "127.0.0.1", net_->port(), "bench", nullptr, 0, nullptr, 0);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (molt_client_state(client_) == MOLT_CLIENT_CONNECTING && Clock::now() < deadline) {
      molt_client_wait(client_, 0.01);
      molt_client_step(client_, 0);
    }
    if (molt_client_state(client_) != MOLT_CLIENT_CONNECTED) {
      error_ = "the client did not connect";
      return false;
    }
    return true;
  }
  // Disconnects the client and stops the loop; the network's stats may be read afterwards.
  void Stop() {
    molt_client_disconnect(client_);
    molt_client_destroy(std::exchange(client_, nullptr));
    if (loop_.joinable()) {
      kernel_->loop().Post([this] { kernel_->loop().Stop(); });
      loop_.join();
    }
  }
  molt_client* client() { return client_; }
  const std::string& error() const { return error_; }

 private:
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<Network> net_;
  std::thread loop_;
  molt_client* client_ = nullptr;
  std::string error_;
  std::string pki_dir_;  // TLS: the test CA and the server's certificate
  std::string ca_file_;
};

void BM_ClientRequestRoundTrip(benchmark::State& state) {
  NetOptions o;
  o.messages_per_tick = 1 << 20;  // a spinning client sends ~25k requests/s: not a flood here
  o.bytes_per_tick = 1 << 30;
  LoopbackServer server(o, state.range(0) == 1);
  ChannelSpec spec;
  spec.name = "bench.Echo";
  spec.kind = ChannelKind::kRequest;
  spec.schema = "molt.test.Add";
  spec.verify = VerifyAdd;
  spec.rules = {FieldRule::Range(0, "amount", FieldType::kInt32, 0, 1000)};
  spec.rate = std::numeric_limits<double>::infinity();
  Network* n = &server.net();
  spec.on_request = [n](Session&, std::span<Value> args, RequestToken reply) {
    (void)n->Reply(reply, Status::Code::kOk,
                   std::span(static_cast<const std::uint8_t*>(args[0].as.ptr), args[0].size));
  };
  const ChannelId echo = server.net().channels().Declare(std::move(spec)).value();
  if (!server.Start()) {
    state.SkipWithError(server.error().c_str());
    return;
  }
  molt_client* c = server.client();
  const std::vector<std::uint8_t> payload = AddPayload(21);
  std::vector<double> us;
  for (auto _ : state) {
    molt_status_t answer = 1;
    const auto t0 = Clock::now();
    molt_client_request(c, echo, payload.data(), payload.size(), 0, OnAnswer, &answer);
    while (answer == 1) {
      molt_client_step(c, 0);
    }
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (answer != MOLT_OK) {
      state.SkipWithError("a request failed");
      break;
    }
  }
  ReportPercentiles(state, us);
  state.counters["request_bytes"] =
      static_cast<double>(test::TestClient::RequestFrame(echo, 1, payload).size());
}
BENCHMARK(BM_ClientRequestRoundTrip)->ArgName("tls")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// The baseline: raw Asio echo, one blocking client, the same frame size as the request.
void BM_AsioPingPongBaseline(benchmark::State& state) {
  namespace ip = boost::asio::ip;
  boost::asio::io_context io;
  ip::tcp::acceptor acceptor(io, ip::tcp::endpoint(ip::make_address("127.0.0.1"), 0));
  struct Echo : std::enable_shared_from_this<Echo> {
    explicit Echo(ip::tcp::socket s) : socket(std::move(s)), in(16 * 1024) {}
    void Read() {
      socket.async_read_some(
          boost::asio::buffer(in),
          [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
            if (ec) {
              return;
            }
            boost::asio::async_write(self->socket, boost::asio::buffer(self->in.data(), n),
                                     [self](boost::system::error_code e, std::size_t) {
                                       if (!e) {
                                         self->Read();
                                       }
                                     });
          });
    }
    ip::tcp::socket socket;
    std::vector<std::uint8_t> in;
  };
  acceptor.async_accept([](boost::system::error_code ec, ip::tcp::socket s) {
    if (!ec) {
      s.set_option(ip::tcp::no_delay(true));
      std::make_shared<Echo>(std::move(s))->Read();
    }
  });
  std::thread server([&] { io.run(); });
  test::TestClient client(acceptor.local_endpoint().port());
  const std::vector<std::uint8_t> frame = test::TestClient::RequestFrame(0, 1, AddPayload(21));
  std::vector<std::uint8_t> back(frame.size());
  std::vector<double> us;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    client.SendRaw(frame);
    std::size_t got = 0;
    while (got < back.size()) {
      const ssize_t r = ::recv(client.fd(), back.data() + got, back.size() - got, 0);
      if (r <= 0) {
        state.SkipWithError("the echo server closed");
        break;
      }
      got += static_cast<std::size_t>(r);
    }
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  ReportPercentiles(state, us);
  state.counters["request_bytes"] = static_cast<double>(frame.size());
  client.Close();
  io.stop();
  server.join();
}
BENCHMARK(BM_AsioPingPongBaseline)->Unit(benchmark::kMicrosecond);

// One client's intents on an unlimited channel, as fast as the API takes them: each iteration
// sends kBatch and ends when the server has counted them all. Arg 0: the server's default budget
// (64 messages and 8192 bytes per tick at 60 Hz, a 4-tick burst), the target row; arg 1: a budget
// a thousand times larger, so the pace is the client's own (beside BM_NetLoopbackIntents/1, raw
// sockets that blast pre-encoded frames).
void BM_ClientPacedIntents(benchmark::State& state) {
  constexpr int kBatch = 2000;
  NetOptions o;
  if (state.range(0) == 1) {
    o.messages_per_tick *= 1000;
    o.bytes_per_tick *= 1000;
  }
  const double budget = o.messages_per_tick * o.tick_rate;  // messages per second
  LoopbackServer server(o, state.range(1) == 1);
  std::atomic<std::int64_t> counted{0};
  ChannelSpec spec;
  spec.name = "bench.Say";
  spec.kind = ChannelKind::kIntent;
  spec.schema = "molt.test.Say";
  spec.verify = VerifySay;
  spec.rules = {FieldRule::MaxLength(0, "text", 32)};
  spec.rate = std::numeric_limits<double>::infinity();
  spec.on_intent = [&counted](Session&, std::span<Value>) {
    counted.fetch_add(1, std::memory_order_relaxed);
  };
  const ChannelId say = server.net().channels().Declare(std::move(spec)).value();
  if (!server.Start()) {
    state.SkipWithError(server.error().c_str());
    return;
  }
  molt_client* c = server.client();
  const std::vector<std::uint8_t> payload = SayPayload("paced");
  std::int64_t sent = 0;
  std::int64_t full = 0;
  for (auto _ : state) {
    for (int i = 0; i < kBatch;) {
      const molt_status_t s = molt_client_intent(c, say, payload.data(), payload.size());
      if (s == MOLT_OK) {
        ++i;
        continue;
      }
      if (s != MOLT_ERR_STATE || molt_client_state(c) != MOLT_CLIENT_CONNECTED) {
        state.SkipWithError(molt_client_last_error(c));
        break;
      }
      ++full;  // the send queue is full: let it drain at the server's pace
      molt_client_wait(c, 0.01);
      molt_client_step(c, 0);
    }
    sent += kBatch;
    while (counted.load(std::memory_order_relaxed) < sent &&
           molt_client_state(c) == MOLT_CLIENT_CONNECTED) {
      molt_client_wait(c, 0.01);
      molt_client_step(c, 0);
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["intents_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kBatch), benchmark::Counter::kIsRate);
  state.counters["budget_per_s"] = budget;
  state.counters["queue_full"] = static_cast<double>(full);
  server.Stop();
  state.counters["floods"] = static_cast<double>(server.net().stats().transport_floods);
}
BENCHMARK(BM_ClientPacedIntents)
    ->ArgNames({"budget_x1000", "tls"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Iterations(4)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace molt::kernel::net
