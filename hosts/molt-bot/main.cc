// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/main.cc
//
// molt-bot: N simulated clients on libmolt_client (the C API, as any app would use it). They
// join, send intents and requests at a given rate on the chosen channels, and the bot reports
// what happened: a progress line every second, then a summary (intents sent and refused by the
// client's own limiter, requests answered / rejected / rate limited / timed out, round-trip
// p50 and p99, disconnects). The load generator for benchmarks and hot-swap tests: with
// --verify each client numbers its messages on the counter plugin's echo channel and checks
// that every echo comes back once and in order (lost, duplicated, out of order are reported).
// SIGINT or SIGTERM ends the run early, with the summary. --ws drives the clients over the
// server's WebSocket port (moltd --ws) instead of TCP, --tls over TLS, both: wss://.
//
// Everything runs on one thread. Between rounds the bot sleeps until one of its clients' sockets
// is ready, a client's timer is due, or a message is owed: the clients are waited on together
// with their sockets and timeouts (client API 4), as an app with its own poller would, so an idle
// bot costs no CPU. The summary says how much CPU the run took and how often it woke.
#include <flatbuffers/flatbuffers.h>
#include <molt/client.h>
#include <poll.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cxxopts.hpp>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "counter_generated.h"

namespace {

using Clock = std::chrono::steady_clock;

// An empty FlatBuffers table: a valid payload for any root type whose fields are all optional.
const std::vector<std::uint8_t> kEmptyTable = {0x08, 0x00, 0x00, 0x00, 0x04, 0x00,
                                               0x04, 0x00, 0x04, 0x00, 0x00, 0x00};

struct Totals {
  std::uint64_t intents_sent = 0;
  std::uint64_t intents_refused = 0;  // by the client's limiter or queue: never reached the server
  std::uint64_t requests_sent = 0;
  std::uint64_t requests_ok = 0;
  std::uint64_t requests_rejected = 0;
  std::uint64_t requests_rate_limited = 0;
  std::uint64_t requests_timed_out = 0;
  std::uint64_t requests_failed = 0;  // any other status
  std::uint64_t disconnects = 0;
  std::vector<double> rtts;  // seconds, one per answered request
  // --verify: numbered echoes.
  std::uint64_t echoes_sent = 0;
  std::uint64_t echoes_back = 0;  // distinct numbers that came back
  std::uint64_t duplicated = 0;
  std::uint64_t out_of_order = 0;
};

volatile std::sig_atomic_t g_stop = 0;  // SIGINT / SIGTERM: finish now, with the summary

struct Bot;

// One request in flight: the bot and when it was sent.
struct InFlight {
  Bot* bot;
  Clock::time_point sent;
};

struct Bot {
  molt_client* client = nullptr;
  Totals* totals = nullptr;
  std::vector<std::uint16_t> intents;
  std::vector<std::uint16_t> requests;
  bool joined = false;
  double owed = 0;  // messages this bot should have sent by now, not yet sent
  std::size_t next = 0;
  // --verify: the echo channels, the next number to send, and what came back.
  std::uint16_t echo = 0;
  std::uint64_t next_seq = 1;
  std::uint64_t highest = 0;  // the highest number echoed so far
  std::vector<bool> echoed;   // index: number
};

// An echo came back: once and in order, or counted as neither.
void OnEcho(void* ud, std::uint16_t, const void* data, std::size_t size) {
  auto* b = static_cast<Bot*>(ud);
  flatbuffers::Verifier v(static_cast<const std::uint8_t*>(data), size);
  if (!v.VerifyBuffer<molt::counter::Echo>(nullptr)) {
    return;
  }
  const std::uint64_t seq = flatbuffers::GetRoot<molt::counter::Echo>(data)->seq();
  if (seq == 0 || seq >= b->next_seq) {
    return;  // never sent
  }
  if (b->echoed.size() <= seq) {
    b->echoed.resize(seq + 1);
  }
  Totals& t = *b->totals;
  if (b->echoed[seq]) {
    ++t.duplicated;
    return;
  }
  b->echoed[seq] = true;
  ++t.echoes_back;
  if (seq < b->highest) {
    ++t.out_of_order;
  }
  b->highest = std::max(b->highest, seq);
}

std::vector<std::uint8_t> EchoPayload(std::uint64_t seq) {
  flatbuffers::FlatBufferBuilder fbb(32);
  fbb.Finish(molt::counter::CreateEcho(fbb, seq));
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

void OnState(void* ud, std::int32_t state, const char* reason) {
  auto* b = static_cast<Bot*>(ud);
  if (state == MOLT_CLIENT_CLOSED) {
    ++b->totals->disconnects;
    std::cerr << "molt-bot: a client closed: " << reason << "\n";
  }
}

void OnResponse(void* ud, molt_status_t status, const void*, std::size_t) {
  std::unique_ptr<InFlight> f(static_cast<InFlight*>(ud));
  Totals& t = *f->bot->totals;
  switch (status) {
    case MOLT_OK:
      ++t.requests_ok;
      t.rtts.push_back(std::chrono::duration<double>(Clock::now() - f->sent).count());
      break;
    case MOLT_ERR_REJECTED:
      ++t.requests_rejected;
      break;
    case MOLT_ERR_RATE_LIMITED:
      ++t.requests_rate_limited;
      break;
    case MOLT_ERR_TIMEOUT:
      ++t.requests_timed_out;
      break;
    default:
      ++t.requests_failed;
  }
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) {
    return 0;
  }
  const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

std::string Line(const Totals& t, std::size_t connected, std::size_t clients) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%zu/%zu connected  intents %llu sent %llu refused  requests %llu ok %llu "
                "rejected %llu limited %llu timed out  rtt p50 %.2f ms p99 %.2f ms  "
                "disconnects %llu",
                connected, clients, static_cast<unsigned long long>(t.intents_sent),
                static_cast<unsigned long long>(t.intents_refused),
                static_cast<unsigned long long>(t.requests_ok),
                static_cast<unsigned long long>(t.requests_rejected),
                static_cast<unsigned long long>(t.requests_rate_limited),
                static_cast<unsigned long long>(t.requests_timed_out),
                Percentile(t.rtts, 0.5) * 1e3, Percentile(t.rtts, 0.99) * 1e3,
                static_cast<unsigned long long>(t.disconnects));
  return buf;
}

