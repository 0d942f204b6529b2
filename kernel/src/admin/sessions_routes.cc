// SPDX-License-Identifier: Apache-2.0
// SessionsRoutes: the sessions listed, shown and kicked (sessions_routes.h).
#include "kernel/src/admin/sessions_routes.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>

#include "kernel/src/admin/api_answers.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/net/network.h"

namespace molt::kernel::admin {
namespace {

// How a session is linked now: "tcp", "websocket", or "" while its link is lost.
const char* TransportOf(const net::Session& s) {
  if (s.peer() == nullptr) {
    return "";
  }
  return s.peer()->websocket() ? "websocket" : "tcp";
}

}  // namespace

void SessionsRoutes::Register(RouteTable& table) {
  table.Add({"GET", "/api/v1/sessions", Role::kViewer, Runs::kKernelThread,
             [this](RouteCall& call) { call.reply(Page(call.request)); }});
  table.Add({"GET", "/api/v1/sessions/{id}", Role::kViewer, Runs::kKernelThread,
             [this](RouteCall& call) { call.reply(One(call.Param("id"))); }});
  table.Add({"POST", "/api/v1/sessions/{id}/kick", Role::kOperator, Runs::kKernelThread,
             [this](RouteCall& call) { call.reply(Kick(call.Param("id"), call.request)); }});
}

HttpResponse SessionsRoutes::Page(const HttpRequest& req) const {
  const std::string offset_text = QueryValue(req.query, "offset");
  const std::string limit_text = QueryValue(req.query, "limit");
  const std::optional<std::uint64_t> offset =
      offset_text.empty() ? std::optional<std::uint64_t>(0) : Number(offset_text);
  const std::optional<std::uint64_t> limit =
      limit_text.empty() ? std::optional<std::uint64_t>(kDefaultPage) : Number(limit_text);
  if (!offset || !limit || *limit == 0 || *limit > kMaxPage) {
    return Error(400, fmt::format("offset must be a number, and limit 1..{}", kMaxPage));
  }
  net::Sessions& sessions = network_.sessions();
  std::vector<net::SessionId> ids = sessions.ActiveIds();
  std::sort(ids.begin(), ids.end());
  boost::json::array list;
  const TimePoint now = RealNow();
  for (std::size_t i = static_cast<std::size_t>(std::min<std::uint64_t>(*offset, ids.size()));
       i < ids.size() && list.size() < *limit; ++i) {
    const net::Session* s = sessions.Get(ids[i]);
    list.push_back({{"id", s->id()},
                    {"user", s->user()},
                    {"address", s->address()},
                    {"connected_seconds", ToSeconds(now - s->joined_at())},
                    {"rtt_seconds", ToSeconds(s->rtt())},
                    {"tier", net::TierName(s->grade().tier)},
                    {"link_lost", s->detached()},
                    {"transport", TransportOf(*s)},
                    {"datagram", network_.datagrams().address(s->id())}});
  }
  boost::json::object o{{"total", ids.size()}, {"offset", *offset}, {"sessions", std::move(list)}};
  return Json(200, o);
}

HttpResponse SessionsRoutes::One(std::string_view id_text) const {
  const std::optional<std::uint64_t> id = Number(id_text);
  const net::Session* s = id ? network_.sessions().Get(*id) : nullptr;
  if (s == nullptr) {
    return Error(404, fmt::format("no session {} is connected", id_text));
  }
  boost::json::object o{{"id", s->id()},
                        {"user", s->user()},
                        {"address", s->address()},
                        {"connected_seconds", ToSeconds(RealNow() - s->joined_at())},
                        {"rtt_seconds", ToSeconds(s->rtt())},
                        {"last_rtt_seconds", ToSeconds(s->last_rtt())},
                        {"tier", net::TierName(s->grade().tier)},
                        {"rtt_median_seconds", s->grade().quality.Median()},
                        {"jitter_seconds", s->grade().quality.Jitter()},
                        {"ping_loss", s->grade().quality.Loss()},
                        {"device_quality", s->grade().device},
                        {"link_lost", s->detached()},
                        {"transport", TransportOf(*s)},
                        {"datagram", network_.datagrams().address(s->id())},
                        {"queued_bytes", s->peer() != nullptr ? s->peer()->queued_bytes() : 0}};
  return Json(200, o);
}

HttpResponse SessionsRoutes::Kick(std::string_view id_text, const HttpRequest& req) {
  const std::optional<std::uint64_t> id = Number(id_text);
  if (!id || network_.sessions().Get(*id) == nullptr) {
    return Error(404, fmt::format("no session {} is connected", id_text));
  }
  std::string text = QueryValue(req.query, "reason");
  if (text.empty()) {
    text = "kicked by an operator";
  }
  if (text.size() > 200) {
    return Error(400, "reason is over 200 characters");
  }
  if (Status s = network_.Kick(*id, text); !s.ok()) {
    return Error(409, s.message());
  }
  LogScope("Admin").Info("session {} kicked by {}: {}", *id, "an operator", text);
  return Json(200, boost::json::object{{"kicked", *id}, {"reason", text}});
}

}  // namespace molt::kernel::admin
