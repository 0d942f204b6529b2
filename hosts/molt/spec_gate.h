// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/spec_gate.h
//
// The spec gate a build passes before it is packed (molt build): moltd --self-test runs the
// plugins' own tests, the security audit and the fuzz gate on the plugin directory, and says
// the protocol hash of the channels the services declare, which the manifest records. Included by
// build_command.cc.
#ifndef MOLT_HOSTS_MOLT_SPEC_GATE_H_
#define MOLT_HOSTS_MOLT_SPEC_GATE_H_

#include <molt/kernel/status.h>

#include <optional>
#include <string>

namespace molt::cli {

// The moltd that runs the gate: `flag` (--moltd) when given, else $MOLTD, else the moltd beside
// this binary, else "moltd" (found on PATH).
std::string MoltdPath(const std::optional<std::string>& flag);

// Runs `moltd` --self-test on the plugin directory `dir` with a scratch data directory (removed
// afterwards); the protocol hash it printed (16 hex digits). The error says why the set is not
// built: moltd could not run, is older than this molt, or the set failed the gate (with moltd's
// report).
kernel::Result<std::string> RunSpecGate(const std::string& moltd, const std::string& dir);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_SPEC_GATE_H_
