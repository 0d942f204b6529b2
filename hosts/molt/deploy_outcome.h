// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/deploy_outcome.h
//
// How a deployment reads in molt (docs/deploys.md, docs/fleet.md "Deploy reports"): one
// deployment's answer as its line, its JSON and the exit code it means, and a fleet report's
// summary. Included by the units that show deployments: shipment.cc, deploy_verbs.cc,
// registry_verbs.cc.
#ifndef MOLT_HOSTS_MOLT_DEPLOY_OUTCOME_H_
#define MOLT_HOSTS_MOLT_DEPLOY_OUTCOME_H_

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>

#include "hosts/molt/cli.h"

namespace molt::cli {

// One deployment's outcome as the CLI shows it: its JSON object, its line, and whether it is a
// success (the exit code it means).
struct Outcome {
  boost::json::object json;
  std::string text;
  bool ok = false;
};

// The outcome of deployment `d` as the server answered it with `http_status`: 409 is a refusal
// (`d` is then the error body); swapped, adopted, recorded, pending and skipped are successes.
Outcome Describe(const boost::json::value& d, int http_status);

// Prints one deployment's outcome (its JSON with --json, else its line); the exit code it means.
int PrintOutcome(const Common& common, const boost::json::value& d, int http_status);

// A fleet report's summary (GET /api/v1/report): "3 server(s): 2 swapped, 1 failed; 33% of those
// that tried it failed", then a line for each server that failed, rolled back or is pending.
std::string SummaryLine(const boost::json::value& report);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_DEPLOY_OUTCOME_H_
