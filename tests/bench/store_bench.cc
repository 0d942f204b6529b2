// SPDX-License-Identifier: Apache-2.0
// The profile store (store/sqlite_store.h): the close drain's shape (N dirty 1 KiB profiles saved
// in one batch, each conditional on its lease), one load (lease taken) and its release, beside raw
// SQLite doing the same rows in the same run: a prepared INSERT OR REPLACE of N rows in one
// transaction, with the same WAL and synchronous settings.
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"
#include "kernel/src/store/sqlite_store.h"

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

std::string Document(std::int64_t n) {
  std::string d = "{\"n\":" + std::to_string(n) + ",\"pad\":\"";
  d.append(1024 - d.size() - 2, 'x');
  return d + "\"}";
}

void BM_StoreDrain(benchmark::State& state) {
  Logger::Get().SetLevel(LogLevel::kWarn);
  const int n = static_cast<int>(state.range(0));
  auto store = std::move(SqliteStore::Open(FreshPath("drain.db"), kInline)).value();
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
                       .schema_version = 1});
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
BENCHMARK(BM_StoreDrain)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

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

// One load (its lease taken in one transaction) and its release, a round trip to the store's
// thread each.
void BM_StoreLoadAndRelease(benchmark::State& state) {
  Logger::Get().SetLevel(LogLevel::kWarn);
  auto store = std::move(SqliteStore::Open(FreshPath("load.db"), kInline)).value();
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
BENCHMARK(BM_StoreLoadAndRelease)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace molt::kernel::store
