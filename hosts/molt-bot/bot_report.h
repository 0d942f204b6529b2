// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/bot_report.h
//
// What molt-bot counts and how it reports it (docs/client.md, "molt-bot"): the totals every
// client adds to, the progress line printed each second and the summary at the end (intents
// sent and refused by the client's own limiter, requests answered / rejected / rate limited /
// timed out, round-trip p50 and p99, disconnects; with --verify, the echoes; with --udp, the walk:
// predictions, their ack round trip, positions and datagram links; the CPU the run took).
// Included by bot_client.h, walker.h, swarm.h and main.cc.
#ifndef MOLT_HOSTS_MOLT_BOT_BOT_REPORT_H_
#define MOLT_HOSTS_MOLT_BOT_BOT_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace molt::bot {

struct Totals {
  std::uint64_t intents_sent = 0;
  std::uint64_t intents_refused = 0;  // by the client's limiter or queue: never reached the server
  std::uint64_t requests_sent = 0;
  std::uint64_t requests_ok = 0;
  std::uint64_t requests_rejected = 0;
  std::uint64_t requests_rate_limited = 0;
  std::uint64_t requests_timed_out = 0;
  std::uint64_t requests_failed = 0;  // any other status
  std::uint64_t disconnects = 0;
  std::vector<double> rtts;  // seconds, one per answered request
  // --verify: numbered echoes.
  std::uint64_t echoes_sent = 0;
  std::uint64_t echoes_back = 0;  // distinct numbers that came back
  std::uint64_t duplicated = 0;
  std::uint64_t out_of_order = 0;
  // --udp: predicted steps on walk.Move, each resolved once, and the positions heard.
  std::uint64_t predictions_sent = 0;
  std::uint64_t predictions_refused = 0;  // by the client (limiter, queue): nothing was sent
  std::uint64_t predictions_accepted = 0;
  std::uint64_t predictions_rejected = 0;   // rolled back: the server refused it
  std::uint64_t predictions_timed_out = 0;  // rolled back: no answer in time, or the session ended
  std::vector<double> ack_rtts;             // seconds from predict to the server's answer
  std::uint64_t positions = 0;              // walk.Pos events heard

  // Predictions sent and not resolved yet.
  std::uint64_t PredictionsPending() const;
  // Whether an answer is still owed: a request unanswered, an echo not back, or a prediction
  // not resolved.
  bool Outstanding() const;
};

// What a run cost: its length, the CPU it used and how often the bot woke.
struct RunCost {
  double seconds = 0;
  double cpu_seconds = 0;
  std::uint64_t wakeups = 0;
};

// Seconds of CPU this process used so far (user and system).
double CpuSeconds();

// The `p` quantile (0..1) of `v` (nearest rank below); 0 for none.
double Percentile(std::vector<double> v, double p);

// The figures of a progress line and of the summary: "<connected>/<clients> connected  intents
// ... disconnects N".
std::string Line(const Totals& t, std::size_t connected, std::size_t clients);

// The walk's figures (--udp), after a progress line and in the summary: "predictions N sent N
// refused N accepted N rolled back (N rejected N timed out) N pending  ack rtt p50 ... ms p99 ...
// ms  positions N  datagram links <links>/<clients> open". `links`: the clients whose datagram
// link was open, as each client saw it (BotClient::DatagramLinkOpen).
std::string WalkLine(const Totals& t, std::size_t links, std::size_t clients);

// Whether the walk went as it should: every prediction sent was accepted (none rolled back or
// still pending), and, when any was, positions were heard.
bool WalkedCleanly(const Totals& t);

// Prints the summary to stdout: the figures, with `verify` the echoes, with `links` (--udp: the
// clients whose datagram link was open) the walk, and the cost. Returns whether every echo came
// back once and in order (true without `verify`) and the walk went cleanly (true without --udp).
bool PrintSummary(const Totals& t, std::size_t connected, std::size_t clients, bool verify,
                  const RunCost& cost, std::optional<std::size_t> links = std::nullopt);

}  // namespace molt::bot

#endif  // MOLT_HOSTS_MOLT_BOT_BOT_REPORT_H_
