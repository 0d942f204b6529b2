// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/audit.h
//
// The boot-time checks of what plugins declared (spec: securityAudit and the Fuzz boot gate),
// apart from the network they inspect; the server's boot runs them (server/server.cc):
//   - SecurityAudit lists unguarded, Open and fail-open channels and gates, and channels riding
//     the default rate limit, most severe first; LogSecurityAudit logs them for the operator.
//   - Fuzz drives hostile payloads through every inbound channel's verifier, rules and
//     validators (never the handlers); FuzzGate refuses to serve when a validator throws instead
//     of rejecting.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_AUDIT_H_
#define MOLT_KERNEL_NET_AUDIT_H_

#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/net/session.h"

namespace molt::kernel {
class Hooks;
}  // namespace molt::kernel

namespace molt::kernel::net {

class ChannelRegistry;

// One finding of SecurityAudit() (spec: securityAudit).
struct AuditFinding {
  enum class Severity : std::uint8_t { kHigh = 0, kMedium = 1, kInfo = 2 };
  Severity severity;
  std::string kind;  // UnguardedChannel, FailOpenGate, OpenChannel, DefaultRateLimit
  std::string name;  // "intent Grant", "Intent.Grant"
  std::string detail;
};
std::string_view SeverityName(AuditFinding::Severity s);  // "High", "Medium", "Info"
// "[High] UnguardedChannel (intent Grant): has no validator ..."
std::string FormatFinding(const AuditFinding& f);

// What Fuzz() found (spec: Fuzz.run, validators only: the boot gate).
struct FuzzReport {
  std::size_t channels = 0;
  std::size_t cases = 0;
  std::size_t passed = 0;
  std::size_t rejected = 0;
  struct Error {
    std::string channel;
    std::string error;
  };
  std::vector<Error> validator_errors;  // a validator threw: the gate fails
};

// The findings for the channels of `channels` and the hook points of `hooks`, most severe first.
std::vector<AuditFinding> SecurityAudit(const ChannelRegistry& channels, const Hooks& hooks);
// Logs "security audit: clean", or one warning listing `findings`.
void LogSecurityAudit(const std::vector<AuditFinding>& findings);

// Drives `cases_per_channel` hostile payloads (deterministic per `seed`) through every inbound
// channel's verifier, rules and validators (never the handlers) as session `session`.
FuzzReport Fuzz(ChannelRegistry& channels, Hooks& hooks, SessionId session,
                std::size_t cases_per_channel = 32, std::uint64_t seed = 1);
// The development boot gate: Fuzz as session 0; FailedPrecondition naming each channel whose
// validator threw ("validators must reject, not throw").
Status FuzzGate(ChannelRegistry& channels, Hooks& hooks);

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_AUDIT_H_
