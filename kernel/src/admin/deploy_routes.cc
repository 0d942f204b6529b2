// SPDX-License-Identifier: Apache-2.0
// DeployRoutes: the deploy calls read on the HTTP thread, answered from the deploy thread
// (deploy_routes.h).
#include "kernel/src/admin/deploy_routes.h"

#include <boost/json.hpp>
#include <utility>
#include <vector>

#include "kernel/src/admin/api_answers.h"
#include "kernel/src/admin/deploy_answers.h"
#include "kernel/src/deploy/deploys.h"
#include "kernel/src/deploy/registry.h"

namespace molt::kernel::admin {
namespace {

namespace json = boost::json;

constexpr char kNoDeploys[] =
    "this server takes no deploys now: its deploy registry is not open yet (the log says why; "
    "it is tried again every second), or it is moltd --check";

// The deploy thread's answer, rendered by `render` (deploy_answers.h) and handed to `reply`.
template <class T>
deploy::Done<T> Answering(HttpReply reply, HttpResponse (*render)(const Result<T>&)) {
  return [reply = std::move(reply), render](Result<T> r) { reply(render(r)); };
}

// ?limit=N within 1..cap (`fallback` when absent); nullopt, answered 400, otherwise.
std::optional<std::size_t> Limit(RouteCall& call, std::size_t fallback, std::size_t cap) {
  const std::string text = QueryValue(call.request.query, "limit");
  if (text.empty()) {
    return fallback;
  }
  std::optional<std::uint64_t> n = Number(text);
  if (!n || *n == 0 || *n > cap) {
    call.reply(Error(400, "limit is a number from 1 to " + std::to_string(cap)));
    return std::nullopt;
  }
  return static_cast<std::size_t>(*n);
}

// Reads a string field `key` of `o` into `out` when present.
Status Text(const json::object& o, std::string_view key, std::string& out) {
  if (const json::value* v = o.if_contains(key); v != nullptr) {
    if (!v->is_string()) {
      return Status::InvalidArgument("\"" + std::string(key) + "\" must be a string");
    }
    out = std::string(v->as_string());
  }
  return Status::Ok();
}

// Reads a whole non-negative number field `key` of `o` into `out` when present.
Status WholeNumber(const json::object& o, std::string_view key, std::uint64_t& out) {
  if (const json::value* v = o.if_contains(key); v != nullptr) {
    if (!v->is_int64() && !v->is_uint64()) {
      return Status::InvalidArgument("\"" + std::string(key) + "\" must be a whole number");
    }
    const std::int64_t n =
        v->is_int64() ? v->as_int64() : static_cast<std::int64_t>(v->as_uint64());
    if (n < 0) {
      return Status::InvalidArgument("\"" + std::string(key) + "\" must not be negative");
    }
    out = static_cast<std::uint64_t>(n);
  }
  return Status::Ok();
}

// A deploy, promote, rollback, re-sign, widen or pin body (docs/deploys.md); the refusal of a
// malformed one.
Result<deploy::DeployRequest> ParseDeploy(std::string_view kind, const std::string& body) {
  std::error_code ec;
  const json::value doc = json::parse(body, ec);
  if (ec || !doc.is_object()) {
    return Status::InvalidArgument(
        "the body must be a JSON object: {\"branch\": ..., \"build\": "
        "...} (docs/deploys.md)");
  }
  const json::object& o = doc.as_object();
  deploy::DeployRequest r;
  r.kind = std::string(kind);
  MOLT_RETURN_IF_ERROR(Text(o, "branch", r.branch));
  MOLT_RETURN_IF_ERROR(Text(o, kind == "rollback" ? "to" : "build", r.build));
  MOLT_RETURN_IF_ERROR(WholeNumber(o, "seq", r.seq));
  MOLT_RETURN_IF_ERROR(WholeNumber(o, "sent_ms", r.sent_ms));
  MOLT_RETURN_IF_ERROR(Text(o, "sig", r.sig));
  MOLT_RETURN_IF_ERROR(Text(o, "sig_fallback", r.sig_fallback));
  MOLT_RETURN_IF_ERROR(Text(o, "by", r.by));
  MOLT_RETURN_IF_ERROR(Text(o, "message", r.message));
  std::uint64_t rollout = 100;
  MOLT_RETURN_IF_ERROR(WholeNumber(o, "rollout", rollout));
  if (rollout < 1 || rollout > 100) {
    return Status::InvalidArgument("\"rollout\" is a share of the branch's servers, 1 to 100");
  }
  r.rollout = static_cast<std::uint32_t>(rollout);
  if (const json::value* v = o.if_contains("force"); v != nullptr) {
    if (!v->is_bool()) {
      return Status::InvalidArgument("\"force\" must be true or false");
    }
    r.force = v->as_bool();
  }
  if (r.branch.empty() && kind != "pin") {
    return Status::InvalidArgument("\"branch\" is required");
  }
  if (kind == "widen" && !o.contains("rollout")) {
    return Status::InvalidArgument("\"rollout\" is required: the wider share, 1 to 100");
  }
  if (kind != "rollback" && kind != "pin" && kind != "widen" && r.build.empty()) {
    return Status::InvalidArgument("\"build\" is required: a sha256, a build id or #SEQ");
  }
  if (r.message.size() > 1000 || r.by.size() > 200) {
    return Status::InvalidArgument("\"message\" is at most 1000 bytes, \"by\" at most 200");
  }
  return r;
}

}  // namespace

HttpPlan DeployRoutes::UploadPlan(bool authorized, HttpResponse refuse_unauthorized) const {
  HttpPlan plan;
  if (!authorized) {
    plan.refuse = std::move(refuse_unauthorized);  // nothing of an unauthorized upload is read
  } else if (deploy::Deploys* deploys = deploys_.load(); deploys == nullptr) {
    plan.refuse = Error(503, kNoDeploys);
  } else {
    plan.body_file = deploys->UploadPath();
    plan.max_body_bytes = deploys->max_build_bytes();
    plan.read_timeout = kUploadTime;
    plan.handler_timeout = std::chrono::seconds(60);  // verifying hashes every library
  }
  return plan;
}

void DeployRoutes::Add(RouteTable& table, const char* method, const char* path, Role role,
                       std::function<void(RouteCall&, deploy::Deploys&)> handler) {
  table.Add(
      {method, path, role, Runs::kHttpThread,
       [this, handler = std::move(handler)](RouteCall& call) { handler(call, *deploys_.load()); },
       [this]() -> std::optional<HttpResponse> {
         if (deploys_.load() == nullptr) {
           return Error(503, kNoDeploys);
         }
         return std::nullopt;
       }});
}

void DeployRoutes::Register(RouteTable& table) {
  Add(table, "GET", "/api/v1/builds", Role::kViewer, [](RouteCall& call, deploy::Deploys& d) {
    if (std::optional<std::size_t> n = Limit(call, 50, 1000)) {
      d.Builds(*n, Answering(std::move(call.reply), &BuildsAnswer));
    }
  });
  Add(table, "POST", "/api/v1/builds", Role::kDeployer,
      [this](RouteCall& call, deploy::Deploys& d) { Upload(call, d); });
  Add(table, "GET", "/api/v1/resolve", Role::kViewer, [](RouteCall& call, deploy::Deploys& d) {
    const std::string& q = call.request.query;
    d.Resolve(QueryValue(q, "branch"), QueryValue(q, "build"), QueryValue(q, "rollback") == "1",
              Answering(std::move(call.reply), &ResolveAnswer));
  });
  Add(table, "GET", "/api/v1/branches", Role::kViewer, [](RouteCall& call, deploy::Deploys& d) {
    d.Branches(Answering(std::move(call.reply), &BranchesAnswer));
  });
  for (const char* kind : {"deploy", "promote", "rollback", "resign"}) {
    Add(table, "POST", (std::string("/api/v1/") + kind).c_str(), Role::kDeployer,
        [this, kind](RouteCall& call, deploy::Deploys& d) { Change(kind, call, d); });
  }
  Add(table, "GET", "/api/v1/deployments", Role::kViewer, [](RouteCall& call, deploy::Deploys& d) {
    if (std::optional<std::size_t> n = Limit(call, 20, deploy::Registry::kDeploymentsKept)) {
      d.Deployments(QueryValue(call.request.query, "branch"), *n,
                    Answering(std::move(call.reply), &DeploymentsAnswer));
    }
  });
  for (const char* kind : {"pin", "unpin", "widen"}) {
    Add(table, "POST", (std::string("/api/v1/") + kind).c_str(), Role::kDeployer,
        [this, kind](RouteCall& call, deploy::Deploys& d) { Change(kind, call, d); });
  }
  Add(table, "GET", "/api/v1/report", Role::kViewer,
      [this](RouteCall& call, deploy::Deploys& d) { Report(call, d); });
}

void DeployRoutes::Upload(RouteCall& call, deploy::Deploys& deploys) {
  if (call.request.body_file.empty()) {
    call.reply(Error(400, "send the build file as the body (Content-Length set)"));
    return;
  }
  deploys.Upload(std::move(call.request.body_file),
                 Answering(std::move(call.reply), &UploadAnswer));
}

void DeployRoutes::Report(RouteCall& call, deploy::Deploys& deploys) {
  std::optional<std::uint64_t> seq = Number(QueryValue(call.request.query, "seq"));
  if (!seq || *seq == 0) {
    call.reply(Error(400, "seq is the deployment's number: /api/v1/report?seq=12"));
    return;
  }
  fleet::Fleet* fleet = fleet_;
  if (fleet != nullptr) {
    fleet->Beat(self_report_());  // this server's row fresh, as /servers has it
  }
  deploys.Results(
      *seq, [fleet, reply = std::move(call.reply)](Result<deploy::DeploymentResults> r) mutable {
        if (!r.ok()) {
          reply(DeployError(r.status()));
          return;
        }
        if (fleet == nullptr) {
          reply(Json(200, DeployReport(ResultsJson(*r), {})));
          return;
        }
        fleet->List("", [body = ResultsJson(*r), reply = std::move(reply)](
                            Result<std::vector<fleet::ServerReport>> servers) mutable {
          if (!servers.ok()) {
            reply(Error(503, servers.status().message()));
            return;
          }
          reply(Json(200, DeployReport(std::move(body), *servers)));
        });
      });
}

void DeployRoutes::Change(std::string_view kind, RouteCall& call, deploy::Deploys& deploys) {
  const std::optional<std::uint64_t> wait = WaitSeconds(call.request.query);
  if (!wait) {
    call.reply(Error(400, "wait is a number of seconds, 1 to 600 (or leave it out: 202 at once)"));
    return;
  }
  const bool pin = kind == "pin" || kind == "unpin";
  Result<deploy::DeployRequest> r = ParseDeploy(pin ? "pin" : kind, call.request.body);
  if (!r.ok()) {
    call.reply(Error(400, r.status().message()));
    return;
  }
  if (pin) {
    deploy::PinRequest p{r->build, kind == "unpin", r->sent_ms, r->sig, r->sig_fallback, r->by};
    deploys.Pin(std::move(p), std::chrono::seconds(*wait),
                Answering(std::move(call.reply), &PinAnswer));
    return;
  }
  deploys.Deploy(std::move(*r), std::chrono::seconds(*wait),
                 Answering(std::move(call.reply), &DeployAnswer));
}

}  // namespace molt::kernel::admin
