// SPDX-License-Identifier: Apache-2.0
// The admin API's deploy calls (docs/deploys.md): read on the HTTP thread, answered from the
// deploy thread; the kernel thread sees only the swaps they ask for.
#include <boost/json.hpp>
#include <filesystem>
#include <map>

#include "kernel/src/admin/admin_api.h"
#include "kernel/src/admin/api_answers.h"
#include "kernel/src/admin/deploy_answers.h"
#include "kernel/src/deploy/deploys.h"
#include "kernel/src/deploy/registry.h"
#include "kernel/src/fleet/fleet.h"

namespace molt::kernel::admin {
namespace {

namespace json = boost::json;

constexpr std::string_view kApi = "/api/v1/";
constexpr std::uint64_t kMaxWaitSeconds = 600;
// An upload may take this long to arrive (a large build over a slow link).
constexpr std::chrono::seconds kUploadTime{600};

bool IsDeployCall(std::string_view rest) {
  return rest == "builds" || rest == "resolve" || rest == "branches" || rest == "deploy" ||
         rest == "promote" || rest == "rollback" || rest == "resign" || rest == "deployments" ||
         rest == "pin" || rest == "unpin" || rest == "widen" || rest == "report";
}

// ?wait=S: 0 when absent; nullopt when malformed or over the cap.
std::optional<std::uint64_t> WaitSeconds(std::string_view query) {
  const std::string text = QueryValue(query, "wait");
  if (text.empty()) {
    return 0;
  }
  std::optional<std::uint64_t> s = Number(text);
  return s && *s <= kMaxWaitSeconds ? s : std::nullopt;
}

// The deploy thread's answer, rendered by `render` (deploy_answers.h) and handed to `reply`.
template <class T>
deploy::Done<T> Answering(HttpReply reply, HttpResponse (*render)(const Result<T>&)) {
  return [reply = std::move(reply), render](Result<T> r) { reply(render(r)); };
}

// A deploy, promote or rollback body (docs/deploys.md); the refusal of a malformed one.
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
  auto text = [&](std::string_view key, std::string& out) -> Status {
    if (const json::value* v = o.if_contains(key); v != nullptr) {
      if (!v->is_string()) {
        return Status::InvalidArgument("\"" + std::string(key) + "\" must be a string");
      }
      out = std::string(v->as_string());
    }
    return Status::Ok();
  };
  auto number = [&](std::string_view key, std::uint64_t& out) -> Status {
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
  };
  MOLT_RETURN_IF_ERROR(text("branch", r.branch));
  MOLT_RETURN_IF_ERROR(text(kind == "rollback" ? "to" : "build", r.build));
  MOLT_RETURN_IF_ERROR(number("seq", r.seq));
  MOLT_RETURN_IF_ERROR(number("sent_ms", r.sent_ms));
  MOLT_RETURN_IF_ERROR(text("sig", r.sig));
  MOLT_RETURN_IF_ERROR(text("sig_fallback", r.sig_fallback));
  MOLT_RETURN_IF_ERROR(text("by", r.by));
  MOLT_RETURN_IF_ERROR(text("message", r.message));
  std::uint64_t rollout = 100;
  MOLT_RETURN_IF_ERROR(number("rollout", rollout));
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

constexpr char kNoDeploys[] =
    "this server takes no deploys now: its deploy registry is not open yet (the log says why; "
    "it is tried again every second), or it is moltd --check";

}  // namespace

HttpPlan AdminApi::Plan(const HttpRequest& head) const {
  HttpPlan plan;
  if (head.path.rfind(kApi, 0) != 0) {
    return plan;
  }
  const std::string_view rest = std::string_view(head.path).substr(kApi.size());
  if (rest == "builds" && head.method == "POST") {
    if (!Authorized(head)) {
      plan.refuse = Unauthorized();  // nothing of an unauthorized upload is read
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
  if (std::optional<std::uint64_t> wait = WaitSeconds(head.query); wait && *wait > 0) {
    plan.handler_timeout = std::chrono::seconds(*wait + 5);  // the call answers at its deadline
  }
  return plan;
}

bool AdminApi::HandleDeploys(std::string_view rest, HttpRequest& req, HttpReply& reply) {
  if (!IsDeployCall(rest)) {
    return false;
  }
  deploy::Deploys* deploys = deploys_.load();
  if (deploys == nullptr) {
    reply(Error(503, kNoDeploys));
    return true;
  }
  const bool post = req.method == "POST";
  const bool get = req.method == "GET" || req.method == "HEAD";
  const bool wants_post = rest == "deploy" || rest == "promote" || rest == "rollback" ||
                          rest == "resign" || rest == "pin" || rest == "unpin" || rest == "widen";
  if ((wants_post && !post) || (!wants_post && rest != "builds" && !get) ||
      (rest == "builds" && !get && !post)) {
    const std::string allowed = rest == "builds" ? "GET, POST" : wants_post ? "POST" : "GET";
    HttpResponse r = Error(405, std::string(req.path) + " takes " + allowed);
    r.headers.emplace_back("Allow", allowed);
    reply(std::move(r));
    return true;
  }
  auto limit = [&](std::size_t fallback, std::size_t cap) -> std::optional<std::size_t> {
    const std::string text = QueryValue(req.query, "limit");
    if (text.empty()) {
      return fallback;
    }
    std::optional<std::uint64_t> n = Number(text);
    if (!n || *n == 0 || *n > cap) {
      reply(Error(400, "limit is a number from 1 to " + std::to_string(cap)));
      return std::nullopt;
    }
    return static_cast<std::size_t>(*n);
  };
  if (rest == "builds" && post) {
    if (req.body_file.empty()) {
      reply(Error(400, "send the build file as the body (Content-Length set)"));
      return true;
    }
    deploys->Upload(std::move(req.body_file), Answering(std::move(reply), &UploadAnswer));
  } else if (rest == "builds") {
    if (std::optional<std::size_t> n = limit(50, 1000)) {
      deploys->Builds(*n, Answering(std::move(reply), &BuildsAnswer));
    }
  } else if (rest == "resolve") {
    deploys->Resolve(QueryValue(req.query, "branch"), QueryValue(req.query, "build"),
                     QueryValue(req.query, "rollback") == "1",
                     Answering(std::move(reply), &ResolveAnswer));
  } else if (rest == "branches") {
    deploys->Branches(Answering(std::move(reply), &BranchesAnswer));
  } else if (rest == "report") {
    std::optional<std::uint64_t> seq = Number(QueryValue(req.query, "seq"));
    if (!seq || *seq == 0) {
      reply(Error(400, "seq is the deployment's number: /api/v1/report?seq=12"));
      return true;
    }
    fleet::Fleet* fleet = sources_.fleet;
    if (fleet != nullptr) {
      fleet->Beat(sources_.self_report());  // this server's row fresh, as /servers has it
    }
    deploys->Results(
        *seq, [fleet, reply = std::move(reply)](Result<deploy::DeploymentResults> r) mutable {
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
  } else if (rest == "deployments") {
    if (std::optional<std::size_t> n = limit(20, deploy::Registry::kDeploymentsKept)) {
      deploys->Deployments(QueryValue(req.query, "branch"), *n,
                           Answering(std::move(reply), &DeploymentsAnswer));
    }
  } else {
    const std::optional<std::uint64_t> wait = WaitSeconds(req.query);
    if (!wait) {
      reply(Error(400, "wait is a number of seconds, 1 to 600 (or leave it out: 202 at once)"));
      return true;
    }
    Result<deploy::DeployRequest> r =
        ParseDeploy(rest == "pin" || rest == "unpin" ? "pin" : rest, req.body);
    if (!r.ok()) {
      reply(Error(400, r.status().message()));
      return true;
    }
    if (rest == "pin" || rest == "unpin") {
      deploy::PinRequest p{r->build, rest == "unpin", r->sent_ms, r->sig, r->sig_fallback, r->by};
      deploys->Pin(std::move(p), std::chrono::seconds(*wait),
                   Answering(std::move(reply), &PinAnswer));
      return true;
    }
    deploys->Deploy(std::move(*r), std::chrono::seconds(*wait),
                    Answering(std::move(reply), &DeployAnswer));
  }
  return true;
}

}  // namespace molt::kernel::admin
