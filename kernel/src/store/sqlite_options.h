// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/sqlite_options.h
//
// How the profile store opens its SQLite file: the settings SqliteStore (sqlite_store.h) takes and
// hands down to its engine (SqliteDb, sqlite_db.h) and the file (SqliteProfileFile,
// sqlite_profile_file.h), in a header of their own so the engine needs nothing of the store that
// owns it.
#ifndef MOLT_KERNEL_STORE_SQLITE_OPTIONS_H_
#define MOLT_KERNEL_STORE_SQLITE_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include "kernel/src/store/profile_store.h"

namespace molt::kernel::store {

// The path of a database kept in memory (the plugin test kit's): WAL is not asked of it, and it
// is gone when the store closes.
inline constexpr std::string_view kInMemory = ":memory:";

struct SqliteOptions {
  bool synchronous_full = false;                 // PRAGMA synchronous=FULL (NORMAL by default)
  std::chrono::milliseconds busy_timeout{5000};  // waiting for another process's transaction
  // The wall clock leases are read against (tests move it).
  std::function<WallMillis()> now = WallNow;
  // Caps the file at this many pages (0: no cap): how tests fill a "disk".
  std::uint32_t max_page_count = 0;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_SQLITE_OPTIONS_H_
