// SPDX-License-Identifier: Apache-2.0
// OpenLiveStore (open_live_store.h): the store a path names.
#include "kernel/src/live/open_live_store.h"

#include <utility>

#include "kernel/src/live/pg_live_store.h"
#include "kernel/src/live/sqlite_live_store.h"
#include "kernel/src/store/pg_store.h"

namespace molt::kernel::live {

Result<std::unique_ptr<LiveStore>> OpenLiveStore(const std::string& where) {
  if (store::IsPostgresUrl(where)) {
    MOLT_ASSIGN_OR_RETURN(std::unique_ptr<PgLiveStore> pg, PgLiveStore::Open(where));
    return std::unique_ptr<LiveStore>(std::move(pg));
  }
  MOLT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteLiveStore> file, SqliteLiveStore::Open(where));
  return std::unique_ptr<LiveStore>(std::move(file));
}

}  // namespace molt::kernel::live
