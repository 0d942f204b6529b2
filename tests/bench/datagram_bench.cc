// SPDX-License-Identifier: Apache-2.0
// File: tests/bench/datagram_bench.cc
//
// The datagram link (net.udp, docs/network.md "The datagram link"), each case beside a baseline
// measured in the same run:
//   - the server's CPU per datagram echoed: a Network whose loop runs on its own thread, an
//     unreliable channel whose handler sends every payload back to its sender on the same channel
//     (so by the session's datagram link), driven by a real ENet client sealing like libmolt_client
//     (DatagramSeal under the Welcome's key), one UDP datagram per intent, in bursts; beside a raw
//     UDP echo server on its own thread (recvmmsg, then sendmmsg of the same batch) driven by a
//     plain UDP socket with the same payload size and the same bursts. The figure is the server
//     thread's CPU time (user + system, pthread_getcpuclockid) over the datagrams echoed;
//   - the bytes on the wire for one 32-byte payload each way (ENet's counts of what it sent and
//     received, over N datagrams sent one at a time), beside raw UDP (the payload alone);
//   - one-way latency through molt-relay (its Relay in a thread: 50 ms +- 10 ms each way, 0, 1 or
//     5% loss): a stream of server-to-client events stamped with their send time on an unreliable
//     channel, received by libmolt_client whose datagram link goes through the relay
//     (net.udp_public_port) while its TCP link goes direct; beside the same stream on ENet's
//     reliable channel through the same relay (two plain ENet hosts: this machine cannot impair
//     TCP, and a reliable, ordered, retransmitted stream over the same lossy path is what shows
//     head-of-line blocking). Both ends share the machine's steady clock.
// Kernel::Boot allows one kernel per process, so every case boots its own and tears it down.
// Results: docs/benchmarks.md, "The datagram link".
#include <benchmark/benchmark.h>
#include <enet/enet.h>
#include <molt/client.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "hosts/molt-relay/relay.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/net/network.h"
#include "kernel/src/wire/datagram_seal.h"
#include "kernel/src/wire/envelope.h"
#include "kernel/src/wire/wire.h"
#include "molt_wire_generated.h"
#include "net_fixture.h"
#include "test_client.h"
#include "test_payloads_generated.h"

