// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/live/open_live_store.h
//
// OpenLiveStore: the live values' store a path names: the fleet's PostgreSQL for a
// postgresql:// URL (PgLiveStore, pg_live_store.h), else a SQLite file (SqliteLiveStore,
// sqlite_live_store.h). Kept apart from the LiveStore interface, which both engines implement, so
// the interface includes neither.
//
//   MOLT_ASSIGN_OR_RETURN(std::unique_ptr<LiveStore> store, OpenLiveStore("data/live.db"));
//
// Thread safety: call it on the thread that will use the store (the live values' own).
#ifndef MOLT_KERNEL_LIVE_OPEN_LIVE_STORE_H_
#define MOLT_KERNEL_LIVE_OPEN_LIVE_STORE_H_

#include <molt/kernel/status.h>

#include <memory>
#include <string>

#include "kernel/src/live/live_store.h"

namespace molt::kernel::live {

// `where`: a file (SQLite, this server's alone) or a PostgreSQL URL (the fleet's database,
// shared by every server of it); created when missing. An error names it, the cause and the fix.
Result<std::unique_ptr<LiveStore>> OpenLiveStore(const std::string& where);

}  // namespace molt::kernel::live

#endif  // MOLT_KERNEL_LIVE_OPEN_LIVE_STORE_H_
