// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/bot_report.cc
//
// molt-bot's lines, formatted as they always were (tests and scripts read them).
#include "hosts/molt-bot/bot_report.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace molt::bot {

std::uint64_t Totals::PredictionsPending() const {
  const std::uint64_t resolved =
      predictions_accepted + predictions_rejected + predictions_timed_out;
  return resolved < predictions_sent ? predictions_sent - resolved : 0;
}

bool Totals::Outstanding() const {
  return requests_ok + requests_rejected + requests_rate_limited + requests_timed_out +
                 requests_failed <
             requests_sent ||
         echoes_back < echoes_sent || PredictionsPending() > 0;
}

double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) {
    return 0;
  }
  const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

std::string Line(const Totals& t, std::size_t connected, std::size_t clients) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%zu/%zu connected  intents %llu sent %llu refused  requests %llu ok %llu "
                "rejected %llu limited %llu timed out  rtt p50 %.2f ms p99 %.2f ms  "
                "disconnects %llu",
                connected, clients, static_cast<unsigned long long>(t.intents_sent),
                static_cast<unsigned long long>(t.intents_refused),
                static_cast<unsigned long long>(t.requests_ok),
                static_cast<unsigned long long>(t.requests_rejected),
                static_cast<unsigned long long>(t.requests_rate_limited),
                static_cast<unsigned long long>(t.requests_timed_out),
                Percentile(t.rtts, 0.5) * 1e3, Percentile(t.rtts, 0.99) * 1e3,
                static_cast<unsigned long long>(t.disconnects));
  return buf;
}

std::string WalkLine(const Totals& t, std::size_t links, std::size_t clients) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "predictions %llu sent %llu refused %llu accepted %llu rolled back (%llu rejected "
                "%llu timed out) %llu pending  ack rtt p50 %.2f ms p99 %.2f ms  positions %llu  "
                "datagram links %zu/%zu open",
                static_cast<unsigned long long>(t.predictions_sent),
                static_cast<unsigned long long>(t.predictions_refused),
                static_cast<unsigned long long>(t.predictions_accepted),
                static_cast<unsigned long long>(t.predictions_rejected + t.predictions_timed_out),
                static_cast<unsigned long long>(t.predictions_rejected),
                static_cast<unsigned long long>(t.predictions_timed_out),
                static_cast<unsigned long long>(t.PredictionsPending()),
                Percentile(t.ack_rtts, 0.5) * 1e3, Percentile(t.ack_rtts, 0.99) * 1e3,
                static_cast<unsigned long long>(t.positions), links, clients);
  return buf;
}

bool WalkedCleanly(const Totals& t) {
  return t.predictions_accepted == t.predictions_sent &&
         (t.predictions_accepted == 0 || t.positions > 0);
}

bool PrintSummary(const Totals& t, std::size_t connected, std::size_t clients, bool verify,
                  const RunCost& cost, std::optional<std::size_t> links) {
  std::cout << "molt-bot: done: " << Line(t, connected, clients) << std::endl;
  bool verified = true;
  if (verify) {
    const std::uint64_t lost = t.echoes_sent - t.echoes_back;
    std::cout << "molt-bot: verify: " << t.echoes_sent << " sent " << t.echoes_back << " echoed "
              << lost << " lost " << t.duplicated << " duplicated " << t.out_of_order
              << " out of order" << std::endl;
    verified = lost == 0 && t.duplicated == 0 && t.out_of_order == 0;
  }
  if (links.has_value()) {
    std::cout << "molt-bot: walk: " << WalkLine(t, *links, clients) << std::endl;
    if (*links < connected) {
      std::cout << "molt-bot: walk: " << connected - *links << " of " << connected
                << " connected clients had no datagram link open: their steps and positions went "
                   "by the reliable link (does the server offer one, moltd --udp?)"
                << std::endl;
    }
    verified = verified && WalkedCleanly(t);
  }
  char cpu[160];
  std::snprintf(cpu, sizeof cpu,
                "molt-bot: cpu %.3f s in %.1f s of running (%.2f%% of a core), %llu wakeups",
                cost.cpu_seconds, cost.seconds,
                cost.seconds > 0 ? 100 * cost.cpu_seconds / cost.seconds : 0.0,
                static_cast<unsigned long long>(cost.wakeups));
  std::cout << cpu << std::endl;
  return verified;
}

}  // namespace molt::bot
