// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/deploy_answers.h
//
// The deploy calls' answers as HTTP (docs/deploys.md): what deploy::Deploys answers (a value, or
// a Status) becomes a status code and a JSON body here, and only here: deploy/ knows no HTTP.
//   kInvalidArgument 400, kNotFound 404, kRejected 409 {"error", "result": "refused"},
//   kIoError 503 (the fleet's database did not answer), anything else 500
// A value is 200, an upload of a new build 201, an answer given before a swap's outcome 202.
// Used by the deploy routes (deploy_routes.h) and the deploy tests, which read the answers as
// the API gives them.
//
// Thread safety: none needed (functions of their arguments).
#ifndef MOLT_KERNEL_ADMIN_DEPLOY_ANSWERS_H_
#define MOLT_KERNEL_ADMIN_DEPLOY_ANSWERS_H_

#include <molt/kernel/status.h>

#include <boost/json/object.hpp>
#include <vector>

#include "kernel/src/admin/http_server.h"
#include "kernel/src/deploy/deploys.h"

namespace molt::kernel::fleet {
struct ServerReport;
}  // namespace molt::kernel::fleet

namespace molt::kernel::admin {

// A deploy call's refusal or failure: the status code of its Status's code, {"error": message}.
HttpResponse DeployError(const Status& s);

HttpResponse UploadAnswer(const Result<deploy::Uploaded>& r);
HttpResponse DeployAnswer(const Result<deploy::DeployOutcome>& r);
HttpResponse PinAnswer(const Result<deploy::PinOutcome>& r);
HttpResponse ResolveAnswer(const Result<deploy::Resolved>& r);
HttpResponse BuildsAnswer(const Result<std::vector<deploy::StoredBuild>>& r);
HttpResponse BranchesAnswer(const Result<deploy::BranchesView>& r);
HttpResponse DeploymentsAnswer(const Result<std::vector<deploy::Deployment>>& r);

// {"deployment": DEPLOYMENT, "results": [{"id", "result", "reason", "at_ms"}]}
boost::json::object ResultsJson(const deploy::DeploymentResults& r);
// A deployment's report (docs/fleet.md, "Deploy reports") from its ResultsJson: every server of
// its branch the heartbeats list, with its result of it. A server without one is `pending` while
// it is live, `booted` when it applied the seq (or a newer one) without a result of it (it
// started later and booted the head), `draining` or `lost` when it closed or its heartbeats
// stopped first.
boost::json::object DeployReport(boost::json::object results,
                                 const std::vector<fleet::ServerReport>& servers);

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_DEPLOY_ANSWERS_H_
