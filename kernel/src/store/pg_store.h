// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/pg_store.h
//
// PgStore: the fleet's ProfileStore, profiles in a PostgreSQL database many servers share
// (docs/fleet.md), used by one dedicated thread (DbStore, db_store.h): the kernel thread never
// waits for the database. The connection and the SQL are PgDb's (pg_db.h, included by
// pg_store.cc only: this header keeps libpq out of the server's).
//
//   MOLT_ASSIGN_OR_RETURN(auto store, PgStore::Open("postgresql:///molt?host=/run/postgresql",
//                                                   deliver));
//
// Thread safety: the ProfileStore calls are safe from any thread.
#ifndef MOLT_KERNEL_STORE_PG_STORE_H_
#define MOLT_KERNEL_STORE_PG_STORE_H_

#include <memory>
#include <string>
#include <string_view>

#include "kernel/src/store/db_store.h"
#include "kernel/src/store/pg_db.h"

namespace molt::kernel::store {

// Whether `where` names a PostgreSQL database rather than an SQLite file: a postgresql:// or
// postgres:// URI, or a libpq key=value string (host=..., dbname=...).
bool IsPostgresUrl(std::string_view where);

class PgStore final : public DbStore {
 public:
  // Connects to `url`, creates or checks the tables. Fails naming the database (its password
  // hidden), the cause and the fix.
  static Result<std::unique_ptr<PgStore>> Open(const std::string& url, Deliver deliver,
                                               PgOptions options = {});

 private:
  PgStore() = default;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PG_STORE_H_
