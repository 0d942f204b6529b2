// SPDX-License-Identifier: Apache-2.0
// SqliteStore: DbStore (db_store.h) over SqliteDb (sqlite_db.h).
#include "kernel/src/store/sqlite_store.h"

#include <utility>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/store/sqlite_db.h"

namespace molt::kernel::store {

WallMillis WallNow() { return WallMs(); }

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path, Deliver deliver,
                                                       SqliteOptions options) {
  std::unique_ptr<SqliteStore> store(new SqliteStore(path));
  MOLT_RETURN_IF_ERROR(
      store->Start(std::make_unique<SqliteDb>(path, std::move(options)), std::move(deliver)));
  LogScope("Profiles").Info("profile database {} open (WAL)", path);
  return store;
}

void SqliteStore::SetMaxPageCount(std::uint32_t pages) {
  CallAndWait([pages](ProfileDb& db) { static_cast<SqliteDb&>(db).SetMaxPageCount(pages); });
}

}  // namespace molt::kernel::store
