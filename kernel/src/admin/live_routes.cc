// SPDX-License-Identifier: Apache-2.0
// LiveRoutes: the live values listed, set and their history (live_routes.h).
#include "kernel/src/admin/live_routes.h"

#include <boost/json.hpp>

#include "kernel/src/admin/api_answers.h"
#include "kernel/src/live/live_values.h"

namespace molt::kernel::admin {
namespace {

namespace json = boost::json;

constexpr std::size_t kMaxHistory = live::LiveStore::kHistoryKept;

// JSON text as a value (it was checked when stored).
json::value Parsed(const std::string& text) {
  std::error_code ec;
  json::value v = json::parse(text, ec);
  return ec ? json::value(text) : v;
}

json::object ViewJson(const live::LiveView& v) {
  json::object o{{"key", v.key}, {"declared", v.declared}};
  if (v.declared) {
    o["default"] = Parsed(v.default_value);
    o["value"] = Parsed(v.value);
  }
  if (v.override_value) {
    o["override"] = json::object{{"value", Parsed(v.override_value->value)},
                                 {"by", v.override_value->by},
                                 {"at_ms", v.override_value->at_ms},
                                 {"ignored", v.override_ignored}};
  }
  return o;
}

json::object ChangeJson(const live::LiveChange& c) {
  return {{"seq", c.seq},
          {"key", c.key},
          {"value", c.value ? Parsed(*c.value) : json::value(nullptr)},
          {"by", c.by},
          {"action", c.action},
          {"at_ms", c.at_ms}};
}

// A live values' failure as HTTP: a set refused by its type or check is 422.
int LiveHttpStatus(const Status& s) {
  switch (s.code()) {
    case Status::Code::kNotFound:
      return 404;
    case Status::Code::kInvalidArgument:
      return 400;
    case Status::Code::kRejected:
      return 422;
    case Status::Code::kFailedPrecondition:
      return 503;
    default:
      return 500;
  }
}

}  // namespace

void LiveRoutes::Register(RouteTable& table) {
  RouteGate gate = [this]() -> std::optional<HttpResponse> {
    if (live_ == nullptr) {
      return Error(503, "this server keeps no live values");
    }
    return std::nullopt;
  };
  table.Add({"GET", "/api/v1/config", Role::kViewer, Runs::kKernelThread,
             [this](RouteCall& call) { List(call.request, std::move(call.reply)); }, gate});
  table.Add({"POST", "/api/v1/config", Role::kOperator, Runs::kKernelThread,
             [this](RouteCall& call) { Set(call.request, std::move(call.reply)); }, gate});
  table.Add({"GET", "/api/v1/config/history", Role::kViewer, Runs::kKernelThread,
             [this](RouteCall& call) { History(call.request, std::move(call.reply)); }, gate});
}

void LiveRoutes::History(const HttpRequest& req, HttpReply reply) {
  const std::string text = QueryValue(req.query, "limit");
  const std::optional<std::uint64_t> n = text.empty() ? 50 : Number(text);
  if (!n || *n == 0 || *n > kMaxHistory) {
    reply(Error(400, "limit is a number from 1 to " + std::to_string(kMaxHistory)));
    return;
  }
  live_->History(QueryValue(req.query, "key"), static_cast<std::size_t>(*n),
                 [reply = std::move(reply)](Result<std::vector<live::LiveChange>> h) {
                   if (!h.ok()) {
                     reply(Error(LiveHttpStatus(h.status()), h.status().message()));
                     return;
                   }
                   json::array a;
                   for (const live::LiveChange& c : *h) {
                     a.push_back(ChangeJson(c));
                   }
                   reply(Json(200, json::object{{"history", std::move(a)}}));
                 });
}

void LiveRoutes::List(const HttpRequest& req, HttpReply reply) {
  const std::string key = QueryValue(req.query, "key");
  json::array values;
  for (const live::LiveView& v : live_->List()) {
    if (key.empty() || v.key == key) {
      values.push_back(ViewJson(v));
    }
  }
  if (!key.empty() && values.empty()) {
    reply(Error(
        404, "no running plugin declares the live value \"" + key + "\", and it has no override"));
  } else if (!key.empty()) {
    reply(Json(200, values.front()));
  } else {
    reply(Json(200, json::object{{"values", std::move(values)}}));
  }
}

void LiveRoutes::Set(const HttpRequest& req, HttpReply reply) {
  std::error_code ec;
  const json::value doc = json::parse(req.body, ec);
  const json::object* o = !ec ? doc.if_object() : nullptr;
  const json::value* key = o != nullptr ? o->if_contains("key") : nullptr;
  const json::value* value = o != nullptr ? o->if_contains("value") : nullptr;
  const json::value* by = o != nullptr ? o->if_contains("by") : nullptr;
  if (key == nullptr || !key->is_string() || value == nullptr ||
      (by != nullptr && !by->is_string())) {
    reply(Error(400,
                "the body must be a JSON object: {\"key\": \"<plugin>.<name>\", \"value\": <JSON, "
                "or null to unset>, \"by\": \"<who>\"} (docs/live-values.md)"));
    return;
  }
  std::optional<std::string> v;
  if (!value->is_null()) {
    v = json::serialize(*value);
  }
  live_->Set(std::string(key->as_string()), std::move(v),
             by != nullptr ? std::string(by->as_string()) : std::string(),
             [reply = std::move(reply)](Result<live::SetOutcome> r) {
               if (!r.ok()) {
                 reply(Error(LiveHttpStatus(r.status()), r.status().message()));
                 return;
               }
               json::object out{
                   {"key", r->key}, {"changed", r->changed}, {"change", ChangeJson(r->change)}};
               out["value"] = r->value.empty() ? json::value(nullptr) : Parsed(r->value);
               reply(Json(200, out));
             });
}

}  // namespace molt::kernel::admin
