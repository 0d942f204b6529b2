// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/store/store_calls.h
//
// ProfileStore calls made synchronous for the store tests: each helper makes the call and waits
// for its own completion, delivered on the store's thread (kInline).
#ifndef MOLT_TESTS_KERNEL_STORE_STORE_CALLS_H_
#define MOLT_TESTS_KERNEL_STORE_STORE_CALLS_H_

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "kernel/src/store/profile_store.h"

namespace molt::kernel::store::test {

// Completions run on the store's thread; each helper waits for its own.
inline const ProfileStore::Deliver kInline = [](std::function<void()> fn) { fn(); };

inline LoadResult LoadNow(ProfileStore& s, const std::string& key, const std::string& owner,
                          std::chrono::milliseconds ttl = std::chrono::seconds(180)) {
  std::promise<LoadResult> p;
  s.Load(key, owner, ttl, [&p](LoadResult r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

inline std::pair<Status, std::vector<WriteResult>> WriteNow(ProfileStore& s,
                                                            std::vector<Write> batch) {
  std::promise<std::pair<Status, std::vector<WriteResult>>> p;
  s.Write(std::move(batch), [&p](Status st, std::vector<WriteResult> r) {
    p.set_value({std::move(st), std::move(r)});
  });
  return p.get_future().get();
}

inline std::pair<Status, std::vector<WriteResult>> TransactNow(ProfileStore& s,
                                                               const std::string& id,
                                                               std::vector<Write> batch) {
  std::promise<std::pair<Status, std::vector<WriteResult>>> p;
  s.Transact(id, std::move(batch), [&p](Status st, std::vector<WriteResult> r) {
    p.set_value({std::move(st), std::move(r)});
  });
  return p.get_future().get();
}

inline Result<Record> ReadNow(ProfileStore& s, const std::string& key) {
  std::promise<Result<Record>> p;
  s.Read(key, [&p](Result<Record> r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

inline std::vector<Backup> BackupsNow(ProfileStore& s, const std::string& key) {
  std::promise<Result<std::vector<Backup>>> p;
  s.ListBackups(key, [&p](Result<std::vector<Backup>> r) { p.set_value(std::move(r)); });
  Result<std::vector<Backup>> r = p.get_future().get();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<Backup>{};
}

}  // namespace molt::kernel::store::test

#endif  // MOLT_TESTS_KERNEL_STORE_STORE_CALLS_H_
