// SPDX-License-Identifier: Apache-2.0
// The security audit and the fuzz gate (spec: securityAudit, Fuzz.run).
#include "kernel/src/net/audit.h"

#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <iterator>

#include "kernel/src/core/hooks.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/net_log.h"

namespace molt::kernel::net {
namespace {

namespace fb = ::flatbuffers;

}  // namespace

std::string_view SeverityName(AuditFinding::Severity s) {
  switch (s) {
    case AuditFinding::Severity::kHigh:
      return "High";
    case AuditFinding::Severity::kMedium:
      return "Medium";
    case AuditFinding::Severity::kInfo:
      return "Info";
  }
  return "Unknown";
}

std::string FormatFinding(const AuditFinding& f) {
  return fmt::format("[{}] {} ({}): {}", SeverityName(f.severity), f.kind, f.name, f.detail);
}

std::vector<AuditFinding> SecurityAudit(const ChannelRegistry& channels, const Hooks& hooks) {
  using S = AuditFinding::Severity;
  std::vector<AuditFinding> findings;
  for (const Channel* ch : channels.List()) {
    const bool handler = ch->spec().on_intent || ch->spec().on_request;
    if (!handler) {
      continue;
    }
    const std::string name = fmt::format("{} {}", ChannelKindName(ch->kind()), ch->name());
    const std::string_view point = ch->kind() == ChannelKind::kRequest ? "Request" : "Intent";
    if (!ch->guarded(hooks) && !ch->spec().open) {
      findings.push_back(
          {S::kHigh, "UnguardedChannel", name,
           fmt::format("has no validator and is not Open, so every payload is rejected; add a "
                       "validator (a {}.{} hook handler, or rules), or declare it Open",
                       point, ch->name())});
    }
    // Open matters only without a validator: with one (a hook handler or rules) the payload is
    // validated as on any channel. Without one the payload is still verified (the registry
    // requires a verifier of every inbound channel): its shape is checked, its values are not.
    if (ch->spec().open && !ch->guarded(hooks)) {
      findings.push_back(
          {S::kMedium, "OpenChannel", name,
           fmt::format("is Open with no validator: any payload its verifier accepts ({}) "
                       "reaches the handler, its values checked by no rule or {}.{} hook handler",
                       ch->spec().schema, point, ch->name())});
    }
    if (ch->default_rate()) {
      findings.push_back(
          {S::kInfo, "DefaultRateLimit", name,
           fmt::format("rides the default rate limit ({}/s); declare its own", kDefaultRate)});
    }
  }
  for (const Hooks::PointInfo& p : hooks.ListPoints()) {
    const bool gate = p.name.starts_with("Intent.") || p.name.starts_with("Request.");
    if (gate && p.fail_open) {
      findings.push_back({S::kHigh, "FailOpenGate", p.name,
                          "the point is fail-open, so a crashing validator would pass the "
                          "payload; define it fail-closed"});
    }
  }
  std::stable_sort(
      findings.begin(), findings.end(),
      [](const AuditFinding& a, const AuditFinding& b) { return a.severity < b.severity; });
  return findings;
}

FuzzReport Fuzz(ChannelRegistry& channels, Hooks& hooks, SessionId session,
                std::size_t cases_per_channel, std::uint64_t seed) {
  FuzzReport report;
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&] {  // splitmix64: deterministic per seed
    state += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  static const std::string kHostileStrings[] = {"",
                                                std::string(10 * 1024, 'A'),
                                                "%s%s%s%n%x",
                                                std::string("\0\x01\x1b[2J\x7f", 6),
                                                "\xff\xfe\xc0\xaf",
                                                "'; DROP TABLE profiles; --"};
  const double kHostileNumbers[] = {
      0,      -1,      1,      127,      128,          255,           256,
      -128,   32767,   -32768, 65535,    2147483647.0, -2147483648.0, 4294967295.0,
      9.2e18, -9.2e18, NAN,    INFINITY, -INFINITY};
  for (const Channel* cc : channels.List()) {
    if (cc->kind() == ChannelKind::kEvent || !cc->spec().verify) {
      continue;  // clients send nothing on it
    }
    Channel* ch = channels.Find(cc->id());
    ++report.channels;
    for (std::size_t i = 0; i < cases_per_channel; ++i) {
      fb::FlatBufferBuilder b(256);
      std::vector<std::uint8_t> raw;
      if (i % 4 == 3) {  // raw garbage of random length
        raw.resize(next() % 64);
        for (auto& byte : raw) {
          byte = static_cast<std::uint8_t>(next());
        }
      } else {  // a table with every declared field (and a few undeclared ones) set hostile
        std::vector<std::pair<std::uint16_t, fb::Offset<fb::String>>> strings;
        for (const FieldRule& r : ch->spec().rules) {
          if (r.type == FieldType::kString) {
            const std::string& s = kHostileStrings[next() % std::size(kHostileStrings)];
            strings.emplace_back(r.field, b.CreateString(s));
          }
        }
        const fb::uoffset_t start = b.StartTable();
        for (const auto& [field, off] : strings) {
          b.AddOffset(fb::FieldIndexToOffset(field), off);
        }
        for (const FieldRule& r : ch->spec().rules) {
          const double v = kHostileNumbers[next() % std::size(kHostileNumbers)];
          const auto slot = fb::FieldIndexToOffset(r.field);
          auto as_int = [&](auto t) {
            using T = decltype(t);
            b.AddElement<T>(
                slot, std::isfinite(v) ? static_cast<T>(static_cast<std::int64_t>(v)) : T{}, T{1});
          };
          switch (r.type) {
            case FieldType::kBool:
            case FieldType::kUInt8:
              as_int(std::uint8_t{});
              break;
            case FieldType::kInt8:
              as_int(std::int8_t{});
              break;
            case FieldType::kInt16:
              as_int(std::int16_t{});
              break;
            case FieldType::kUInt16:
              as_int(std::uint16_t{});
              break;
            case FieldType::kInt32:
              as_int(std::int32_t{});
              break;
            case FieldType::kUInt32:
              as_int(std::uint32_t{});
              break;
            case FieldType::kInt64:
              as_int(std::int64_t{});
              break;
            case FieldType::kUInt64:
              as_int(std::uint64_t{});
              break;
            case FieldType::kFloat:
              b.AddElement<float>(slot, static_cast<float>(v), 1.0f);
              break;
            case FieldType::kDouble:
              b.AddElement<double>(slot, v, 1.0);
              break;
            case FieldType::kString:
              break;
          }
        }
        b.Finish(fb::Offset<void>(b.EndTable(start)));
        raw.assign(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
        if (i % 4 == 2 && !raw.empty()) {
          raw.resize(next() % raw.size());  // truncated
        }
      }
      ++report.cases;
      bool ok = false;
      try {
        ok = ch->spec().verify(raw);
      } catch (const std::exception& e) {
        report.validator_errors.push_back(
            {ch->name(), fmt::format("the verifier threw: {}", e.what())});
        continue;
      }
      ok = ok && ch->RulesHold(raw);
      if (ok && hooks.handler_count(ch->point()) > 0) {
        Value args[] = {Value::Bytes(raw.data(), static_cast<std::uint32_t>(raw.size()))};
        HookContext ctx{.args = args, .session = session};
        HookResult r = hooks.Fire(ch->point(), ctx);
        if (!r.error.empty()) {
          report.validator_errors.push_back({ch->name(), r.error});
        }
        ok = r.passed;
      }
      ++(ok ? report.passed : report.rejected);
    }
  }
  return report;
}

void LogSecurityAudit(const std::vector<AuditFinding>& findings) {
  if (findings.empty()) {
    kNetLog.Info("security audit: clean");
    return;
  }
  std::string text = fmt::format("security audit: {} finding(s)", findings.size());
  for (const AuditFinding& f : findings) {
    text += "\n  " + FormatFinding(f);
  }
  kNetLog.Warn("{}", text);
}

Status FuzzGate(ChannelRegistry& channels, Hooks& hooks) {
  const FuzzReport report = Fuzz(channels, hooks, 0);
  if (report.validator_errors.empty()) {
    return Status::Ok();
  }
  std::string text =
      fmt::format("the fuzz gate failed: {} validator error(s)", report.validator_errors.size());
  for (const FuzzReport::Error& e : report.validator_errors) {
    text += fmt::format("; channel \"{}\": {}", e.channel, e.error);
  }
  return Status::FailedPrecondition(text + " (validators must reject, not throw)");
}

}  // namespace molt::kernel::net
