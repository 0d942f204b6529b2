// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/main.cc
//
// molt-bot: N simulated clients on libmolt_client (the C API, as any app would use it). They
// join, send intents and requests at a given rate on the chosen channels, and the bot reports
// what happened: a progress line every second, then a summary (intents sent and refused by the
// client's own limiter, requests answered / rejected / rate limited / timed out, round-trip
// p50 and p99, disconnects). The load generator for benchmarks and hot-swap tests: with
// --verify each client numbers its messages on the counter plugin's echo channel and checks
// that every echo comes back once and in order (lost, duplicated, out of order are reported).
// SIGINT or SIGTERM ends the run early, with the summary. --ws drives the clients over the
// server's WebSocket port (moltd --ws) instead of TCP, --tls over TLS, both: wss://. --udp walks
// the walk plugin's square by predicted intents and hears its positions, by the datagram link
// when the server offers one (moltd --udp): predictions accepted / rolled back, their ack round
// trip, positions heard and datagram links open are reported.
//
// The parts: the flags (bot_options.h), one client (bot_client.h), the clients together on one
// thread, sleeping between rounds (swarm.h), and the figures (bot_report.h). The summary says
// how much CPU the run took and how often it woke.
#include <csignal>
#include <cstddef>
#include <optional>
#include <variant>

#include "hosts/molt-bot/bot_options.h"
#include "hosts/molt-bot/bot_report.h"
#include "hosts/molt-bot/swarm.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;  // SIGINT / SIGTERM: finish now, with the summary

}  // namespace

int main(int argc, char** argv) {
  using namespace molt::bot;
  std::variant<int, BotOptions> parsed = ParseBotOptions(argc, argv);
  if (const int* code = std::get_if<int>(&parsed)) {
    return *code;
  }
  const BotOptions& options = std::get<BotOptions>(parsed);
  std::signal(SIGINT, [](int) { g_stop = 1; });
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  Totals totals;
  Swarm swarm(options, totals);
  if (const int code = swarm.Connect(); code != 0) {
    return code;
  }
  if (const int code = swarm.Join(); code != 0) {
    return code;
  }
  const RunCost cost = swarm.Run(g_stop);
  // Let the last answers arrive, then leave.
  swarm.Drain();
  const bool verified =
      PrintSummary(totals, swarm.connected(), swarm.size(), options.verify, cost,
                   options.udp ? std::optional<std::size_t>(swarm.DatagramLinks()) : std::nullopt);
  const bool all_stayed = swarm.connected() == swarm.size() && totals.disconnects == 0;
  swarm.Close();
  return all_stayed && verified ? 0 : 1;
}
