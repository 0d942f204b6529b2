// SPDX-License-Identifier: Apache-2.0
// SqliteStore (kernel/src/store/sqlite_store.h) on real database files: what it adds to its
// database (SqliteDb, whose SQL sqlite_db_test.cc tests): every call answered through deliver,
// off the calling thread; the counters and latencies of stats(); and a child process killed with
// SIGKILL in the middle of its saves. HostIdTest is profile_registry.h's (lease owners).
#include "kernel/src/store/sqlite_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "kernel/src/store/profile_registry.h"
#include "tests/kernel/store/store_calls.h"
#include "tests/support/child_process.h"

namespace molt::kernel::store {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

using test::BackupsNow;
using test::kInline;
using test::LoadNow;
using test::ReadNow;
using test::TransactNow;
using test::WriteNow;

using molt::test::Shell;

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_store_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ + "/profiles.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<SqliteStore> Open(SqliteOptions o = {}) {
    o.now = [this] { return now_.load(); };
    auto s = SqliteStore::Open(path_, kInline, std::move(o));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::string dir_;
  std::string path_;
  std::atomic<WallMillis> now_{1'780'000'000'000};  // 2026-05-28
};

// The store counts what its database did: loads and the busy ones, batches and their writes, the
// writes a lost lease refused, failed batches, and the latency of each load and batch.
TEST_F(SqliteStoreTest, StatsCountLoadsBatchesRefusalsAndFailures) {
  auto store = Open();
  const std::uint64_t t1 = LoadNow(*store, "k1", "h").record.lease.token;
  const std::uint64_t t2 = LoadNow(*store, "k2", "h").record.lease.token;
  EXPECT_TRUE(LoadNow(*store, "k1", "other").busy());
  auto [batch, each] = WriteNow(*store, {{.key = "k1", .token = t1, .data = "{}"},
                                         {.key = "k2", .token = t2 + 5, .data = "{}"},
                                         {.key = "k2", .token = t2, .data = "[1]"}});
  ASSERT_TRUE(batch.ok()) << batch.ToString();
  StoreStats st = store->stats();
  EXPECT_EQ(st.loads, 3u);
  EXPECT_EQ(st.busy, 1u);
  EXPECT_EQ(st.batches, 1u);
  EXPECT_EQ(st.writes, 2u);
  EXPECT_EQ(st.stale, 1u);
  EXPECT_EQ(st.failures, 0u);
  // Every load and batch lands in one latency bucket, the sum is their time.
  auto total = [](const StoreLatency& l) {
    std::uint64_t n = 0;
    for (std::uint64_t c : l.counts) {
      n += c;
    }
    return n;
  };
  EXPECT_EQ(total(st.load_latency), 3u);
  EXPECT_EQ(total(st.write_latency), 1u);
  EXPECT_GT(st.load_latency.sum_seconds, 0);
  EXPECT_GT(st.write_latency.sum_seconds, 0);
  // A full disk fails the batch: a failure, not a batch; its time is counted all the same.
  store->SetMaxPageCount(40);
  const std::string big = "{\"blob\":\"" + std::string(256 * 1024, 'x') + "\"}";
  EXPECT_EQ(WriteNow(*store, {{.key = "k1", .token = t1, .data = big}}).first.code(),
            Status::Code::kIoError);
  st = store->stats();
  EXPECT_EQ(st.failures, 1u);
  EXPECT_EQ(st.batches, 1u);
  EXPECT_EQ(total(st.write_latency), 2u);
}

// Every call is its database's, run on the store's thread, the answer unchanged: Open's refusal,
// Transact (a batch of its writes when it commits), Read, ListBackups and ReleaseAbandoned.
TEST_F(SqliteStoreTest, EveryCallIsAnsweredByItsDatabase) {
  std::ofstream(dir_ + "/not.db") << std::string(8192, 'z');
  auto refused = SqliteStore::Open(dir_ + "/not.db", kInline);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cannot be read: file is not a database"),
            std::string::npos)
      << refused.status().message();
  auto store = Open();
  const std::uint64_t a = LoadNow(*store, "user:a", "host-a:111:1").record.lease.token;
  const std::uint64_t b = LoadNow(*store, "user:b", "host-a:111:1").record.lease.token;
  const std::vector<Write> trade = {
      {.key = "user:a", .token = a, .data = R"({"gold":5})", .backup_every = 1000},
      {.key = "user:b", .token = b, .data = R"({"gold":15})"}};
  auto r = TransactNow(*store, "trade-1", trade);
  ASSERT_TRUE(r.first.ok()) << r.first.ToString();
  EXPECT_EQ(store->stats().batches, 1u);
  EXPECT_EQ(store->stats().writes, 2u);
  EXPECT_EQ(TransactNow(*store, "trade-1", trade).first.code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(store->stats().batches, 1u);
  EXPECT_EQ(ReadNow(*store, "user:b")->data, R"({"gold":15})");
  EXPECT_EQ(ReadNow(*store, "user:c").status().code(), Status::Code::kNotFound);
  const std::vector<Backup> backups = BackupsNow(*store, "user:a");
  ASSERT_EQ(backups.size(), 1u);
  EXPECT_EQ(backups[0].data, R"({"gold":5})");
  std::promise<Result<std::vector<std::pair<std::string, std::size_t>>>> p;
  store->ReleaseAbandoned([](const std::string& owner) { return owner == "host-a:111:1"; },
                          [&p](auto ended) { p.set_value(std::move(ended)); });
  auto ended = p.get_future().get();
  ASSERT_TRUE(ended.ok()) << ended.status().ToString();
  ASSERT_EQ(ended->size(), 1u);
  EXPECT_EQ((*ended)[0], std::make_pair(std::string("host-a:111:1"), std::size_t{2}));
}

