// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/shipment.h
//
// A deploy, promote, rollback or resign from the request to the fleet's verdict (docs/deploys.md,
// docs/fleet.md "Deploy reports"): sent (deploy_sender.h), then, with --wait, every server of the
// branch waited for (molt report's view); when --rollback-at % or more of those that tried the
// build failed or rolled it back, the branch is rolled back (unless --no-auto-rollback). Included
// by deploy_verbs.cc.
#ifndef MOLT_HOSTS_MOLT_SHIPMENT_H_
#define MOLT_HOSTS_MOLT_SHIPMENT_H_

#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <variant>

#include "hosts/molt/session.h"

namespace molt::cli {

// Ships a `kind` of `build` to `branch` with the verb's flags in `s` (--wait, --rollback-at,
// --no-auto-rollback and what SendDeploy reads) and prints the outcome. Returns the exit code:
// 1 when the deploy was refused, failed, or failed on a server of the fleet (then rolled back).
int Ship(Session& s, const std::string& kind, const std::string& branch, std::string build);

// A deployment's report: every server of its branch with its result (GET /api/v1/report), or the
// exit code of a failure already printed.
using FleetReport = std::variant<boost::json::value, int>;

// The report of `seq` once every live server of its branch answered, or at `deadline` (polled
// every 200 ms: the spec's 5 s is for a fleet API elsewhere; this one is one indexed query).
FleetReport AwaitReport(Session& s, std::uint64_t seq,
                        std::chrono::steady_clock::time_point deadline);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_SHIPMENT_H_
