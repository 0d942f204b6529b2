// SPDX-License-Identifier: Apache-2.0
// ProfilesRoutes: the store's counters and one profile with its backups (profiles_routes.h).
#include "kernel/src/admin/profiles_routes.h"

#include <boost/json.hpp>

#include "kernel/src/admin/api_answers.h"
#include "kernel/src/admin/stats_json.h"
#include "kernel/src/store/profile_store.h"

namespace molt::kernel::admin {

void ProfilesRoutes::Register(RouteTable& table) {
  table.Add({"GET", "/api/v1/profiles", Role::kViewer, Runs::kKernelThread,
             [this](RouteCall& call) { call.reply(Json(200, StoreJson(store_.stats()))); }});
  table.Add({"GET", "/api/v1/profiles/{key...}", Role::kViewer, Runs::kKernelThread,
             [this](RouteCall& call) { Profile(call.Param("key"), std::move(call.reply)); }});
}

void ProfilesRoutes::Profile(std::string key, HttpReply reply) {
  namespace json = boost::json;
  if (key.empty() || key.find('/') == std::string::npos) {
    reply(Error(400, "name a profile as profiles/STORE/USER (e.g. profiles/scores/ada)"));
    return;
  }
  store::ProfileStore& store = store_;
  store.Read(key, [&store, key, reply = std::move(reply)](Result<store::Record> r) mutable {
    if (!r.ok()) {
      reply(r.status().code() == Status::Code::kNotFound
                ? Error(404, "no profile " + key + " is stored")
                : Error(500,
                        "the profile store failed to read " + key + ": " + r.status().message()));
      return;
    }
    json::object o{
        {"key", r->key},
        {"schema_version", r->schema_version},
        {"revision", r->revision},
        {"updated_ms", r->updated},
        {"lease",
         {{"owner", r->lease.owner}, {"token", r->lease.token}, {"expires_ms", r->lease.expires}}}};
    boost::system::error_code ec;
    json::value data = r->data ? json::parse(*r->data, ec) : json::value();
    o["data"] = ec ? json::value(*r->data) : std::move(data);
    store.ListBackups(key, [o = std::move(o), reply = std::move(reply)](
                               Result<std::vector<store::Backup>> backups) mutable {
      json::array list;
      for (const store::Backup& b : backups.ok() ? *backups : std::vector<store::Backup>()) {
        list.push_back(
            {{"slot", b.slot == store::kMirrorSlot ? json::value("mirror") : json::value(b.slot)},
             {"revision", b.revision},
             {"schema_version", b.schema_version},
             {"taken_ms", b.taken}});
      }
      o["backups"] = std::move(list);
      reply(Json(200, o));
    });
  });
}

}  // namespace molt::kernel::admin