// The test kit's store: the same calls on a database in memory, nothing on disk, gone at the
// close.
TEST_F(SqliteStoreTest, ADatabaseInMemoryAnswersLikeAFileAndLeavesNothing) {
  const fs::path cwd = fs::current_path();
  const auto before = std::distance(fs::directory_iterator(cwd), fs::directory_iterator());
  {
    auto store = SqliteStore::Open(std::string(kInMemory), kInline);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    const LoadResult first = LoadNow(**store, "scores/ada", "kit:1:1");
    ASSERT_TRUE(first.status.ok()) << first.status.ToString();
    EXPECT_EQ(first.record.revision, 0u);
    auto w = WriteNow(**store, {{.key = "scores/ada",
                                 .token = first.record.lease.token,
                                 .data = R"({"points":3})",
                                 .release = true}});
    ASSERT_TRUE(w.first.ok()) << w.first.ToString();
    EXPECT_EQ(ReadNow(**store, "scores/ada")->data, R"({"points":3})");
    EXPECT_EQ(LoadNow(**store, "scores/ada", "kit:1:1").record.revision, 1u);
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(cwd), fs::directory_iterator()), before)
      << "a database in memory wrote a file";
  auto again = SqliteStore::Open(std::string(kInMemory), kInline);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ReadNow(**again, "scores/ada").status().code(), Status::Code::kNotFound)
      << "each database in memory starts empty";
}

TEST(HostIdTest, NamesThisProcessAndTellsAServerOfThisHostThatIsGone) {
  const std::string me = HostId();
  EXPECT_EQ(me.substr(me.find(':') + 1, std::to_string(::getpid()).size() + 1),
            std::to_string(::getpid()) + ":");
  EXPECT_FALSE(GoneFromThisHost(me)) << "this process is alive";
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);  // reaped: the pid no longer exists
  const std::string host = me.substr(0, me.find(':'));
  EXPECT_TRUE(GoneFromThisHost(host + ":" + std::to_string(child) + ":1"));
  EXPECT_FALSE(GoneFromThisHost("elsewhere:" + std::to_string(child) + ":1"));
  EXPECT_FALSE(GoneFromThisHost(host + ":1:1")) << "init is alive";
  EXPECT_FALSE(GoneFromThisHost("not an owner"));
}

// Completions never run inside the call, and the SQLite work is on the store's own thread.
TEST_F(SqliteStoreTest, CompletionsComeThroughDeliverAndTheWorkRunsOffTheCallingThread) {
  std::mutex mu;
  std::vector<std::function<void()>> delivered;
  std::atomic<bool> clock_on_caller{false};
  const std::thread::id caller = std::this_thread::get_id();
  SqliteOptions o;
  o.now = [&] {
    if (std::this_thread::get_id() == caller) {
      clock_on_caller = true;
    }
    return now_.load();
  };
  auto s = SqliteStore::Open(
      path_,
      [&](std::function<void()> fn) {
        std::lock_guard lock(mu);
        delivered.push_back(std::move(fn));
      },
      o);
  ASSERT_TRUE(s.ok());
  bool done = false;
  (*s)->Load("k", "h", seconds(1), [&](LoadResult r) { done = r.status.ok(); });
  EXPECT_FALSE(done);
  for (int i = 0; i < 500; ++i) {
    std::lock_guard lock(mu);
    if (!delivered.empty()) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  std::vector<std::function<void()>> run;
  {
    std::lock_guard lock(mu);
    run.swap(delivered);
  }
  ASSERT_EQ(run.size(), 1u);
  EXPECT_FALSE(done);
  run[0]();
  EXPECT_TRUE(done);
  EXPECT_FALSE(clock_on_caller);
}

// Everything queued runs in the order it was queued, however the store thread groups it: loads
// next to each other share a transaction, and a load queued after a write sees that write. Here
// host-b's loads of the keys host-a releases come after the releases, so none is busy.
TEST_F(SqliteStoreTest, TheQueueRunsInOrderAndALoadNeverOvertakesAWrite) {
  auto store = Open();
  constexpr int kKeys = 40;
  std::vector<std::uint64_t> tokens;
  for (int i = 0; i < kKeys; ++i) {
    tokens.push_back(LoadNow(*store, "k" + std::to_string(i), "host-a").record.lease.token);
  }
  std::mutex mu;
  std::vector<std::string> order;  // completions, as the store thread ran them (kInline)
  std::vector<LoadResult> taken(kKeys);
  std::promise<void> all;
  int left = 2 * kKeys;
  auto done = [&](std::string what) {
    std::lock_guard lock(mu);
    order.push_back(std::move(what));
    if (--left == 0) {
      all.set_value();
    }
  };
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "k" + std::to_string(i);
    store->Write({{.key = key,
                   .token = tokens[i],
                   .data = "{\"n\":" + std::to_string(i) + "}",
                   .release = true}},
                 [&done, key](Status s, std::vector<WriteResult> each) {
                   EXPECT_TRUE(s.ok() && each[0].status.ok()) << key;
                   done("write " + key);
                 });
  }
  for (int i = 0; i < kKeys; ++i) {
    store->Load("k" + std::to_string(i), "host-b", seconds(180), [&done, &taken, i](LoadResult r) {
      taken[i] = std::move(r);
      done("load k" + std::to_string(i));
    });
  }
  all.get_future().wait();
  ASSERT_EQ(order.size(), 2u * kKeys);
  for (int i = 0; i < kKeys; ++i) {
    EXPECT_EQ(order[i], "write k" + std::to_string(i));
    EXPECT_EQ(order[kKeys + i], "load k" + std::to_string(i));
    EXPECT_TRUE(taken[i].status.ok()) << taken[i].status.ToString();
    EXPECT_EQ(taken[i].record.data, "{\"n\":" + std::to_string(i) + "}");
    EXPECT_EQ(taken[i].record.lease.owner, "host-b");
  }
}

