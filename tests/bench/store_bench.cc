// SPDX-License-Identifier: Apache-2.0
// The profile store on both engines (store/sqlite_store.h, store/pg_store.h; the last argument of
// each case: 0 SQLite, 1 PostgreSQL, a real 15 the benchmark starts on a Unix socket): the close
// drain's shape (N dirty 1 KiB profiles saved in one batch, each conditional on its lease), one
// load (lease taken) and its release, a burst of joins through the driver; beside the raw engine
// doing the same rows in the same run: a prepared upsert of N rows in one transaction (SQLite
// with the same WAL and synchronous settings; libpq), and one libpq round trip.
#include <benchmark/benchmark.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"
#include "kernel/src/net/network.h"
#include "kernel/src/store/pg_store.h"
#include "kernel/src/store/profiles.h"
#include "kernel/src/store/sqlite_store.h"
#include "tests/support/postgres.h"

namespace molt::kernel::store {
namespace {

namespace fs = std::filesystem;

const ProfileStore::Deliver kInline = [](std::function<void()> fn) { fn(); };

std::string FreshPath(const char* name) {
  const fs::path dir =
      fs::temp_directory_path() / ("molt_store_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    fs::remove(p.string() + suffix);
  }
  return p.string();
}

// The benchmarks' PostgreSQL, started once; each case takes a database of its own.
molt::test::PostgresServer& Postgres() {
  static molt::test::PostgresServer server;
  return server;
}

// A store of the engine `postgres` names: an SQLite file `file`, or a fresh PostgreSQL database.
Result<std::unique_ptr<ProfileStore>> OpenStore(const char* file, bool postgres,
                                                ProfileStore::Deliver deliver) {
  if (!postgres) {
    MOLT_ASSIGN_OR_RETURN(auto s, SqliteStore::Open(FreshPath(file), std::move(deliver)));
    return std::unique_ptr<ProfileStore>(std::move(s));
  }
  if (!Postgres().ok()) {
    return Status::FailedPrecondition(Postgres().error());
  }
  MOLT_ASSIGN_OR_RETURN(auto s, PgStore::Open(Postgres().NewDatabase(), std::move(deliver)));
  return std::unique_ptr<ProfileStore>(std::move(s));
}

const char* Engine(bool postgres) { return postgres ? "postgresql" : "sqlite"; }

std::string Document(std::int64_t n) {
  std::string d = "{\"n\":" + std::to_string(n) + ",\"pad\":\"";
  d.append(1024 - d.size() - 2, 'x');
  return d + "\"}";
}

// state.range(1) == 1: every write also takes a backup (each is due, as at a first save: the
// worst case of the close drain).
void BM_StoreDrain(benchmark::State& state) {
  Logger::Get().SetLevel(LogLevel::kWarn);
  const int n = static_cast<int>(state.range(0));
  const bool backups = state.range(1) == 1;
  const bool postgres = state.range(2) == 1;
  state.SetLabel(Engine(postgres));
  Result<std::unique_ptr<ProfileStore>> opened = OpenStore("drain.db", postgres, kInline);
  if (!opened.ok()) {
    state.SkipWithError(opened.status().message().c_str());
    return;
  }
  std::unique_ptr<ProfileStore> store = std::move(opened).value();
  std::vector<std::uint64_t> tokens(n);
  for (int k = 0; k < n; ++k) {
    std::promise<std::uint64_t> p;
    store->Load("user:" + std::to_string(k), "bench", std::chrono::hours(1),
                [&p](LoadResult r) { p.set_value(r.record.lease.token); });
    tokens[k] = p.get_future().get();
  }
  std::int64_t round = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Write> batch;
    batch.reserve(n);
    ++round;
    for (int k = 0; k < n; ++k) {
      batch.push_back({.key = "user:" + std::to_string(k),
                       .token = tokens[k],
                       .data = Document(round),
                       .schema_version = 1,
                       .backup_every = backups ? 1 : 0});  // 1 ms: due at every round
    }
    state.ResumeTiming();
    std::promise<Status> done;
    store->Write(std::move(batch),
                 [&done](Status s, std::vector<WriteResult>) { done.set_value(std::move(s)); });
    Status s = done.get_future().get();
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_StoreDrain)
    ->Args({10000, 0, 0})
    ->Args({10000, 1, 0})
    ->Args({10000, 0, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_StoreDrainBaseline_RawSqlite(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  sqlite3* db = nullptr;
  sqlite3_open(FreshPath("raw.db").c_str(), &db);
  sqlite3_exec(db,
               "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE t (key TEXT "
               "PRIMARY KEY, data TEXT);",
               nullptr, nullptr, nullptr);
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO t (key, data) VALUES (?1, ?2)", -1, &insert,
                     nullptr);
  std::int64_t round = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<std::pair<std::string, std::string>> rows;
    ++round;
    for (int k = 0; k < n; ++k) {
      rows.emplace_back("user:" + std::to_string(k), Document(round));
    }
    state.ResumeTiming();
    sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    for (const auto& [key, data] : rows) {
      sqlite3_reset(insert);
      sqlite3_bind_text(insert, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
      sqlite3_bind_text(insert, 2, data.data(), static_cast<int>(data.size()), SQLITE_STATIC);
      sqlite3_step(insert);
    }
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  }
  sqlite3_finalize(insert);
  sqlite3_close(db);
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_StoreDrainBaseline_RawSqlite)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The raw PostgreSQL baseline: libpq upserting the same N rows in one transaction, a prepared
// statement each, on the same server and socket.
void BM_StoreDrainBaseline_RawPostgres(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  if (!Postgres().ok()) {
    state.SkipWithError(Postgres().error().c_str());
    return;
  }
  PGconn* conn = PQconnectdb(Postgres().NewDatabase().c_str());
  PQclear(PQexec(conn, "CREATE TABLE t (key TEXT PRIMARY KEY, data TEXT)"));
  PQclear(PQprepare(conn, "put",
                    "INSERT INTO t (key, data) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET "
                    "data = EXCLUDED.data",
                    2, nullptr));
  std::int64_t round = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<std::pair<std::string, std::string>> rows;
    ++round;
    for (int k = 0; k < n; ++k) {
      rows.emplace_back("user:" + std::to_string(k), Document(round));
    }
    state.ResumeTiming();
    PQclear(PQexec(conn, "BEGIN"));
    for (const auto& [key, data] : rows) {
      const char* values[] = {key.c_str(), data.c_str()};
      PQclear(PQexecPrepared(conn, "put", 2, values, nullptr, nullptr, 0));
    }
    PQclear(PQexec(conn, "COMMIT"));
  }
  PQfinish(conn);
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_StoreDrainBaseline_RawPostgres)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The floor of any PostgreSQL call: one libpq round trip (a prepared SELECT 1) on the socket.
void BM_StoreBaseline_PostgresRoundTrip(benchmark::State& state) {
  if (!Postgres().ok()) {
    state.SkipWithError(Postgres().error().c_str());
    return;
  }
  PGconn* conn = PQconnectdb(Postgres().Url().c_str());
  PQclear(PQprepare(conn, "one", "SELECT 1", 0, nullptr));
  for (auto _ : state) {
    PQclear(PQexecPrepared(conn, "one", 0, nullptr, nullptr, nullptr, 0));
  }
  PQfinish(conn);
}
BENCHMARK(BM_StoreBaseline_PostgresRoundTrip)->Unit(benchmark::kMicrosecond)->UseRealTime();

// One load (its lease taken in one transaction) and its release, a round trip to the store's
// thread each.
void BM_StoreLoadAndRelease(benchmark::State& state) {
  Logger::Get().SetLevel(LogLevel::kWarn);
  const bool postgres = state.range(0) == 1;
  state.SetLabel(Engine(postgres));
  Result<std::unique_ptr<ProfileStore>> opened = OpenStore("load.db", postgres, kInline);
  if (!opened.ok()) {
    state.SkipWithError(opened.status().message().c_str());
    return;
  }
  std::unique_ptr<ProfileStore> store = std::move(opened).value();
  std::int64_t k = 0;
  for (auto _ : state) {
    const std::string key = "user:" + std::to_string(k++ % 1000);
    std::promise<std::uint64_t> loaded;
    store->Load(key, "bench", std::chrono::hours(1),
                [&loaded](LoadResult r) { loaded.set_value(r.record.lease.token); });
    const std::uint64_t token = loaded.get_future().get();
    std::promise<void> released;
    store->Write({{.key = key, .token = token, .release = true}},
                 [&released](Status, std::vector<WriteResult>) { released.set_value(); });
    released.get_future().get();
  }
}
BENCHMARK(BM_StoreLoadAndRelease)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The driver on a kernel with a network (sessions started in process), its store delivering to
// the kernel loop as in a server.
class DriverRig {
 public:
  DriverRig(const char* file, bool postgres) {
    Logger::Get().SetLevel(LogLevel::kWarn);
    kernel_ = std::move(Kernel::Boot({})).value();
    net_ = std::make_unique<net::Network>(*kernel_, net::NetOptions{});
    Result<std::unique_ptr<ProfileStore>> opened = OpenStore(
        file, postgres, [this](std::function<void()> fn) { kernel_->loop().Post(std::move(fn)); });
    if (!opened.ok()) {
      error_ = opened.status().message();
      return;
    }
    store_ = std::move(opened).value();
    ProfileSpec spec;
    spec.name = "PlayerData";
    spec.defaults = R"({"coins":0})";
    spec.autosave = std::chrono::hours(1);
    profiles_ = std::make_unique<Profiles>(*kernel_, *net_, *store_, "bench", std::move(spec));
    loaded_ = kernel_->bus().Subscribe("Kernel.*", [this](std::string_view t, Args a) {
      if (t == "Kernel.ProfileLoaded") {
        loaded_at_.emplace_back(a[0].AsHandle(), RealNow());  // reserved: no allocation
      }
    });
  }
  bool ok() const { return error_.empty(); }
  ~DriverRig() {
    loaded_.Disconnect();
    profiles_.reset();
    net_.reset();
    store_.reset();
    (void)kernel_->Shutdown();
  }
  void RunUntil(const std::function<bool()>& done) {
    while (!done()) {
      kernel_->loop().io().restart();
      kernel_->loop().RunFor(std::chrono::milliseconds(1));
    }
  }
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<net::Network> net_;
  std::string error_;
  std::unique_ptr<ProfileStore> store_;
  std::unique_ptr<Profiles> profiles_;
  std::vector<std::pair<std::uint64_t, TimePoint>> loaded_at_;  // in the order they loaded
  Connection loaded_;
};

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()))];
}