// How often the bot woke up, for the summary.
std::uint64_t g_wakeups = 0;

// Sleeps until a client's socket is ready for what it waits for, a client's timer is due, or
// `limit` seconds pass, whichever comes first.
void WaitForClients(const std::vector<Bot>& bots, std::size_t count, double limit) {
  std::vector<pollfd> fds;
  double wait = limit;
  for (std::size_t i = 0; i < count; ++i) {
    const double t = molt_client_timeout(bots[i].client);
    if (t >= 0) {
      wait = std::min(wait, t);
    }
    const int fd = molt_client_socket(bots[i].client);
    const std::int32_t events = molt_client_socket_events(bots[i].client);
    if (fd >= 0 && events != 0) {
      fds.push_back({fd,
                     static_cast<short>(((events & MOLT_CLIENT_WAIT_READ) != 0 ? POLLIN : 0) |
                                        ((events & MOLT_CLIENT_WAIT_WRITE) != 0 ? POLLOUT : 0)),
                     0});
    }
  }
  ++g_wakeups;
  if (wait <= 0) {
    return;
  }
  const auto ns = static_cast<long long>(std::min(wait, 3600.0) * 1e9);
  const timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  ::ppoll(fds.data(), fds.size(), &ts, nullptr);
}

// Seconds of CPU this process used so far (user and system).
double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options options(
      "molt-bot",
      "molt-bot: simulated clients for a Molt server (load and soak tests).\n\n"
      "Each client joins as <user-prefix><n>, then sends --rate messages per second, taking\n"
      "the named intent and request channels in turn. Payloads are an empty FlatBuffers table\n"
      "unless --payload names a file. A progress line is printed every second, then a summary;\n"
      "the exit code is 0 when every client stayed connected (and, with --verify, every echo\n"
      "came back once and in order), 1 otherwise, 2 on bad flags. SIGINT ends the run early.\n"
      "--controllers runs client-side plugins (controllers) in the first client.\n");
  options.set_width(100);
  // clang-format off
  options.add_options()
      ("host", "server address", cxxopts::value<std::string>()->default_value("127.0.0.1"))
      ("p,port", "server port (with --ws: its WebSocket port, moltd --ws)",
       cxxopts::value<int>()->default_value("7777"))
      ("c,clients", "simulated clients", cxxopts::value<int>()->default_value("10"))
      ("d,duration", "seconds to run after the clients joined",
       cxxopts::value<double>()->default_value("10"))
      ("r,rate", "messages per client per second", cxxopts::value<double>()->default_value("10"))
      ("intent", "an intent channel to send on (repeatable)",
       cxxopts::value<std::vector<std::string>>())
      ("request", "a request channel to call (repeatable)",
       cxxopts::value<std::vector<std::string>>())
      ("payload", "file holding the payload bytes (default: an empty table)",
       cxxopts::value<std::string>())
      ("join-rate", "clients connecting per second (the server limits handshakes per address: "
                    "net.handshakes_per_address, 20/s by default)",
       cxxopts::value<double>()->default_value("20"))
      ("user-prefix", "user ids are this plus the client's number",
       cxxopts::value<std::string>()->default_value("bot"))
      ("controllers", "controllers (a .so or a directory of them) for the first client to run, "
       "e.g. build/default/controllers", cxxopts::value<std::string>())
      ("tls", "connect over TLS, verifying the server's certificate (against the system's CAs, "
              "or --tls-ca)")
      ("tls-ca", "with --tls: the CA certificates to trust (PEM)", cxxopts::value<std::string>(),
       "FILE")
      ("tls-name", "with --tls: the name the certificate must carry (default: --host)",
       cxxopts::value<std::string>(), "NAME")
      ("ws", "connect over WebSocket (ws://HOST:PORT/; wss:// with --tls), as a browser's "
             "client does: the same frames, one per binary message")
      ("verify", "send numbered messages on the counter plugin's echo channel (counter.Echo, "
                 "echoed on counter.Echoed) at --rate instead, and check every echo comes back "
                 "once and in order")
      ("h,help", "print this help and exit");
  // clang-format on
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << "molt-bot: " << e.what() << "\nTry 'molt-bot --help'.\n";
    return 2;
  }
  if (args.count("help") != 0) {
    std::cout
        << options.help() << "\nExample:\n"
        << "  molt-bot --port 7777 --clients 50 --rate 20 --request scores.Get\n"
        << "  molt-bot --clients 1 --rate 0 --duration 2 --controllers build/default/controllers\n"
        << "  molt-bot --clients 50 --rate 20 --duration 60 --verify   (then kill -HUP moltd)\n"
        << "  molt-bot --host game.example.com --tls --tls-ca ca.pem\n"
        << "  molt-bot --ws --port 7780 --clients 100 --verify   (moltd --ws 127.0.0.1:7780)\n";
    return 0;
  }
  const int clients = args["clients"].as<int>();
  const double rate = args["rate"].as<double>();
  const double duration = args["duration"].as<double>();
  const int port = args["port"].as<int>();
  if (clients < 1 || clients > 100000 || !(rate >= 0) || !(duration > 0) || port < 1 ||
      port > 65535) {
    std::cerr << "molt-bot: --clients must be 1..100000, --rate >= 0, --duration > 0, --port "
                 "1..65535\n";
    return 2;
  }
  const std::vector<std::string> intent_names = args.count("intent")
                                                    ? args["intent"].as<std::vector<std::string>>()
                                                    : std::vector<std::string>();
  const std::vector<std::string> request_names =
      args.count("request") ? args["request"].as<std::vector<std::string>>()
                            : std::vector<std::string>();
  std::vector<std::uint8_t> payload = kEmptyTable;
  if (args.count("payload") != 0) {
    std::ifstream in(args["payload"].as<std::string>(), std::ios::binary);
    if (!in) {
      std::cerr << "molt-bot: cannot read --payload " << args["payload"].as<std::string>() << "\n";
      return 2;
    }
    payload.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  const bool verify = args.count("verify") != 0;
  if (verify && (!intent_names.empty() || !request_names.empty())) {
    std::cerr << "molt-bot: --verify sends on counter.Echo only: drop --intent and --request\n";
    return 2;
  }
  std::signal(SIGINT, [](int) { g_stop = 1; });
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  const double join_rate = args["join-rate"].as<double>();
  if (!(join_rate > 0)) {
    std::cerr << "molt-bot: --join-rate must be above 0\n";
    return 2;
  }
  molt_client_options client_options{};
  client_options.struct_size = sizeof(client_options);
  const std::string tls_ca = args.count("tls-ca") ? args["tls-ca"].as<std::string>() : "";
  const std::string tls_name = args.count("tls-name") ? args["tls-name"].as<std::string>() : "";
  if (args.count("tls") != 0) {
    client_options.flags |= MOLT_CLIENT_TLS;
    client_options.tls_ca_file = tls_ca.empty() ? nullptr : tls_ca.c_str();
    client_options.tls_server_name = tls_name.empty() ? nullptr : tls_name.c_str();
  } else if (!tls_ca.empty() || !tls_name.empty()) {
    std::cerr << "molt-bot: --tls-ca and --tls-name go with --tls\n";
    return 2;
  }
  if (args.count("ws") != 0) {
    client_options.flags |= MOLT_CLIENT_WEBSOCKET;
  }
  Totals totals;
  std::vector<Bot> bots(static_cast<std::size_t>(clients));
  const std::string host = args["host"].as<std::string>();
  const std::string prefix = args["user-prefix"].as<std::string>();
  const auto joining = Clock::now();
  for (std::size_t i = 0; i < bots.size(); ++i) {
    // Pace the connects at --join-rate, stepping the clients already connecting meanwhile.
    const auto due =
        joining + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(static_cast<double>(i) / join_rate));
    while (Clock::now() < due) {
      WaitForClients(bots, i, std::chrono::duration<double>(due - Clock::now()).count());
      for (std::size_t j = 0; j < i; ++j) {
        molt_client_step(bots[j].client, 0);
      }
    }
    Bot& b = bots[i];
    b.totals = &totals;
    if (molt_client_create(&client_options, &b.client) != MOLT_OK) {
      std::cerr << "molt-bot: cannot create client " << i << "\n";
      return 1;
    }
    molt_client_on_state(b.client, OnState, &b);
    if (i == 0 && args.count("controllers") != 0) {
      // One client kernel per process: the first client runs them, the others are plain.
      const std::string path = args["controllers"].as<std::string>();
      if (molt_client_load_controllers(b.client, path.c_str()) != MOLT_OK ||
          molt_client_start(b.client) != MOLT_OK) {
        std::cerr << "molt-bot: --controllers " << path << ": " << molt_client_last_error(b.client)
                  << "\n";
        return 2;
      }
    }
    const std::string user = prefix + std::to_string(i);
    if (molt_client_connect(b.client, host.c_str(), static_cast<std::uint16_t>(port), user.c_str(),
                            nullptr, 0, nullptr, 0) != MOLT_OK) {
      std::cerr << "molt-bot: " << molt_client_last_error(b.client) << "\n";
      return 1;
    }
  }

  // Join: step until every client is connected or gave up.
  const auto join_deadline = Clock::now() + std::chrono::seconds(15);
  std::size_t connected = 0;
  std::size_t settled = 0;
  while (settled < bots.size() && Clock::now() < join_deadline) {
    settled = connected = 0;
    for (Bot& b : bots) {
      molt_client_step(b.client, 0);
      const std::int32_t s = molt_client_state(b.client);
      connected += s == MOLT_CLIENT_CONNECTED;
      settled += s != MOLT_CLIENT_CONNECTING;
    }
    if (settled < bots.size()) {
      WaitForClients(bots, bots.size(), 0.1);
    }
  }
  for (Bot& b : bots) {
    if (molt_client_state(b.client) != MOLT_CLIENT_CONNECTED) {
      continue;
    }
    b.joined = true;
    if (verify) {
      std::uint16_t echoed = 0;
      if (molt_client_channel(b.client, "counter.Echo", &b.echo) != MOLT_OK ||
          molt_client_channel(b.client, "counter.Echoed", &echoed) != MOLT_OK ||
          molt_client_on_event(b.client, echoed, OnEcho, &b) != MOLT_OK) {
        std::cerr << "molt-bot: --verify needs the counter plugin: "
                  << molt_client_last_error(b.client) << "\n";
        return 2;
      }
    }
    for (auto [names, ids] :
         {std::pair{&intent_names, &b.intents}, std::pair{&request_names, &b.requests}}) {
      for (const std::string& n : *names) {
        std::uint16_t id = 0;
        if (molt_client_channel(b.client, n.c_str(), &id) != MOLT_OK) {
          std::cerr << "molt-bot: " << molt_client_last_error(b.client) << "\n";
          return 2;
        }
        ids->push_back(id);
      }
    }
  }
  std::cout << "molt-bot: " << connected << "/" << bots.size() << " clients joined "
            << (args.count("ws") == 0    ? ""
                : args.count("tls") != 0 ? "wss://"
                                         : "ws://")
            << host << ":" << port << (args.count("ws") != 0 ? "/" : "") << "\n";

  // Run: each round, every client sends what its rate owes and steps; then the bot sleeps until
  // a client needs a step, the next message is owed, or the next report is due.
  const double cpu_at_start = CpuSeconds();
  const std::uint64_t wakeups_at_start = g_wakeups;
  const auto start = Clock::now();
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration));
  auto last = start;
  auto next_report = start + std::chrono::seconds(1);
  while (Clock::now() < end && g_stop == 0) {
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last).count();
    last = now;
    connected = 0;
    for (Bot& b : bots) {
      if (!b.joined || molt_client_state(b.client) != MOLT_CLIENT_CONNECTED) {
        molt_client_step(b.client, 0);
        continue;
      }
      ++connected;
      const std::size_t channels = verify ? 1 : b.intents.size() + b.requests.size();
      b.owed += channels > 0 ? rate * dt : 0;
      while (b.owed >= 1) {
        b.owed -= 1;
        if (verify) {
          const std::vector<std::uint8_t> echo = EchoPayload(b.next_seq);
          if (molt_client_intent(b.client, b.echo, echo.data(), echo.size()) == MOLT_OK) {
            ++b.next_seq;
            ++totals.echoes_sent;
          } else {
            ++totals.intents_refused;  // the same number goes next time
          }
          continue;
        }
        const std::size_t k = b.next++ % channels;
        if (k < b.intents.size()) {
          const bool ok =
              molt_client_intent(b.client, b.intents[k], payload.data(), payload.size()) == MOLT_OK;
          ++(ok ? totals.intents_sent : totals.intents_refused);
        } else {
          auto* f = new InFlight{&b, Clock::now()};
          if (molt_client_request(b.client, b.requests[k - b.intents.size()], payload.data(),
                                  payload.size(), 0, OnResponse, f) == MOLT_OK) {
            ++totals.requests_sent;
          } else {
            delete f;
            ++totals.requests_rate_limited;
          }
        }
      }
      molt_client_step(b.client, 0);
    }
    if (now >= next_report) {
      next_report += std::chrono::seconds(1);
      const double t = std::chrono::duration<double>(now - start).count();
      std::cout << "[" << static_cast<int>(t + 0.5) << "s] " << Line(totals, connected, bots.size())
                << std::endl;
    }
    // The next message owed (rate is per client; the one owing most goes first), the next report
    // or the end, whichever comes first.
    double owed_most = 0;
    for (const Bot& b : bots) {
      owed_most = std::max(owed_most, b.owed);
    }
    double limit = std::chrono::duration<double>(std::min(next_report, end) - Clock::now()).count();
    if (rate > 0 && (verify || !intent_names.empty() || !request_names.empty())) {
      limit = std::min(limit, (1 - owed_most) / rate);
    }
    WaitForClients(bots, bots.size(), std::max(limit, 0.0));
  }
  const double run_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double run_cpu = CpuSeconds() - cpu_at_start;
  const std::uint64_t run_wakeups = g_wakeups - wakeups_at_start;
  // Let the last answers arrive, then leave.
  const auto drain = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < drain &&
         (totals.requests_ok + totals.requests_rejected + totals.requests_rate_limited +
                  totals.requests_timed_out + totals.requests_failed <
              totals.requests_sent ||
          totals.echoes_back < totals.echoes_sent)) {
    WaitForClients(bots, bots.size(), std::chrono::duration<double>(drain - Clock::now()).count());
    for (Bot& b : bots) {
      molt_client_step(b.client, 0);
    }
  }
  std::cout << "molt-bot: done: " << Line(totals, connected, bots.size()) << std::endl;
  bool verified = true;
  if (verify) {
    const std::uint64_t lost = totals.echoes_sent - totals.echoes_back;
    std::cout << "molt-bot: verify: " << totals.echoes_sent << " sent " << totals.echoes_back
              << " echoed " << lost << " lost " << totals.duplicated << " duplicated "
              << totals.out_of_order << " out of order" << std::endl;
    verified = lost == 0 && totals.duplicated == 0 && totals.out_of_order == 0;
  }
  char cpu[160];
  std::snprintf(cpu, sizeof cpu,
                "molt-bot: cpu %.3f s in %.1f s of running (%.2f%% of a core), %llu wakeups",
                run_cpu, run_seconds, run_seconds > 0 ? 100 * run_cpu / run_seconds : 0.0,
                static_cast<unsigned long long>(run_wakeups));
  std::cout << cpu << std::endl;
  const bool all_stayed = connected == bots.size() && totals.disconnects == 0;
  for (Bot& b : bots) {
    molt_client_disconnect(b.client);
    molt_client_destroy(b.client);
  }
  return all_stayed && verified ? 0 : 1;
}
