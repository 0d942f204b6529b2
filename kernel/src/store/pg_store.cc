// SPDX-License-Identifier: Apache-2.0
// PgStore: DbStore (db_store.h) over PgDb (pg_db.h).
#include "kernel/src/store/pg_store.h"

#include <utility>

#include "kernel/src/core/logger.h"

namespace molt::kernel::store {

bool IsPostgresUrl(std::string_view where) {
  return where.starts_with("postgresql://") || where.starts_with("postgres://") ||
         where.find("host=") != std::string_view::npos ||
         where.find("dbname=") != std::string_view::npos;
}

Result<std::unique_ptr<PgStore>> PgStore::Open(const std::string& url, Deliver deliver,
                                               PgOptions options) {
  std::unique_ptr<PgStore> store(new PgStore());
  MOLT_RETURN_IF_ERROR(
      store->Start(std::make_unique<PgDb>(url, std::move(options)), std::move(deliver)));
  LogScope("Profiles").Info("profile database {} open (PostgreSQL)", PgDb::Redacted(url));
  return store;
}

}  // namespace molt::kernel::store