namespace molt::kernel::net::datagram_bench {
namespace {

namespace w = ::molt::wire;
using molt::test::TestClient;
using molt::wire::DatagramSeal;
using SteadyClock = std::chrono::steady_clock;

constexpr std::size_t kPayloadBytes = 32;  // the payload every case echoes
constexpr int kEchoesPerRound = 1024;      // datagrams per iteration
constexpr int kEchoRounds = 16;            // fixed iterations of the echo cases
constexpr int kWireDatagrams = 1000;       // datagrams counted by the wire-bytes case
constexpr std::size_t kIpUdpHeaders = 28;  // IPv4 (20, no options) + UDP (8)
constexpr char kEchoChannel[] = "bench.Echo";

// CPU time a thread has used so far (user + system), in nanoseconds.
std::int64_t ThreadCpuNs(std::thread& thread) {
  clockid_t id;
  if (pthread_getcpuclockid(thread.native_handle(), &id) != 0) {
    return 0;
  }
  timespec ts{};
  clock_gettime(id, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The payload every case echoes: kPayloadBytes, opaque (a Say table is 36 bytes at the least,
// so the echo channel's verifier checks the size only, as a fixed-size struct's would).
std::vector<std::uint8_t> Payload32() {
  std::vector<std::uint8_t> p(kPayloadBytes);
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] = static_cast<std::uint8_t>(i * 7 + 1);
  }
  return p;
}

bool Verify32(std::span<const std::uint8_t> payload) { return payload.size() == kPayloadBytes; }

void ReportPerEcho(benchmark::State& state, std::int64_t cpu_ns, std::int64_t echoed,
                   std::int64_t lost) {
  state.SetItemsProcessed(echoed);
  state.counters["echoed"] = static_cast<double>(echoed);
  state.counters["lost"] = static_cast<double>(lost);
  // The server thread's CPU time over the datagrams it echoed (ns), not the wall clock's.
  state.counters["server_cpu_ns_per_echo"] =
      echoed > 0 ? static_cast<double>(cpu_ns) / static_cast<double>(echoed) : 0.0;
}

// --- A Network with a datagram link, and an ENet client sealing like libmolt_client --------------

// A booted kernel, a Network listening on loopback TCP and UDP with the echo channel declared,
// its loop on its own thread, and one session joined over TCP whose datagram link an ENet client
// opened (bound by a first sealed datagram, echoed back). Torn down on destruction.
class EchoServer {
 public:
  // `max_links`: net.udp_max_links, which sizes ENet's peer table.
  explicit EchoServer(std::uint32_t max_links = NetOptions().udp_max_links) {
    Logger::Get().SetConsoleEnabled(false);
    auto k = Kernel::Boot(KernelOptions());
    if (!k.ok()) {
      error_ = k.status().ToString();
      return;
    }
    kernel_ = std::move(k.value());
    NetOptions o;
    o.port = 0;
    o.udp = "127.0.0.1:0";
    o.udp_max_links = max_links;
    o.bytes_per_tick = 1u << 30;  // budgets out of the way: the case measures the path
    o.messages_per_tick = 1u << 30;
    o.ping_interval_seconds = 3600;
    o.idle_timeout_seconds = 3600;
    net_ = std::make_unique<Network>(*kernel_, std::move(o));
    // Unreliable both ways: clients send on it (it has a verifier), and the handler sends each
    // payload back to its sender on it, which goes by the sender's datagram link.
    ChannelSpec spec;
    spec.name = kEchoChannel;
    spec.kind = ChannelKind::kUnreliable;
    spec.schema = "bench.Bytes32";
    spec.verify = Verify32;
    spec.open = true;  // no validator: the verifier is the whole check
    spec.rate = std::numeric_limits<double>::infinity();
    spec.on_intent = [this](Session& s, std::span<Value> args) {
      if (net_->Send(channel_, s.id(),
                     std::span(static_cast<const std::uint8_t*>(args[0].as.ptr), args[0].size))
              .ok()) {
        ++handled_;
      }
    };
    auto id = net_->channels().Declare(std::move(spec));
    if (!id.ok()) {
      error_ = id.status().ToString();
      return;
    }
    channel_ = id.value();
  }
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;
  ~EchoServer() {
    if (client_ != nullptr) {
      enet_host_destroy(client_);
    }
    if (thread_.joinable()) {
      kernel_->loop().Post([this] { kernel_->loop().Stop(); });
      thread_.join();
    }
    tcp_.reset();
    net_.reset();
    if (kernel_) {
      (void)kernel_->Shutdown();
    }
    Logger::Get().SetConsoleEnabled(true);
  }

  // Listens, runs the loop on its thread, joins over TCP, opens and binds the datagram link.
  bool Start() {
    if (!error_.empty()) {
      return false;
    }
    if (Status s = net_->Listen(); !s.ok()) {
      error_ = s.ToString();
      return false;
    }
    thread_ = std::thread([this] { kernel_->loop().Run(); });
    tcp_ = std::make_unique<TestClient>(net_->port());
    const auto welcome = tcp_->Hello("bench");
    if (welcome.type() != w::Body::Welcome) {
      error_ = "the hello was not welcomed";
      return false;
    }
    const w::Welcome* m = welcome.envelope()->body_as_Welcome();
    if (m->datagram_port() == 0 || m->datagram_key() == nullptr) {
      error_ = "the Welcome offered no datagram link";
      return false;
    }
    const std::vector<std::uint8_t> key(m->datagram_key()->begin(), m->datagram_key()->end());
    auto seal = DatagramSeal::Create(key, m->session_id(), DatagramSeal::End::kClient);
    if (!seal.ok() || enet_initialize() != 0) {
      error_ = "no seal or no ENet";
      return false;
    }
    seal_.emplace(std::move(seal).value());
    client_ = enet_host_create(nullptr, 1, 2, 0, 0);
    ENetAddress server{};
    enet_address_set_host(&server, "127.0.0.1");
    server.port = m->datagram_port();
    peer_ = client_ != nullptr ? enet_host_connect(client_, &server, 2, 0) : nullptr;
    if (peer_ == nullptr) {
      error_ = "no ENet client";
      return false;
    }
    const auto deadline = SteadyClock::now() + std::chrono::seconds(5);
    ENetEvent e;
    bool connected = false;
    while (!connected && SteadyClock::now() < deadline) {
      if (enet_host_service(client_, &e, 10) > 0 && e.type == ENET_EVENT_TYPE_CONNECT) {
        connected = true;
      }
    }
    if (!connected) {
      error_ = "the ENet client did not connect";
      return false;
    }
    payload_ = Payload32();
    // The first sealed datagram binds the link; its echo says it is up.
    Send();
    if (Collect(1, std::chrono::seconds(5)) != 1) {
      error_ = "the first datagram was not echoed";
      return false;
    }
    return true;
  }

  // One sealed intent on the echo channel, alone in its UDP datagram (sent at once).
  void Send() {
    flatbuffers::FlatBufferBuilder b(128);
    const std::vector<std::uint8_t> frame = TestClient::Finish(
        b, w::Body::Intent,
        w::CreateIntent(b, channel_, TestClient::Payload(b, payload_), ++seq_).Union());
    const std::vector<std::uint8_t> sealed = seal_->Seal(frame);
    enet_peer_send(peer_, 0,
                   enet_packet_create(sealed.data(), sealed.size(), ENET_PACKET_FLAG_UNSEQUENCED));
    enet_host_flush(client_);
  }
  // Takes echoes until `count` came back or `wait` passed; returns how many came (each opened
  // and checked to be an event on the echo channel carrying the payload).
  int Collect(int count, std::chrono::milliseconds wait) {
    const auto deadline = SteadyClock::now() + wait;
    int got = 0;
    ENetEvent e;
    while (got < count && SteadyClock::now() < deadline) {
      if (enet_host_service(client_, &e, 1) <= 0 || e.type != ENET_EVENT_TYPE_RECEIVE) {
        continue;
      }
      auto frame = seal_->Open(std::span(e.packet->data, e.packet->dataLength), &scratch_);
      if (frame.ok()) {
        const w::Envelope* env = w::GetSizePrefixedEnvelope(frame->data());
        const w::Event* ev = env->body_as_Event();
        if (ev != nullptr && ev->channel() == channel_ && ev->payload() != nullptr &&
            ev->payload()->size() == kPayloadBytes) {
          ++got;
        }
      }
      enet_packet_destroy(e.packet);
    }
    return got;
  }

  const std::string& error() const { return error_; }
  std::thread& thread() { return thread_; }
  Network& net() { return *net_; }
  ENetHost* client() { return client_; }
  ChannelId channel() const { return channel_; }
  const std::vector<std::uint8_t>& payload() const { return payload_; }
  std::uint64_t handled() const { return handled_.load(); }

 private:
  std::string error_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<Network> net_;
  ChannelId channel_ = 0;
  std::atomic<std::uint64_t> handled_{0};
  std::thread thread_;
  std::unique_ptr<TestClient> tcp_;
  std::optional<DatagramSeal> seal_;
  ENetHost* client_ = nullptr;
  ENetPeer* peer_ = nullptr;
  std::uint32_t seq_ = 0;
  std::vector<std::uint8_t> payload_;
  std::vector<std::uint8_t> scratch_;
};

// Args: datagrams the client sends back to back before it waits for their echoes (1: ping-pong),
// and net.udp_max_links (ENet's peer table: 256, the default; 64; 4095, ENet's most).
void BM_DatagramEcho(benchmark::State& state) {
  EchoServer server(static_cast<std::uint32_t>(state.range(1)));
  if (!server.Start()) {
    state.SkipWithError(server.error().c_str());
    return;
  }
  const int burst = static_cast<int>(state.range(0));
  std::int64_t echoed = 0;
  std::int64_t lost = 0;
  const std::int64_t cpu0 = ThreadCpuNs(server.thread());
  for (auto _ : state) {
    for (int sent = 0; sent < kEchoesPerRound; sent += burst) {
      for (int i = 0; i < burst; ++i) {
        server.Send();
      }
      const int got = server.Collect(burst, std::chrono::milliseconds(200));
      echoed += got;
      lost += burst - got;
    }
  }
  const std::int64_t cpu = ThreadCpuNs(server.thread()) - cpu0;
  ReportPerEcho(state, cpu, echoed, lost);
  const DatagramLinks::Counts& counts = server.net().datagrams().counts();
  state.counters["refused"] = static_cast<double>(counts.refused_total());
}
BENCHMARK(BM_DatagramEcho)
    ->ArgNames({"burst", "max_links"})
    ->Args({1, 256})
    ->Args({32, 256})
    ->Args({1, 64})
    ->Args({32, 64})
    ->Args({1, 4095})
    ->Args({32, 4095})
    ->Iterations(kEchoRounds)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// --- Baseline: a raw UDP echo server, recvmmsg and sendmmsg
// ----------------------------------------

// A UDP socket on 127.0.0.1 (port 0: any), or -1.
int UdpSocket(std::uint16_t port = 0) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::uint16_t PortOf(int fd) {
  sockaddr_in a{};
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  return ntohs(a.sin_port);
}

// Echoes every datagram back to its sender: a blocking recvmmsg of up to 64 (returning with what
// is there once one came), then one sendmmsg of the same batch. Stops on a zero-length datagram.
class RawEchoServer {
 public:
  static constexpr unsigned kBatch = 64;

  RawEchoServer() : fd_(UdpSocket()) {
    if (fd_ >= 0) {
      thread_ = std::thread([this] { Serve(); });
    }
  }
  RawEchoServer(const RawEchoServer&) = delete;
  RawEchoServer& operator=(const RawEchoServer&) = delete;
  ~RawEchoServer() {
    if (thread_.joinable()) {
      const int stop = UdpSocket();
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      to.sin_port = htons(port());
      ::sendto(stop, "", 0, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
      thread_.join();
      ::close(stop);
    }
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  bool ok() const { return fd_ >= 0; }
  std::uint16_t port() const { return PortOf(fd_); }
  std::thread& thread() { return thread_; }

 private:
  void Serve() {
    std::array<std::array<std::uint8_t, 2048>, kBatch> buffers;
    std::array<iovec, kBatch> iov;
    std::array<sockaddr_in, kBatch> from;
    std::array<mmsghdr, kBatch> msgs;
    for (;;) {
      for (unsigned i = 0; i < kBatch; ++i) {
        iov[i] = {buffers[i].data(), buffers[i].size()};
        msgs[i] = {};
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &from[i];
        msgs[i].msg_hdr.msg_namelen = sizeof from[i];
      }
      const int n = ::recvmmsg(fd_, msgs.data(), kBatch, MSG_WAITFORONE, nullptr);
      if (n <= 0) {
        continue;
      }
      for (int i = 0; i < n; ++i) {
        if (msgs[i].msg_len == 0) {
          return;
        }
        iov[i].iov_len = msgs[i].msg_len;  // back as long as it came
      }
      int sent = 0;
      while (sent < n) {
        const int m = ::sendmmsg(fd_, msgs.data() + sent, static_cast<unsigned>(n - sent), 0);
        if (m <= 0) {
          break;
        }
        sent += m;
      }
    }
  }

  int fd_;
  std::thread thread_;
};

// Arg: datagrams the client sends back to back before it waits for their echoes (1: ping-pong).
void BM_RawUdpEchoBaseline(benchmark::State& state) {
  RawEchoServer server;
  const int fd = UdpSocket();
  if (!server.ok() || fd < 0) {
    state.SkipWithError("no UDP socket");
    return;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(server.port());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    state.SkipWithError("connect failed");
    ::close(fd);
    return;
  }
  const std::vector<std::uint8_t> payload = Payload32();
  std::array<std::uint8_t, 2048> in{};
  const int burst = static_cast<int>(state.range(0));
  std::int64_t echoed = 0;
  std::int64_t lost = 0;
  const std::int64_t cpu0 = ThreadCpuNs(server.thread());
  for (auto _ : state) {
    for (int sent = 0; sent < kEchoesPerRound; sent += burst) {
      for (int i = 0; i < burst; ++i) {
        (void)::send(fd, payload.data(), payload.size(), 0);
      }
      int got = 0;
      pollfd p{fd, POLLIN, 0};
      while (got<burst&& ::poll(&p, 1, 200)> 0) {
        if (::recv(fd, in.data(), in.size(), 0) == static_cast<ssize_t>(payload.size())) {
          ++got;
        }
      }
      echoed += got;
      lost += burst - got;
    }
  }
  const std::int64_t cpu = ThreadCpuNs(server.thread()) - cpu0;
  ReportPerEcho(state, cpu, echoed, lost);
  ::close(fd);
}
BENCHMARK(BM_RawUdpEchoBaseline)
    ->ArgName("burst")
    ->Arg(1)
    ->Arg(32)
    ->Iterations(kEchoRounds)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// --- Bytes on the wire
// ------------------------------------------------------------------------------

// kWireDatagrams echoes, one at a time, counted by the client's ENet host: what it sent (sealed
// intents) and what it received (sealed events), the UDP payload bytes and the UDP datagrams,
// beside raw UDP's kPayloadBytes. Each byte figure per datagram; `*_ip_bytes` adds the IPv4 and
// UDP headers. The parts are counted apart: the frames, the seal, and what ENet added.
void BM_DatagramWireBytes(benchmark::State& state) {
  EchoServer server;
  if (!server.Start()) {
    state.SkipWithError(server.error().c_str());
    return;
  }
  ENetHost* client = server.client();
  std::int64_t echoed = 0;
  std::uint64_t sent_bytes = 0;
  std::uint64_t sent_datagrams = 0;
  std::uint64_t received_bytes = 0;
  std::uint64_t received_datagrams = 0;
  for (auto _ : state) {
    client->totalSentData = client->totalSentPackets = 0;
    client->totalReceivedData = client->totalReceivedPackets = 0;
    for (int i = 0; i < kWireDatagrams; ++i) {
      server.Send();
      echoed += server.Collect(1, std::chrono::milliseconds(200));
    }
    sent_bytes += client->totalSentData;
    sent_datagrams += client->totalSentPackets;
    received_bytes += client->totalReceivedData;
    received_datagrams += client->totalReceivedPackets;
  }
  if (echoed != state.iterations() * kWireDatagrams) {
    state.SkipWithError("not every datagram was echoed (loopback lost one): the counts are off");
    return;
  }
  const auto per = [&](std::uint64_t v, std::uint64_t n) {
    return n > 0 ? static_cast<double>(v) / static_cast<double>(n) : 0.0;
  };
  // The frames inside the seals: an Intent one way, an Event the other, each size-prefixed.
  flatbuffers::FlatBufferBuilder b(128);
  const std::size_t intent_frame =
      TestClient::Finish(
          b, w::Body::Intent,
          w::CreateIntent(b, server.channel(), TestClient::Payload(b, server.payload()), 1).Union())
          .size();
  flatbuffers::FlatBufferBuilder e(64 + kPayloadBytes);  // as Network::SendList builds it
  const std::size_t event_frame =
      w::FinishFrame(
          e, w::Body::Event,
          w::CreateEvent(e, server.channel(), w::PayloadVector(e, server.payload()), 1).Union())
          .size();
  state.counters["payload"] = static_cast<double>(kPayloadBytes);
  state.counters["intent_frame"] = static_cast<double>(intent_frame);
  state.counters["event_frame"] = static_cast<double>(event_frame);
  state.counters["seal"] = static_cast<double>(DatagramSeal::kOverhead);
  state.counters["c2s_udp_bytes"] = per(sent_bytes, sent_datagrams);
  state.counters["s2c_udp_bytes"] = per(received_bytes, received_datagrams);
  state.counters["c2s_enet"] =
      per(sent_bytes, sent_datagrams) - static_cast<double>(intent_frame + DatagramSeal::kOverhead);
  state.counters["s2c_enet"] = per(received_bytes, received_datagrams) -
                               static_cast<double>(event_frame + DatagramSeal::kOverhead);
  state.counters["c2s_ip_bytes"] = per(sent_bytes, sent_datagrams) + kIpUdpHeaders;
  state.counters["s2c_ip_bytes"] = per(received_bytes, received_datagrams) + kIpUdpHeaders;
  state.counters["raw_ip_bytes"] = static_cast<double>(kPayloadBytes + kIpUdpHeaders);
  state.counters["c2s_datagrams"] = static_cast<double>(sent_datagrams);
  state.counters["s2c_datagrams"] = static_cast<double>(received_datagrams);
}
BENCHMARK(BM_DatagramWireBytes)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// --- One-way latency through molt-relay ----------------------------------------------------------

constexpr double kStreamHz = 60;                         // events per second (the default tick)
constexpr int kStreamEvents = 600;                       // measured events per case (10 s)
constexpr auto kStreamWarmup = std::chrono::seconds(2);  // sent first, not measured
constexpr auto kRelayDelay = std::chrono::milliseconds(50);
constexpr auto kRelayJitter = std::chrono::milliseconds(10);
constexpr std::uint64_t kRelaySeed = 7;

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
      .count();
}

// kPayloadBytes with the send time (steady clock, ns) in its first 8 bytes and, after it, a
// flag: 1 for a measured event, 0 for a warm-up one.
std::vector<std::uint8_t> Stamped(bool measured) {
  std::vector<std::uint8_t> p = Payload32();
  const std::int64_t now = NowNs();
  std::memcpy(p.data(), &now, sizeof now);
  p[8] = measured ? 1 : 0;
  return p;
}

// Arrival minus send time of each measured event, in ms.
struct Arrivals {
  std::vector<double> ms;
  void Take(const void* data, std::size_t size) {
    if (size != kPayloadBytes || static_cast<const std::uint8_t*>(data)[8] != 1) {
      return;
    }
    std::int64_t sent = 0;
    std::memcpy(&sent, data, sizeof sent);
    ms.push_back(static_cast<double>(NowNs() - sent) / 1e6);
  }
};

void ReportLatency(benchmark::State& state, Arrivals& a, std::uint64_t relay_dropped) {
  std::sort(a.ms.begin(), a.ms.end());
  const auto at = [&](double q) {
    return a.ms.empty()
               ? 0.0
               : a.ms[std::min(a.ms.size() - 1,
                               static_cast<std::size_t>(q * static_cast<double>(a.ms.size())))];
  };
  state.counters["p50_ms"] = at(0.50);
  state.counters["p99_ms"] = at(0.99);
  state.counters["max_ms"] = a.ms.empty() ? 0.0 : a.ms.back();
  state.counters["sent"] = kStreamEvents;
  state.counters["delivered"] = static_cast<double>(a.ms.size());
  // Every datagram the relay dropped server-to-client during the run (warm-up, acks and pings
  // included): what the link lost, against what the app missed.
  state.counters["relay_dropped"] = static_cast<double>(relay_dropped);
}

// A free UDP port on 127.0.0.1 (bound, read, closed: the relay binds it next).
std::uint16_t FreeUdpPort() {
  const int fd = UdpSocket();
  const std::uint16_t port = fd >= 0 ? PortOf(fd) : 0;
  if (fd >= 0) {
    ::close(fd);
  }
  return port;
}

// molt-relay's Relay on its own thread, `loss` (0..1) dropped each way, kRelayDelay +-
// kRelayJitter each way, between `listen` and `to` on 127.0.0.1.
class RelayThread {
 public:
  RelayThread(std::uint16_t listen, std::uint16_t to, double loss) {
    relay::RelayOptions o;
    o.listen = {"127.0.0.1", listen};
    o.to = {"127.0.0.1", to};
    o.impairment.drop = loss;
    o.impairment.delay = kRelayDelay;
    o.impairment.jitter = kRelayJitter;
    o.seed = kRelaySeed;
    auto opened = relay::Relay::Open(o);
    if (auto* why = std::get_if<std::string>(&opened)) {
      error_ = *why;
      return;
    }
    relay_ = std::move(std::get<std::unique_ptr<relay::Relay>>(opened));
    thread_ = std::thread([this] { (void)relay_->Run(); });
  }
  RelayThread(const RelayThread&) = delete;
  RelayThread& operator=(const RelayThread&) = delete;
  ~RelayThread() {
    if (thread_.joinable()) {
      relay_->Stop();
      thread_.join();
    }
  }
  const std::string& error() const { return error_; }
  std::uint16_t port() const { return relay_->listen_address().port(); }
  relay::RelayStats stats() const { return relay_->Snapshot(); }

 private:
  std::string error_;
  std::unique_ptr<relay::Relay> relay_;
  std::thread thread_;
};

void OnStreamEvent(void* user_data, std::uint16_t, const void* data, std::size_t size) {
  static_cast<Arrivals*>(user_data)->Take(data, size);
}

// Arg: the relay's loss in percent each way. A Network (its loop on its own thread) whose Welcome
// names the relay's port (net.udp_public_port), an unreliable channel the server streams on at
// kStreamHz, and libmolt_client on this thread: its TCP link direct, its datagram link through
// the relay.
void BM_DatagramStreamLatency(benchmark::State& state) {
  Logger::Get().SetConsoleEnabled(false);
  const std::uint16_t relay_port = FreeUdpPort();
  auto booted = Kernel::Boot(KernelOptions());
  if (!booted.ok() || relay_port == 0) {
    state.SkipWithError("no kernel or no free UDP port");
    return;
  }
  std::unique_ptr<Kernel> kernel = std::move(booted.value());
  NetOptions o;
  o.port = 0;
  o.udp = "127.0.0.1:0";
  o.udp_public_port = relay_port;
  auto net = std::make_unique<Network>(*kernel, std::move(o));
  ChannelSpec spec;
  spec.name = "bench.Stream";
  spec.kind = ChannelKind::kUnreliable;
  spec.schema = "bench.Bytes32";
  const ChannelId stream = net->channels().Declare(std::move(spec)).value();
  std::string error;
  if (Status s = net->Listen(); !s.ok()) {
    error = s.ToString();
  }
  std::thread loop;
  std::unique_ptr<RelayThread> relay;
  molt_client* c = nullptr;
  Arrivals arrivals;
  std::uint64_t dropped = 0;
  if (error.empty()) {
    relay = std::make_unique<RelayThread>(relay_port, net->udp_port(),
                                          static_cast<double>(state.range(0)) / 100);
    error = relay->error();
  }
  if (error.empty()) {
    loop = std::thread([&kernel] { kernel->loop().Run(); });
    molt_client_options options{};
    options.struct_size = sizeof(options);
    molt_client_create(&options, &c);
    molt_client_connect(c, "127.0.0.1", net->port(), "bench", nullptr, 0, nullptr, 0);
    // Connected, and the datagram link bound (its first sealed datagram opened at the server).
    std::atomic<bool> bound{false};
    const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
    while (!bound && SteadyClock::now() < deadline) {
      molt_client_wait(c, 0.01);
      molt_client_step(c, 0);
      kernel->loop().Post([&] { bound = net->datagrams().counts().opened > 0; });
    }
    std::uint16_t id = 0;
    if (!bound || molt_client_channel(c, "bench.Stream", &id) != MOLT_OK) {
      error = "the client did not connect, or its datagram link did not come up";
    } else {
      molt_client_on_event(c, id, OnStreamEvent, &arrivals);
    }
  }
  for (auto _ : state) {
    if (!error.empty()) {
      break;
    }
    const auto period = std::chrono::duration_cast<SteadyClock::duration>(
        std::chrono::duration<double>(1 / kStreamHz));
    const int warmup = static_cast<int>(kStreamHz * kStreamWarmup.count());
    auto next = SteadyClock::now();
    for (int i = 0; i < warmup + kStreamEvents; ++i) {
      const bool measured = i >= warmup;
      // Stamped and sent on the kernel thread, as a plugin's tick would.
      kernel->loop().Post([&, measured] { (void)net->Broadcast(stream, Stamped(measured)); });
      next += period;
      while (SteadyClock::now() < next) {
        const double left = std::chrono::duration<double>(next - SteadyClock::now()).count();
        molt_client_wait(c, std::clamp(left, 0.0, 0.002));
        molt_client_step(c, 0);
      }
    }
    // The last ones' flight (delay + jitter, twice over).
    const auto tail = SteadyClock::now() + 4 * (kRelayDelay + kRelayJitter);
    while (SteadyClock::now() < tail) {
      molt_client_wait(c, 0.002);
      molt_client_step(c, 0);
    }
  }
  if (relay) {
    dropped = relay->stats().to_client.dropped;
  }
  if (c != nullptr) {
    molt_client_disconnect(c);
    molt_client_destroy(c);
  }
  if (loop.joinable()) {
    kernel->loop().Post([&kernel] { kernel->loop().Stop(); });
    loop.join();
  }
  relay.reset();
  net.reset();
  (void)kernel->Shutdown();
  Logger::Get().SetConsoleEnabled(true);
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  ReportLatency(state, arrivals, dropped);
}
BENCHMARK(BM_DatagramStreamLatency)
    ->ArgName("loss_pct")
    ->Arg(0)
    ->Arg(1)
    ->Arg(5)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

// Baseline: the same stream, same payload and rate, on ENet's reliable channel through the same
// relay: two plain ENet hosts serviced on this thread, no Molt, no seal.
void BM_EnetReliableStreamBaseline(benchmark::State& state) {
  if (enet_initialize() != 0) {
    state.SkipWithError("no ENet");
    return;
  }
  ENetAddress any{};
  any.host = ENET_HOST_ANY;
  enet_address_set_host(&any, "127.0.0.1");
  any.port = 0;
  ENetHost* server = enet_host_create(&any, 1, 2, 0, 0);
  ENetHost* client = enet_host_create(nullptr, 1, 2, 0, 0);
  if (server == nullptr || client == nullptr) {
    state.SkipWithError("no ENet host");
    return;
  }
  ENetAddress bound{};
  enet_socket_get_address(server->socket, &bound);
  const std::uint16_t relay_port = FreeUdpPort();
  auto relay = std::make_unique<RelayThread>(relay_port, bound.port,
                                             static_cast<double>(state.range(0)) / 100);
  Arrivals arrivals;
  ENetPeer* to_client = nullptr;
  std::string error = relay->error();
  const auto service = [&](int wait_ms) {
    ENetEvent e;
    while (enet_host_service(server, &e, 0) > 0) {
      if (e.type == ENET_EVENT_TYPE_CONNECT) {
        to_client = e.peer;
      } else if (e.type == ENET_EVENT_TYPE_RECEIVE) {
        enet_packet_destroy(e.packet);
      }
    }
    if (enet_host_service(client, &e, static_cast<enet_uint32>(wait_ms)) > 0) {
      do {
        if (e.type == ENET_EVENT_TYPE_RECEIVE) {
          arrivals.Take(e.packet->data, e.packet->dataLength);
          enet_packet_destroy(e.packet);
        }
      } while (enet_host_service(client, &e, 0) > 0);
    }
  };
  if (error.empty()) {
    ENetAddress via{};
    enet_address_set_host(&via, "127.0.0.1");
    via.port = relay_port;
    enet_host_connect(client, &via, 2, 0);
    const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
    while (to_client == nullptr && SteadyClock::now() < deadline) {
      service(1);
    }
    if (to_client == nullptr) {
      error = "the ENet client did not connect through the relay";
    }
  }
  for (auto _ : state) {
    if (!error.empty()) {
      break;
    }
    const auto period = std::chrono::duration_cast<SteadyClock::duration>(
        std::chrono::duration<double>(1 / kStreamHz));
    const int warmup = static_cast<int>(kStreamHz * kStreamWarmup.count());
    auto next = SteadyClock::now();
    for (int i = 0; i < warmup + kStreamEvents; ++i) {
      const std::vector<std::uint8_t> p = Stamped(i >= warmup);
      enet_peer_send(to_client, 1,
                     enet_packet_create(p.data(), p.size(), ENET_PACKET_FLAG_RELIABLE));
      enet_host_flush(server);
      next += period;
      while (SteadyClock::now() < next) {
        service(1);
      }
    }
    // The last ones' flight, and their retransmissions.
    const auto tail = SteadyClock::now() + std::chrono::seconds(3);
    while (SteadyClock::now() < tail &&
           arrivals.ms.size() < static_cast<std::size_t>(kStreamEvents)) {
      service(1);
    }
  }
  const std::uint64_t dropped = relay->stats().to_client.dropped;
  relay.reset();
  enet_host_destroy(client);
  enet_host_destroy(server);
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  ReportLatency(state, arrivals, dropped);
}
BENCHMARK(BM_EnetReliableStreamBaseline)
    ->ArgName("loss_pct")
    ->Arg(0)
    ->Arg(1)
    ->Arg(5)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace molt::kernel::net::datagram_bench
