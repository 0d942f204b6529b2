// SPDX-License-Identifier: Apache-2.0
// File: tests/bench/net_bench.cc
//
// The network (DESIGN.md §11), each case beside a baseline measured in the same run:
//   - the full inbound pipeline with no socket: batches of intent frames through Network::Receive
//     on a bench Peer (transport budgets, frame parse, envelope and payload verification, session,
//     channel bucket, one rule, three hook validators, the handler, the topic), beside the two
//     FlatBuffers verifications alone (what the pipeline cannot avoid);
//   - intents over loopback TCP into a listening Network whose loop runs on its own thread, from
//     1 and 8 blocking POSIX clients, beside a plain single-threaded Boost.Asio server reading the
//     same byte stream with the same pattern (16 KiB async_read_some, every whole frame parsed in
//     place), once echoing every read back (async_write) and once only counting.
// Kernel::Boot allows one kernel per process, so every case boots its own and tears it down.
// Results: docs/benchmarks.md.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <semaphore>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "kernel/src/admin/admin_api.h"
#include "kernel/src/admin/diagnostics.h"
#include "kernel/src/admin/error_watch.h"
#include "kernel/src/admin/log_ring.h"
#include "kernel/src/admin/metrics.h"
#include "kernel/src/admin/stats_json.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/network.h"
#include "kernel/src/store/sqlite_store.h"
#include "molt_wire_generated.h"
#include "net_fixture.h"
#include "test_client.h"
#include "test_payloads_generated.h"

namespace molt::kernel::net {
namespace {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;
using molt::test::TestClient;

constexpr int kFramesPerBatch = 64;         // frames per Receive call (no socket)
constexpr int kFramesPerSend = 512;         // frames per send() of a loopback client
constexpr int kFramesPerRound = 64 * 1024;  // frames per iteration, split across the clients
constexpr int kSocketRounds = 32;           // fixed iterations of the socket cases
constexpr char kChannel[] = "bench.Say";

// Keeps the kernel's info lines ("listening on ...") out of the benchmark table.
class QuietLogs {
 public:
  QuietLogs() : level_(Logger::Get().level()) { Logger::Get().SetLevel(LogLevel::kWarn); }
  QuietLogs(const QuietLogs&) = delete;
  QuietLogs& operator=(const QuietLogs&) = delete;
  ~QuietLogs() { Logger::Get().SetLevel(level_); }

 private:
  LogLevel level_;
};

// Budgets and timers out of the way: the cases measure the pipeline, not its limits.
NetOptions BenchOptions() {
  NetOptions o;
  o.port = 0;
  o.bytes_per_tick = 1u << 30;
  o.messages_per_tick = 1u << 30;
  o.handshakes_per_address = 1000;
  o.max_half_open = 1024;
  o.ping_interval_seconds = 3600;
  o.idle_timeout_seconds = 3600;
  o.handshake_timeout_seconds = 60;
  return o;
}

// A booted kernel and a Network on it, torn down (Shutdown, then reset) on destruction.
class BenchNet {
 public:
  BenchNet() {
    auto k = Kernel::Boot(KernelOptions());
    if (!k.ok()) {
      error_ = k.status().ToString();
      return;
    }
    kernel_ = std::move(k.value());
    net_ = std::make_unique<Network>(*kernel_, BenchOptions());
  }
  BenchNet(const BenchNet&) = delete;
  BenchNet& operator=(const BenchNet&) = delete;
  ~BenchNet() {
    net_.reset();
    if (kernel_) {
      (void)kernel_->Shutdown();
      kernel_.reset();
    }
  }

  const std::string& error() const { return error_; }
  Kernel& kernel() { return *kernel_; }
  Network& net() { return *net_; }

  // The spec's reference intent: the Say schema's verifier, one MaxLength rule, three hook
  // validators that pass, an unlimited rate and `handler`.
  std::string DeclareSay(IntentHandler handler) {
    ChannelSpec spec;
    spec.name = kChannel;
    spec.kind = ChannelKind::kIntent;
    spec.schema = "molt.test.Say";
    spec.verify = VerifySay;
    spec.rules = {FieldRule::MaxLength(0, "text", 64)};
    spec.rate = std::numeric_limits<double>::infinity();
    spec.on_intent = std::move(handler);
    auto id = net_->channels().Declare(std::move(spec));
    if (!id.ok()) {
      return id.status().ToString();
    }
    channel_ = id.value();
    for (int i = 0; i < 3; ++i) {
      kernel_->hooks().On(std::string("Intent.") + kChannel, [](HookContext&) { return true; });
    }
    return "";
  }
  ChannelId channel() const { return channel_; }

