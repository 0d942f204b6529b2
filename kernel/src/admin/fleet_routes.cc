// SPDX-License-Identifier: Apache-2.0
// FleetRoutes: the fleet's servers and a drain (fleet_routes.h).
#include "kernel/src/admin/fleet_routes.h"

#include <algorithm>
#include <boost/json.hpp>
#include <utility>
#include <vector>

#include "kernel/src/admin/api_answers.h"

namespace molt::kernel::admin {
namespace {

namespace json = boost::json;

json::object ServerJson(const fleet::ServerReport& r) {
  return {{"id", r.id},
          {"branch", r.branch},
          {"build", r.build},
          {"applied_seq", r.applied_seq},
          {"sessions", r.sessions},
          {"tps", r.tps},
          {"health", r.health},
          {"state", r.state},
          {"address", r.address},
          {"websocket_address", r.websocket_address},
          {"started_ms", r.started_ms},
          {"interval_ms", r.interval_ms},
          {"last_seen_ms", r.last_seen_ms}};
}

}  // namespace

void FleetRoutes::Register(RouteTable& table) {
  table.Add({"GET", "/api/v1/servers", Role::kViewer, Runs::kKernelThread,
             [this](RouteCall& call) { Servers(call.request, std::move(call.reply)); }});
  table.Add({"POST", "/api/v1/drain", Role::kOperator, Runs::kKernelThread,
             [this](RouteCall& call) { Drain(call.request, std::move(call.reply)); }});
}

void FleetRoutes::Servers(const HttpRequest& req, HttpReply reply) {
  if (fleet_ == nullptr) {
    reply(Error(503, "this server keeps no fleet (a check runs alone)"));
    return;
  }
  // This server's own row is always fresh: reported now, the others as their heartbeats left
  // them.
  fleet_->Beat(self_report_());
  fleet_->List(QueryValue(req.query, "branch"),
               [reply = std::move(reply), shared = fleet_->shared()](
                   Result<std::vector<fleet::ServerReport>> servers) mutable {
                 if (!servers.ok()) {
                   reply(Error(503, servers.status().message()));
                   return;
                 }
                 json::array list;
                 for (const fleet::ServerReport& r : *servers) {
                   list.push_back(ServerJson(r));
                 }
                 reply(Json(200, json::object{{"servers", std::move(list)}, {"shared", shared}}));
               });
}

void FleetRoutes::Drain(const HttpRequest& req, HttpReply reply) {
  std::error_code ec;
  const json::value doc =
      req.body.empty() ? json::value(json::object()) : json::parse(req.body, ec);
  const json::object* o = !ec ? doc.if_object() : nullptr;
  const json::value* server = o != nullptr ? o->if_contains("server") : nullptr;
  const json::value* deadline = o != nullptr ? o->if_contains("deadline_seconds") : nullptr;
  const double seconds =
      deadline != nullptr && deadline->is_number() ? deadline->to_number<double>() : 0;
  if (o == nullptr || (server != nullptr && !server->is_string()) ||
      (deadline != nullptr && (!deadline->is_number() || !(seconds >= 0 && seconds <= 86400)))) {
    reply(Error(400,
                "the body must be a JSON object: {\"server\": \"<id>\" (this server when left "
                "out), \"deadline_seconds\": <0 to 86400: how long its players may stay; 0: "
                "they move at once>} (docs/fleet.md)"));
    return;
  }
  if (drain_ == nullptr || self_report_ == nullptr) {
    reply(Error(503, "this server takes no drain (a check runs alone)"));
    return;
  }
  const fleet::ServerReport self = self_report_();
  const std::string id = server != nullptr ? std::string(server->as_string()) : self.id;
  if (id == self.id) {
    if (!drain_(seconds, "admin API")) {
      reply(Error(409, "server " + id + " is already closing"));
      return;
    }
    reply(Json(202,
               json::object{{"server", id}, {"state", "draining"}, {"deadline_seconds", seconds}}));
    return;
  }
  if (fleet_ == nullptr || !fleet_->shared()) {
    reply(Error(404, "no server \"" + id + "\" here: this server (" + self.id +
                         ") keeps no fleet database, so it drains only itself"));
    return;
  }
  DrainOther(id, seconds, std::move(reply));
}

void FleetRoutes::DrainOther(const std::string& id, double seconds, HttpReply reply) {
  const json::object answer{{"server", id}, {"state", "draining"}, {"deadline_seconds", seconds}};
  fleet::Fleet* fleet = fleet_;
  fleet->List("", [fleet, id, seconds, answer, reply = std::move(reply)](
                      Result<std::vector<fleet::ServerReport>> servers) mutable {
    if (!servers.ok()) {
      reply(Error(503, servers.status().message()));
      return;
    }
    auto it = std::find_if(servers->begin(), servers->end(),
                           [&](const fleet::ServerReport& s) { return s.id == id; });
    if (it == servers->end()) {
      reply(Error(404, "no server \"" + id + "\" in the fleet (molt servers lists them)"));
      return;
    }
    if (it->state != "live") {
      reply(Error(409, "server " + id + " is " + it->state + ": only a live server drains"));
      return;
    }
    fleet->RequestDrain(id, seconds, [answer, reply = std::move(reply)](Status s) mutable {
      reply(s.ok() ? Json(202, answer) : Error(503, s.message()));
    });
  });
}

}  // namespace molt::kernel::admin
