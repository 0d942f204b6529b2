// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/profiles_routes.h
//
// ProfilesRoutes: the profile store (docs/profiles.md), on the kernel thread:
//   GET /api/v1/profiles              the store's counters (stats_json.h, StoreJson)
//   GET /api/v1/profiles/STORE/USER   one profile, read without a lease, with its backups;
//                                     answered when the store's thread answers
// Composed by AdminApi (admin_api.h).
//
// Thread safety: the handlers run on the kernel thread; the store answers through its deliver
// function (the kernel loop).
#ifndef MOLT_KERNEL_ADMIN_PROFILES_ROUTES_H_
#define MOLT_KERNEL_ADMIN_PROFILES_ROUTES_H_

#include <string>

#include "kernel/src/admin/route_table.h"

namespace molt::kernel::store {
class ProfileStore;
}  // namespace molt::kernel::store

namespace molt::kernel::admin {

class ProfilesRoutes {
 public:
  explicit ProfilesRoutes(store::ProfileStore& store) : store_(store) {}
  void Register(RouteTable& table);

 private:
  // One profile, read without a lease, with its backups; answers when the store does.
  void Profile(std::string key, HttpReply reply);

  store::ProfileStore& store_;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_PROFILES_ROUTES_H_