// 1,000 joins in a burst (DESIGN.md §11), and smaller bursts beside it: each session's time from
// its start to Kernel.ProfileLoaded.
// `starting_ms` is how long the kernel thread took to start the burst's sessions (no completion
// can be delivered meanwhile).
void BM_ProfilesJoinBurst(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool postgres = state.range(1) == 1;
  state.SetLabel(Engine(postgres));
  DriverRig rig("burst.db", postgres);
  if (!rig.ok()) {
    state.SkipWithError(rig.error_.c_str());
    return;
  }
  std::vector<double> all;
  std::vector<double> starting;  // the kernel thread starting the burst's sessions
  int round = 0;
  for (auto _ : state) {
    // The harness's own work (the users' names, where the start times go) is done before the
    // burst, so the burst is the kernel's: each iteration of the loop below is one Start.
    state.PauseTiming();
    rig.loaded_at_.clear();
    rig.loaded_at_.reserve(static_cast<std::size_t>(n));
    std::vector<std::string> users;
    for (int i = 0; i < n; ++i) {
      users.push_back("u" + std::to_string(round) + "_" + std::to_string(i));
    }
    std::vector<std::pair<std::uint64_t, TimePoint>> started;
    started.reserve(static_cast<std::size_t>(n));
    state.ResumeTiming();
    const TimePoint burst = RealNow();
    for (std::string& user : users) {
      const TimePoint t = RealNow();
      started.emplace_back(rig.net_->sessions().Start(std::move(user), {}, "bench", t), t);
    }
    starting.push_back(std::chrono::duration<double, std::milli>(RealNow() - burst).count());
    rig.RunUntil([&] { return rig.loaded_at_.size() == static_cast<std::size_t>(n); });
    const std::map<std::uint64_t, TimePoint> loaded(rig.loaded_at_.begin(), rig.loaded_at_.end());
    for (const auto& [id, t] : started) {
      all.push_back(std::chrono::duration<double, std::milli>(loaded.at(id) - t).count());
    }
    state.PauseTiming();
    for (const auto& [id, t] : started) {
      rig.net_->sessions().End(id, net::ExitReason::kClientClosed);
    }
    rig.RunUntil([&] { return rig.store_->stats().queued == 0; });
    ++round;
    state.ResumeTiming();
  }
  state.counters["p50_ms"] = Percentile(all, 0.50);
  state.counters["p99_ms"] = Percentile(all, 0.99);
  state.counters["max_ms"] = Percentile(all, 1.0);
  state.counters["starting_ms"] = Percentile(starting, 0.5);
}
BENCHMARK(BM_ProfilesJoinBurst)
    ->Args({250, 0})
    ->Args({500, 0})
    ->Args({1000, 0})
    ->Args({1000, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// What an autosave of N dirty 1 KiB profiles costs the kernel thread. Building the batch
// (serializing every document) happens there, a slice per scheduler step; the writing happens on
// the store's thread. Each iteration is one whole autosave, from the timer to the last
// acknowledgement; `longest_slice_ms` is the longest the kernel thread was held by it at once
// (the scheduler's profile of the "profile autosave" tasks and the first slice, which the timer
// runs).
void BM_ProfilesAutosaveOnTheKernelThread(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  DriverRig rig("autosave.db", /*postgres=*/false);
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < n; ++i) {
    ids.push_back(rig.net_->sessions().Start("u" + std::to_string(i), {}, "bench", RealNow()));
  }
  rig.RunUntil([&] { return rig.loaded_at_.size() == static_cast<std::size_t>(n); });
  const std::string pad = "\"" + std::string(1000, 'x') + "\"";
  std::uint64_t round = 0;
  double first_slice_ms = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ++round;
    for (std::uint64_t id : ids) {
      (void)rig.profiles_->Set(id, "/pad", pad);
      (void)rig.profiles_->Set(id, "/coins", std::to_string(round));
    }
    const std::uint64_t saved = rig.profiles_->stats().saves;
    state.ResumeTiming();
    const TimePoint t0 = RealNow();
    rig.profiles_->SaveAll();
    first_slice_ms =
        std::max(first_slice_ms, std::chrono::duration<double, std::milli>(RealNow() - t0).count());
    rig.RunUntil([&] { return rig.profiles_->stats().saves >= saved + n; });
  }
  double slice_ms = first_slice_ms;
  for (const TaskProfile& t : rig.kernel_->scheduler().TopTasks(64)) {
    if (t.key == "profile autosave") {
      slice_ms = std::max(slice_ms, std::chrono::duration<double, std::milli>(t.max).count());
    }
  }
  state.counters["longest_slice_ms"] = slice_ms;
}
BENCHMARK(BM_ProfilesAutosaveOnTheKernelThread)
    ->Arg(10000)
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The floor of that share: serializing the same documents (Boost.JSON), nothing else.
void BM_ProfilesAutosaveBaseline_Serialize(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<boost::json::value> docs;
  for (int i = 0; i < n; ++i) {
    docs.push_back(boost::json::parse(R"({"coins":)" + std::to_string(i) + R"(,"pad":")" +
                                      std::string(1000, 'x') + "\"}"));
  }
  for (auto _ : state) {
    std::size_t bytes = 0;
    for (const auto& d : docs) {
      bytes += boost::json::serialize(d).size();
    }
    benchmark::DoNotOptimize(bytes);
  }
}
BENCHMARK(BM_ProfilesAutosaveBaseline_Serialize)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace molt::kernel::store