// A burst longer than one transaction takes (512 loads), then a write, all queued and the store
// closed at once: the close runs everything queued first, in order, and answers every call.
TEST_F(SqliteStoreTest, ClosingRunsEverythingQueuedInOrderFirst) {
  auto store = Open();
  static constexpr int kLoads = 600;
  std::vector<int> order;  // kInline: the completions run on the store thread, one at a time
  for (int i = 0; i < kLoads; ++i) {
    store->Load("u" + std::to_string(i), "host-a", seconds(180), [&order, i](LoadResult r) {
      EXPECT_TRUE(r.status.ok()) << r.status.ToString();
      order.push_back(i);
    });
  }
  store->Write({{.key = "u0", .token = 1, .data = "{}"}},
               [&order](Status s, std::vector<WriteResult> each) {
                 EXPECT_TRUE(s.ok() && each[0].status.ok());
                 order.push_back(kLoads);
               });
  store.reset();
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kLoads + 1));
  for (int i = 0; i <= kLoads; ++i) {
    EXPECT_EQ(order[i], i);
  }
  auto again = Open();
  EXPECT_EQ(ReadNow(*again, "u0")->data, "{}");
  EXPECT_EQ(ReadNow(*again, "u599")->lease.owner, "host-a");
}

// kill -9 in the middle of save bursts, repeatedly: the file opens clean and every batch the
// child saw acknowledged is stored at (at least) its revision.
TEST_F(SqliteStoreTest, AKillDashNineMidSaveLosesNoAcknowledgedWrite) {
  std::mt19937 rng(12345);
  std::uint64_t previous = 0;
  for (int round = 0; round < 8; ++round) {
    const int batch = round % 2 == 0 ? 1 : 50;
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      ::execl(MOLT_STORE_CRASH_CHILD, MOLT_STORE_CRASH_CHILD, path_.c_str(),
              std::to_string(batch).c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    FILE* from = ::fdopen(out[0], "r");
    char line[64];
    ASSERT_NE(std::fgets(line, sizeof line, from), nullptr);
    ASSERT_STREQ(line, "ready\n");
    ASSERT_NE(std::fgets(line, sizeof line, from), nullptr);  // saving: the first batch is in
    ASSERT_STREQ(line, "ack 1\n");
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(5, 100)(rng)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    unsigned long long acked = 1;
    while (std::fgets(line, sizeof line, from) != nullptr) {
      std::sscanf(line, "ack %llu", &acked);
    }
    std::fclose(from);
    ASSERT_GT(acked, 0u) << "round " << round << ": the child acknowledged nothing";

    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string check;
    sqlite3_exec(
        db, "PRAGMA integrity_check",
        [](void* ud, int, char** v, char**) {
          *static_cast<std::string*>(ud) += v[0];
          return 0;
        },
        &check, nullptr);
    sqlite3_close(db);
    EXPECT_EQ(check, "ok") << "round " << round;

    auto store = SqliteStore::Open(path_, kInline);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (int k = 0; k < batch; ++k) {
      Result<Record> r = ReadNow(**store, "crash:" + std::to_string(k));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const std::string& data = *r->data;
      const unsigned long long n = std::stoull(data.substr(5, data.find(',') - 5));
      EXPECT_GE(n, acked) << "round " << round << " key " << k;
      if (k == 0) {
        EXPECT_GE(r->revision, previous + acked);
        previous = r->revision;
      }
    }
    // The next round's child takes the leases over (the killed one never released them).
    sqlite3_open(path_.c_str(), &db);
    sqlite3_exec(db, "UPDATE profiles SET lease_owner = NULL", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
}

}  // namespace
}  // namespace molt::kernel::store