 private:
  std::string error_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<Network> net_;
  ChannelId channel_ = 0;
};

// `count` intent frames on `channel`, back to back as they arrive on the wire.
std::vector<std::uint8_t> IntentBatch(ChannelId channel, int count) {
  const std::vector<std::uint8_t> payload = SayPayload("hello, world", 1, 0.5f);
  const std::vector<std::uint8_t> frame = TestClient::IntentFrame(channel, payload);
  std::vector<std::uint8_t> batch;
  batch.reserve(frame.size() * static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    batch.insert(batch.end(), frame.begin(), frame.end());
  }
  return batch;
}

// A transport that writes nothing: the Network's replies are counted and dropped.
class BenchPeer final : public Peer {
 public:
  BenchPeer() : Peer("127.0.0.1") {}
  void Write(std::span<const std::uint8_t> frame) override { written_ += frame.size(); }
  std::size_t queued_bytes() const override { return 0; }
  void Close(bool) override { closed_by_network_ = true; }

  std::size_t written() const { return written_; }
  bool closed_by_network() const { return closed_by_network_; }

 private:
  std::size_t written_ = 0;
  bool closed_by_network_ = false;
};

void ReportPerFrame(benchmark::State& state, std::int64_t frames) {
  state.SetItemsProcessed(frames);
  state.counters["frames"] = static_cast<double>(frames);
  // Seconds per frame (shown as ns), from the same clock as the time column.
  state.counters["per_frame"] = benchmark::Counter(
      static_cast<double>(frames), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// --- The inbound pipeline, no socket ------------------------------------------------------------

// Arg 1: the wire inspector records every frame (an operator watches the dashboard's inspector).
void BM_NetInboundPipeline(benchmark::State& state) {
  QuietLogs quiet;
  BenchNet bench;
  if (!bench.error().empty()) {
    state.SkipWithError(bench.error().c_str());
    return;
  }
  std::uint64_t handled = 0;
  const std::string declared =
      bench.DeclareSay([&handled](Session&, std::span<Value>) { ++handled; });
  if (!declared.empty()) {
    state.SkipWithError(declared.c_str());
    return;
  }
  Network& net = bench.net();
  BenchPeer peer;
  if (!net.Attach(peer)) {
    state.SkipWithError("Attach refused the bench peer");
    return;
  }
  net.Receive(peer, TestClient::HelloFrame("bench"));
  if (peer.session() == 0 || peer.closed()) {
    state.SkipWithError("the hello was not welcomed");
    return;
  }
  const std::vector<std::uint8_t> batch = IntentBatch(bench.channel(), kFramesPerBatch);
  if (state.range(0) != 0) {
    net.Inspect(std::chrono::hours(1));
  }

  for (auto _ : state) {
    net.Receive(peer, batch);
  }

  const std::int64_t frames = state.iterations() * kFramesPerBatch;
  const NetStats stats = net.stats();
  if (peer.closed() || handled != static_cast<std::uint64_t>(frames) ||
      stats.intents_rejected != 0) {
    state.SkipWithError(("not every intent reached the handler: " +
                         boost::json::serialize(admin::NetJson(net.Snapshot())))
                            .c_str());
  }
  ReportPerFrame(state, frames);
  state.counters["frame_bytes"] = static_cast<double>(batch.size()) / kFramesPerBatch;
  net.Detach(peer, ExitReason::kClientClosed);
}
BENCHMARK(BM_NetInboundPipeline)->ArgName("inspected")->Arg(0)->Arg(1);

// The envelope verification the pipeline runs (same options, the frame with its size prefix)
// and the payload's schema verifier.
bool VerifyIntentFrame(std::span<const std::uint8_t> frame) {
  fb::Verifier::Options opts;
  opts.max_depth = 16;
  opts.max_tables = 64;
  fb::Verifier envelope(frame.data(), frame.size(), opts);
  if (!w::VerifySizePrefixedEnvelopeBuffer(envelope)) {
    return false;
  }
  const w::Intent* intent = w::GetSizePrefixedEnvelope(frame.data())->body_as_Intent();
  if (intent == nullptr || intent->payload() == nullptr) {
    return false;
  }
  fb::Verifier payload(intent->payload()->data(), intent->payload()->size());
  return molt::test::VerifySayBuffer(payload);
}

// Baseline: the same batches, split into frames and verified, nothing else.
void BM_NetInboundBaseline_VerifyOnly(benchmark::State& state) {
  const std::vector<std::uint8_t> batch = IntentBatch(1, kFramesPerBatch);
  std::uint64_t verified = 0;
  for (auto _ : state) {
    const std::uint8_t* p = batch.data();
    const std::uint8_t* end = p + batch.size();
    while (end - p >= 4) {
      std::uint32_t size = 0;
      std::memcpy(&size, p, 4);
      verified += VerifyIntentFrame(std::span(p, 4 + size)) ? 1 : 0;
      p += 4 + size;
    }
    benchmark::DoNotOptimize(verified);
  }
  const std::int64_t frames = state.iterations() * kFramesPerBatch;
  if (verified != static_cast<std::uint64_t>(frames)) {
    state.SkipWithError("a frame failed verification");
  }
  ReportPerFrame(state, frames);
}
BENCHMARK(BM_NetInboundBaseline_VerifyOnly);

// --- Loopback TCP -------------------------------------------------------------------------------

// Counts frames on the server thread and wakes the benchmark thread when a round is complete.
class RoundCounter {
 public:
  void Add(std::uint64_t n) {
    const std::uint64_t after = count_.fetch_add(n, std::memory_order_relaxed) + n;
    const std::uint64_t target = target_.load(std::memory_order_acquire);
    if (after >= target && after - n < target) {
      done_.release();
    }
  }
  // Starts a round of `n` more frames; call before the clients send them.
  void Expect(std::uint64_t n) {
    target_.store(target_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }
  bool Wait(std::chrono::seconds timeout) { return done_.try_acquire_for(timeout); }
  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> target_{0};
  std::binary_semaphore done_{0};
};

// One blocking POSIX client connection (the same kind for Molt and for the Asio baseline): the
// tests' TestClient, plus what the blasters need from their own threads.
class BenchSocket : public TestClient {
 public:
  using TestClient::TestClient;

  // Reads and drops everything until EOF (the echo baseline's clients read their echo back).
  void Drain() {
    std::vector<std::uint8_t> buf(64 * 1024);
    while (::recv(fd(), buf.data(), buf.size(), 0) > 0) {
    }
  }
  // Wakes a thread blocked in Drain() and tells the server we are gone.
  void Shutdown() { ::shutdown(fd(), SHUT_RDWR); }
  // The Molt handshake: a hello, then the Welcome. False when refused.
  bool Handshake(const std::string& user) { return Hello(user).type() == w::Body::Welcome; }
};

// Client threads that each send their share of a round of frames when told to.
class Blasters {
 public:
  // `sockets` are connected (and handshaken); each sends `frames_per_round / sockets.size()`
  // frames per round, `kFramesPerSend` per send().
  Blasters(std::vector<std::unique_ptr<BenchSocket>> sockets, std::vector<std::uint8_t> buffer,
           bool drain)
      : sockets_(std::move(sockets)), buffer_(std::move(buffer)) {
    sends_per_round_ = kFramesPerRound / kFramesPerSend / static_cast<int>(sockets_.size());
    for (std::size_t i = 0; i < sockets_.size(); ++i) {
      go_.push_back(std::make_unique<std::binary_semaphore>(0));
    }
    for (std::size_t i = 0; i < sockets_.size(); ++i) {
      threads_.emplace_back([this, i] { Run(i); });
      if (drain) {
        threads_.emplace_back([this, i] { sockets_[i]->Drain(); });
      }
    }
  }
  Blasters(const Blasters&) = delete;
  Blasters& operator=(const Blasters&) = delete;
  ~Blasters() { Stop(); }

  std::uint64_t frames_per_round() const {
    return static_cast<std::uint64_t>(sends_per_round_) * kFramesPerSend * sockets_.size();
  }
  void StartRound() {
    for (auto& g : go_) {
      g->release();
    }
  }
  bool failed() const { return failed_.load(); }

  // Ends the threads and closes the connections.
  void Stop() {
    if (threads_.empty()) {
      return;
    }
    stop_ = true;
    StartRound();
    for (auto& s : sockets_) {
      s->Shutdown();
    }
    for (auto& t : threads_) {
      t.join();
    }
    threads_.clear();
    sockets_.clear();
  }

 private:
  void Run(std::size_t i) {
    for (;;) {
      go_[i]->acquire();
      if (stop_) {
        return;
      }
      for (int s = 0; s < sends_per_round_; ++s) {
        if (!sockets_[i]->SendRaw(buffer_)) {
          failed_ = true;
          break;
        }
      }
    }
  }

  std::vector<std::unique_ptr<BenchSocket>> sockets_;
  std::vector<std::uint8_t> buffer_;
  int sends_per_round_ = 0;
  std::vector<std::unique_ptr<std::binary_semaphore>> go_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
};

// Runs the rounds: each iteration is one round of frames, timed until the server counted it.
void RunRounds(benchmark::State& state, Blasters& clients, RoundCounter& counter) {
  for (auto _ : state) {
    counter.Expect(clients.frames_per_round());
    clients.StartRound();
    if (!counter.Wait(std::chrono::seconds(30))) {
      state.SkipWithError(("the server counted " + std::to_string(counter.count()) +
                           " frames; a round did not complete in 30 s")
                              .c_str());
      break;
    }
  }
  if (clients.failed()) {
    state.SkipWithError("a client's send failed");
  }
  ReportPerFrame(state, state.iterations() * static_cast<std::int64_t>(clients.frames_per_round()));
}

void BM_NetLoopbackIntents(benchmark::State& state) {
  QuietLogs quiet;
  BenchNet bench;
  if (!bench.error().empty()) {
    state.SkipWithError(bench.error().c_str());
    return;
  }
  RoundCounter counter;
  const std::string declared =
      bench.DeclareSay([&counter](Session&, std::span<Value>) { counter.Add(1); });
  if (!declared.empty()) {
    state.SkipWithError(declared.c_str());
    return;
  }
  // Everything on the Network happens before the loop thread starts or on it.
  if (Status s = bench.net().Listen(); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  const std::uint16_t port = bench.net().port();
  Loop& loop = bench.kernel().loop();
  std::thread kernel_thread([&loop] { loop.Run(); });

  std::vector<std::unique_ptr<BenchSocket>> sockets;
  bool ready = true;
  for (int i = 0; i < state.range(0) && ready; ++i) {
    sockets.push_back(std::make_unique<BenchSocket>(port));
    ready = sockets.back()->connected() && sockets.back()->Handshake("bench" + std::to_string(i));
  }
  if (ready) {
    Blasters clients(std::move(sockets), IntentBatch(bench.channel(), kFramesPerSend),
                     /*drain=*/false);
    RunRounds(state, clients, counter);
    clients.Stop();
  } else {
    state.SkipWithError("a client could not connect or was not welcomed");
    sockets.clear();
  }
  loop.Stop();
  kernel_thread.join();
  const NetStats stats = bench.net().stats();
  if (ready && (stats.intents_rejected != 0 || stats.transport_floods != 0)) {
    state.SkipWithError(
        ("intents were rejected: " + boost::json::serialize(admin::NetJson(bench.net().Snapshot())))
            .c_str());
  }
}
BENCHMARK(BM_NetLoopbackIntents)
    ->ArgName("clients")
    ->Arg(1)
    ->Arg(8)
    ->Iterations(kSocketRounds)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Baseline: a plain single-threaded Boost.Asio server with Molt's read pattern: a 16 KiB
// async_read_some, every whole frame parsed in place (a partial one carried to the next read),
// and, when `echo`, the bytes written back with async_write before the next read.
class AsioServer {
 public:
  AsioServer(RoundCounter& counter, bool echo) : counter_(counter), echo_(echo), acceptor_(io_) {
    namespace ip = boost::asio::ip;
    const ip::tcp::endpoint endpoint(ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(ip::tcp::acceptor::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen();
    Accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  AsioServer(const AsioServer&) = delete;
  AsioServer& operator=(const AsioServer&) = delete;
  ~AsioServer() {
    io_.stop();
    thread_.join();
  }

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  struct Connection : std::enable_shared_from_this<Connection> {
    Connection(AsioServer& s, boost::asio::ip::tcp::socket sock)
        : server(s), socket(std::move(sock)), in(16 * 1024) {}

    void Read() {
      socket.async_read_some(
          boost::asio::buffer(in),
          [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
            if (ec) {
              return;
            }
            self->server.counter_.Add(self->Parse(std::span(self->in.data(), n)));
            if (!self->server.echo_) {
              self->Read();
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

    // Whole frames in `bytes` (plus the one completed from the previous read).
    std::uint64_t Parse(std::span<const std::uint8_t> bytes) {
      std::uint64_t frames = 0;
      const std::uint8_t* p = bytes.data();
      std::size_t left = bytes.size();
      while (left > 0) {
        if (partial.empty() && left >= 4 && left >= 4 + Size(p)) {
          const std::size_t n = 4 + Size(p);
          frames += Touch(p + 4, n - 4);  // in place: the whole frame is in this read
          p += n;
          left -= n;
          continue;
        }
        const std::size_t need =
            partial.size() < 4 ? 4 - partial.size() : 4 + Size(partial.data()) - partial.size();
        const std::size_t take = std::min(need, left);
        partial.insert(partial.end(), p, p + take);
        p += take;
        left -= take;
        if (partial.size() >= 4 && partial.size() == 4 + Size(partial.data())) {
          frames += Touch(partial.data() + 4, partial.size() - 4);
          partial.clear();
        }
      }
      return frames;
    }
    static std::size_t Size(const std::uint8_t* p) {
      std::uint32_t n = 0;
      std::memcpy(&n, p, 4);
      return n;
    }
    // Reads the envelope's root offset, so the frame is really looked at.
    std::uint64_t Touch(const std::uint8_t* body, std::size_t n) {
      std::uint32_t root = 0;
      if (n >= 4) {
        std::memcpy(&root, body, 4);
      }
      checksum += root;
      return 1;
    }

    AsioServer& server;
    boost::asio::ip::tcp::socket socket;
    std::vector<std::uint8_t> in;
    std::vector<std::uint8_t> partial;
    std::uint64_t checksum = 0;
  };

  void Accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, boost::asio::ip::tcp::socket s) {
      if (ec) {
        return;
      }
      s.set_option(boost::asio::ip::tcp::no_delay(true));
      std::make_shared<Connection>(*this, std::move(s))->Read();
      Accept();
    });
  }

  RoundCounter& counter_;
  bool echo_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
};

void RunAsioBaseline(benchmark::State& state, bool echo) {
  RoundCounter counter;
  AsioServer server(counter, echo);
  std::vector<std::unique_ptr<BenchSocket>> sockets;
  for (int i = 0; i < state.range(0); ++i) {
    sockets.push_back(std::make_unique<BenchSocket>(server.port()));
    if (!sockets.back()->connected()) {
      state.SkipWithError("a client could not connect");
      return;
    }
  }
  // The same bytes the Molt clients send after their hello.
  Blasters clients(std::move(sockets), IntentBatch(1, kFramesPerSend), /*drain=*/echo);
  RunRounds(state, clients, counter);
  clients.Stop();
}

void BM_AsioEchoBaseline(benchmark::State& state) { RunAsioBaseline(state, /*echo=*/true); }
BENCHMARK(BM_AsioEchoBaseline)
    ->ArgName("clients")
    ->Arg(1)
    ->Arg(8)
    ->Iterations(kSocketRounds)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The same server without the echo: DESIGN.md §11's "raw Asio, buffered parse" floor.
void BM_AsioReadParseBaseline(benchmark::State& state) { RunAsioBaseline(state, /*echo=*/false); }
BENCHMARK(BM_AsioReadParseBaseline)
    ->ArgName("clients")
    ->Arg(1)
    ->Arg(8)
    ->Iterations(kSocketRounds)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// --- The admin endpoint: one /metrics scrape ----------------------------------------------------

// One scrape (AdminApi::Metrics, on the kernel thread) with `sessions` joined and the reference
// channel declared, beside the stats JSON the kernel already builds for plugins (Kernel::StatsJson,
// net and generations sections) on the same server. The HTTP thread's part (parse, write) is not
// on the kernel thread and not here.
enum class AdminWork { kMetrics, kStatsJson, kCrashSnapshot };
void RunAdminScrape(benchmark::State& state, AdminWork work) {
  QuietLogs quiet;
  std::vector<std::unique_ptr<BenchPeer>> peers;  // outlive the network, which closes them
  BenchNet bench;
  if (!bench.error().empty() || !bench.DeclareSay([](Session&, std::span<Value>) {}).empty()) {
    state.SkipWithError("the bench network did not start");
    return;
  }
  Network& net = bench.net();
  const auto sessions = static_cast<std::size_t>(state.range(0));
  for (std::size_t i = 0; i < sessions; ++i) {
    peers.push_back(std::make_unique<BenchPeer>());
    if (!net.Attach(*peers.back())) {
      state.SkipWithError("Attach refused a bench peer");
      return;
    }
    net.Receive(*peers.back(), TestClient::HelloFrame("player" + std::to_string(i)));
  }
  if (net.sessions().count() != sessions) {
    state.SkipWithError("not every bench peer joined");
    return;
  }
  const std::string db = std::filesystem::temp_directory_path().string() + "/molt_bench_admin.db";
  std::filesystem::remove(db);
  auto store = store::SqliteStore::Open(db, [](std::function<void()> fn) { fn(); });
  loader::PluginHost plugins(
      bench.kernel(), std::filesystem::temp_directory_path().string() + "/molt_bench_admin_copies");
  // The stats the server gives plugins carry the network's section (kernel/src/server).
  bench.kernel().AddStatsSection(
      "net", [&net](boost::json::object& section) { section = admin::NetJson(net.Snapshot()); });
  admin::LogRing logs;
  admin::Diagnostics diagnostics(bench.kernel(), {});
  admin::ErrorWatch errors(bench.kernel());
  admin::AdminApi api(
      {bench.kernel(), net, plugins, **store, logs, diagnostics, errors, [](auto) {},
       [](std::string_view) -> Result<std::string> { return std::string(); }, [] { return false; },
       nullptr},
      "bench-token-0123456789");
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = work == AdminWork::kMetrics     ? api.Metrics()
                             : work == AdminWork::kStatsJson ? bench.kernel().StatsJson()
                                                             : api.BundleJson("snapshot");
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
void BM_AdminScrape(benchmark::State& state) { RunAdminScrape(state, AdminWork::kMetrics); }
BENCHMARK(BM_AdminScrape)->ArgName("sessions")->Arg(1000)->Unit(benchmark::kMicrosecond);
void BM_AdminScrapeBaseline_StatsJson(benchmark::State& state) {
  RunAdminScrape(state, AdminWork::kStatsJson);
}
BENCHMARK(BM_AdminScrapeBaseline_StatsJson)
    ->ArgName("sessions")
    ->Arg(1000)
    ->Unit(benchmark::kMicrosecond);

// The crash snapshot the diagnostics window rebuilds at low priority (debug_bundle.h): the whole
// bundle but the log lines this process logged (the ring is quiet here; each line adds ~150 bytes
// of JSON).
void BM_AdminCrashSnapshot(benchmark::State& state) {
  RunAdminScrape(state, AdminWork::kCrashSnapshot);
}
BENCHMARK(BM_AdminCrashSnapshot)->ArgName("sessions")->Arg(1000)->Unit(benchmark::kMicrosecond);

// The scrape's other half, on the HTTP thread: this process's figures from /proc and glibc.
void BM_AdminReadProcessFigures(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(admin::ReadProcessFigures());
  }
}
BENCHMARK(BM_AdminReadProcessFigures)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace molt::kernel::net
