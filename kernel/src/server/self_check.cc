// SPDX-License-Identifier: Apache-2.0
// SelfCheck: the plugins' own tests, the security audit and the fuzz gate, reported
// (self_check.h).
#include "kernel/src/server/self_check.h"

#include <fmt/format.h>
#include <molt/kernel/server.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>
#include <vector>

#include "kernel/src/core/kernel.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/audit.h"
#include "kernel/src/net/network.h"

namespace molt::kernel {

int SelfCheck(const std::string& flag, const std::string& plugin_dir, loader::PluginHost& plugins,
              net::Network& network, Kernel& kernel) {
  std::string loaded;
  for (const loader::PluginHost::Plugin& p : plugins.plugins()) {
    loaded += fmt::format("{}{} {}", loaded.empty() ? "" : ", ", p.instance->name(),
                          p.instance->info().version);
  }
  std::string report = fmt::format(
      "moltd {} {}\n  plugins: {} loaded and started ({})\n  protocol: {:016x} ({} "
      "channels)\n",
      flag, plugin_dir, plugins.plugins().size(), loaded, network.channels().ProtocolHash(),
      network.channels().size());
  // The plugins' own tests first: the audit and the fuzz gate see what they leave.
  std::size_t passed = 0;
  std::size_t failed = 0;
  std::string failures;
  const std::vector<loader::PluginHost::SelfTestRun> runs = plugins.RunSelfTests();
  for (const loader::PluginHost::SelfTestRun& run : runs) {
    for (const abi::PluginInstance::SelfTestResult& t : run.tests) {
      if (t.status.ok()) {
        ++passed;
      } else {
        ++failed;
        failures += fmt::format("    {}: \"{}\": {}\n", run.plugin, t.name, t.status.message());
      }
    }
    if (!run.error.ok()) {
      ++failed;
      failures += fmt::format("    {}: {}\n", run.plugin, run.error.message());
    }
  }
  report += fmt::format("  self-tests: {} passed, {} failed ({} of {} plugins have tests)\n{}",
                        passed, failed, runs.size(), plugins.plugins().size(), failures);
  const std::vector<net::AuditFinding> findings =
      net::SecurityAudit(network.channels(), kernel.hooks());
  std::size_t high = 0;
  report += findings.empty() ? "  security audit: clean\n"
                             : fmt::format("  security audit: {} finding(s)\n", findings.size());
  for (const net::AuditFinding& f : findings) {
    high += f.severity == net::AuditFinding::Severity::kHigh;
    report += "    " + net::FormatFinding(f) + "\n";
  }
  const net::FuzzReport fuzz = net::Fuzz(network.channels(), kernel.hooks(), 0);
  report += fmt::format(
      "  fuzz gate: {} channel(s), {} hostile payloads: {} passed, {} rejected, {} validator "
      "error(s)\n",
      fuzz.channels, fuzz.cases, fuzz.passed, fuzz.rejected, fuzz.validator_errors.size());
  // Each distinct error once, with how often it happened.
  std::vector<std::pair<const net::FuzzReport::Error*, std::size_t>> distinct;
  std::set<std::string> failing_channels;
  for (const net::FuzzReport::Error& e : fuzz.validator_errors) {
    failing_channels.insert(e.channel);
    auto same = std::find_if(distinct.begin(), distinct.end(), [&](const auto& d) {
      return d.first->channel == e.channel && d.first->error == e.error;
    });
    if (same != distinct.end()) {
      ++same->second;
    } else {
      distinct.emplace_back(&e, 1);
    }
  }
  for (const auto& [e, count] : distinct) {
    report += fmt::format("    channel \"{}\": {}{} (validators must reject, not throw)\n",
                          e->channel, e->error, count > 1 ? fmt::format(" (x{})", count) : "");
  }
  const bool ok = failed == 0 && high == 0 && failing_channels.empty();
  if (ok) {
    report += "check passed\n";
  } else {
    report += fmt::format(
        "check failed: {} self-test(s) failed, {} High finding(s), validators threw on {} "
        "channel(s)\n",
        failed, high, failing_channels.size());
  }
  std::fputs(report.c_str(), stdout);
  std::fflush(stdout);
  return ok ? kExitOk : kExitCheckFailed;
}

}  // namespace molt::kernel
