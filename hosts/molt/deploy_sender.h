// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/deploy_sender.h
//
// Sending one deploy, promote, rollback or resign to moltd (docs/deploys.md): a build file is
// uploaded first (the server verifies and stores it, and it is named by its hash from then on),
// the build is resolved on the branch with the seq to sign, the canonical deploy string is
// signed with the operator's keys (signing_keys.h), and the request is posted; a seq another
// deploy took meanwhile is signed again with the next one. Included by shipment.cc.
#ifndef MOLT_HOSTS_MOLT_DEPLOY_SENDER_H_
#define MOLT_HOSTS_MOLT_DEPLOY_SENDER_H_

#include <boost/json/value.hpp>
#include <string>
#include <variant>

#include "hosts/molt/session.h"

namespace molt::cli {

// The server's answer to a deploy it took or refused: its HTTP status (200, 202 or 409) and its
// JSON.
struct Posted {
  int status = 0;
  boost::json::value answer;
};

// Sends a `kind` ("deploy", "promote", "rollback" or "resign") of `build` (a build file, or a
// stored build's id, SHA-256 or #SEQ; for a rollback, the build to go back to or "" for the
// previous head) to `branch`, asking the server to wait up to `wait` seconds for the swap (0:
// not at all). The verb's flags come from `s` (AddDeployOptions, and --rollout for a deploy).
// Returns the answer, or the exit code of a failure already printed.
std::variant<int, Posted> SendDeploy(Session& s, const std::string& kind, const std::string& branch,
                                     std::string build, int wait);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_DEPLOY_SENDER_H_
