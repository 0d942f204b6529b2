// SPDX-License-Identifier: Apache-2.0
// The process sqlite_store_test kills with SIGKILL: it saves one profile over and over, in
// batches of `batch` keys, and prints the revision of each acknowledged batch ("ack N") once its
// completion arrived, so the test knows what was committed before the kill.
//   molt_store_crash_child DB BATCH
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>

#include "kernel/src/store/sqlite_store.h"

using namespace molt::kernel;
using namespace molt::kernel::store;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DB BATCH\n", argv[0]);
    return 2;
  }
  const int batch = std::atoi(argv[2]);
  auto opened = SqliteStore::Open(argv[1], [](std::function<void()> fn) { fn(); });
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().message().c_str());
    return 1;
  }
  SqliteStore& store = **opened;
  std::vector<std::uint64_t> tokens;
  for (int k = 0; k < batch; ++k) {
    std::promise<LoadResult> p;
    store.Load("crash:" + std::to_string(k), "child", std::chrono::hours(1),
               [&p](LoadResult r) { p.set_value(std::move(r)); });
    LoadResult r = p.get_future().get();
    if (!r.status.ok()) {
      std::fprintf(stderr, "%s\n", r.status.message().c_str());
      return 1;
    }
    tokens.push_back(r.record.lease.token);
  }
  std::printf("ready\n");
  std::fflush(stdout);
  const std::string padding(512, 'x');
  for (std::uint64_t n = 1;; ++n) {
    std::vector<Write> writes;
    for (int k = 0; k < batch; ++k) {
      writes.push_back({.key = "crash:" + std::to_string(k),
                        .token = tokens[k],
                        .data = "{\"n\":" + std::to_string(n) + ",\"pad\":\"" + padding + "\"}",
                        .schema_version = 1});
    }
    std::promise<Status> p;
    store.Write(std::move(writes), [&p](Status s, std::vector<WriteResult>) { p.set_value(s); });
    Status s = p.get_future().get();
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }
    std::printf("ack %llu\n", static_cast<unsigned long long>(n));
    std::fflush(stdout);
  }
}
