// SPDX-License-Identifier: Apache-2.0
// Messages between servers (fleet/messages.h) on a real PostgreSQL 15 the benchmark starts: a
// batch (1 or 100) of messages published by one server's kernel thread and heard by another's,
// their throughput and each message's publish-to-delivery latency (p50, p99); beside the
// transport itself in the same run: libpq sending as many NOTIFYs on one connection, heard on
// another.
#include <benchmark/benchmark.h>
#include <libpq-fe.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/fleet/messages.h"
#include "tests/support/child_process.h"
#include "tests/support/postgres.h"

namespace molt::kernel::fleet {
namespace {

using SteadyClock = std::chrono::steady_clock;

molt::test::PostgresServer& FleetPostgres() {
  static molt::test::PostgresServer server;
  return server;
}

// One server's Messages, its kernel thread whoever posts (under one lock).
struct Server {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<SteadyClock::time_point> heard_at;  // by message index
  std::size_t heard = 0;
  std::unique_ptr<Messages> messages;

  Status Open(const std::string& url, const std::string& id) {
    MessagesOptions o;
    o.url = url;
    o.server_id = id;
    o.per_minute = 1e9;  // the transport, not the spec's bucket
    o.burst = 1e6;
    o.queue_max = 100'000;
    messages = std::make_unique<Messages>(
        o,
        [this](std::function<void()> fn) {
          std::lock_guard lock(mu);
          fn();
          cv.notify_all();
        },
        [] { return std::size_t{0}; }, [] { return WallMs(); });
    return messages->Open();
  }
};

void BM_Fleet_MessagesAcrossServers(benchmark::State& state) {
  if (!FleetPostgres().ok()) {
    state.SkipWithError(FleetPostgres().error().c_str());
    return;
  }
  const std::string url = FleetPostgres().NewDatabase();
  Server a, b;
  if (!a.Open(url, "a").ok() || !b.Open(url, "b").ok()) {
    state.SkipWithError("cannot open the messages");
    return;
  }
  {
    std::lock_guard lock(b.mu);
    (void)b.messages->Subscribe(&b, "bench", [&b](const Message& m, bool) {
      b.heard_at[static_cast<std::size_t>(std::stoi(m.data))] = SteadyClock::now();
      ++b.heard;
    });
  }
  const int kBatch = static_cast<int>(state.range(0));
  std::vector<double> latencies_us;
  for (auto _ : state) {
    std::vector<SteadyClock::time_point> sent(kBatch);
    {
      std::lock_guard lock(b.mu);
      b.heard_at.assign(kBatch, {});
      b.heard = 0;
    }
    for (int i = 0; i < kBatch; ++i) {
      std::lock_guard lock(a.mu);
      sent[i] = SteadyClock::now();
      (void)a.messages->Publish("bench", std::to_string(i));
    }
    std::unique_lock lock(b.mu);
    if (!b.cv.wait_for(lock, std::chrono::seconds(30),
                       [&] { return b.heard >= static_cast<std::size_t>(kBatch); })) {
      state.SkipWithError("not every message arrived");
      return;
    }
    for (int i = 0; i < kBatch; ++i) {
      latencies_us.push_back(
          std::chrono::duration<double, std::micro>(b.heard_at[i] - sent[i]).count());
    }
  }
  std::sort(latencies_us.begin(), latencies_us.end());
  state.SetItemsProcessed(state.iterations() * kBatch);
  if (!latencies_us.empty()) {
    state.counters["p50_us"] = latencies_us[latencies_us.size() / 2];
    state.counters["p99_us"] = latencies_us[latencies_us.size() * 99 / 100];
  }
}
BENCHMARK(BM_Fleet_MessagesAcrossServers)
    ->ArgName("batch")
    ->Arg(1)
    ->Arg(100)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The transport alone: 100 NOTIFYs sent one statement each on one connection, heard on another.
void BM_Fleet_Baseline_NotifyRoundTrip(benchmark::State& state) {
  if (!FleetPostgres().ok()) {
    state.SkipWithError(FleetPostgres().error().c_str());
    return;
  }
  const std::string url = FleetPostgres().NewDatabase();
  PGconn* listen = PQconnectdb(url.c_str());
  PGconn* send = PQconnectdb(url.c_str());
  PQclear(PQexec(listen, "LISTEN bench"));
  const int kBatch = static_cast<int>(state.range(0));
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) {
      PQclear(PQexec(send, ("SELECT pg_notify('bench', '" + std::to_string(i) + "')").c_str()));
    }
    int got = 0;
    while (got < kBatch) {
      pollfd p{PQsocket(listen), POLLIN, 0};
      ::poll(&p, 1, 1000);
      PQconsumeInput(listen);
      while (PGnotify* n = PQnotifies(listen)) {
        ++got;
        PQfreemem(n);
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  PQfinish(send);
  PQfinish(listen);
}
BENCHMARK(BM_Fleet_Baseline_NotifyRoundTrip)
    ->ArgName("batch")
    ->Arg(1)
    ->Arg(100)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// From `molt deploy --wait` to the last of `servers` moltd on one branch serving the build: each
// iteration deploys the other of two builds (so each one swaps) through the first server, and
// the CLI returns once every server of the branch reported it (docs/fleet.md, "Deploy reports").
// servers = 1 without a fleet database is the baseline: the same deploy on a server alone.
void BM_Fleet_DeployUntilTheLastServerServes(benchmark::State& state) {
  const int servers = static_cast<int>(state.range(0));
  const bool fleet = servers > 1;
  if (fleet && !FleetPostgres().ok()) {
    state.SkipWithError(FleetPostgres().error().c_str());
    return;
  }
  namespace fs = std::filesystem;
  const std::string dir =
      (fs::temp_directory_path() / ("molt_fleet_bench_" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::string> builds;
  for (const char* name : {"a", "b"}) {
    const std::string file = dir + "/" + name + ".molt";
    std::vector<std::string> args = {MOLT_CLI_PATH, "build", MOLT_PLUGIN_DIR, "--out", file,
                                     "--channel",   "dev"};
    if (std::string(name) == "b") {
      args.insert(args.end(), {"--health-errors", "7"});  // another manifest: another build
    }
    if (molt::test::Process(args).Wait() != 0) {
      state.SkipWithError("molt build failed");
      return;
    }
    builds.push_back(file);
  }
  const std::string url = fleet ? FleetPostgres().NewDatabase() : "";
  std::vector<std::unique_ptr<molt::test::Process>> moltds;
  std::string admin;
  for (int i = 0; i < servers; ++i) {
    const std::string data = dir + "/s" + std::to_string(i);
    std::vector<std::string> args = {MOLTD_PATH,
                                     "-p",
                                     MOLT_PLUGIN_DIR,
                                     "-d",
                                     data,
                                     "--port",
                                     "0",
                                     "--admin",
                                     "127.0.0.1:0",
                                     "--branch",
                                     "dev",
                                     "--server-id",
                                     "s" + std::to_string(i)};
    if (fleet) {
      args.insert(args.end(), {"--database", url});
    }
    moltds.push_back(std::make_unique<molt::test::Process>(args));
    if (!moltds.back()->WaitFor("SIGTERM or SIGINT closes")) {
      state.SkipWithError("moltd did not start");
      return;
    }
    if (i == 0) {
      const std::string& out = moltds.back()->output();
      const std::string at = "admin endpoint on ";
      admin = out.substr(out.find(at) + at.size());
      admin = admin.substr(0, admin.find('/', 8));
    }
  }
  int n = 0;
  for (auto _ : state) {
    molt::test::Process deploy({MOLT_CLI_PATH, "deploy", builds[n++ % 2], "--branch", "dev",
                                "--wait", "60", "--json", "--server", admin, "--data",
                                dir + "/s0"});
    if (deploy.Wait() != 0) {
      state.SkipWithError(("molt deploy failed: " + deploy.output()).c_str());
      break;
    }
  }
  for (auto& p : moltds) {
    p->Signal(SIGTERM);
    p->Wait();
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_Fleet_DeployUntilTheLastServerServes)
    ->ArgName("servers")
    ->Arg(1)
    ->Arg(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(6);

}  // namespace
}  // namespace molt::kernel::fleet
