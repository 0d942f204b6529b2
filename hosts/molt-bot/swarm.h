// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/swarm.h
//
// Swarm: molt-bot's clients together, on one thread: connected at --join-rate, joined, run at
// --rate for --duration, drained of their last answers and closed. Between rounds it sleeps
// until one of its clients' sockets is ready, a client's timer is due, or a message is owed: the
// clients are waited on together with their sockets and timeouts (client API 4), as an app with
// its own poller would, so an idle bot costs no CPU. Included by main.cc.
//
// Thread safety: none; everything runs on the thread that calls it.
#ifndef MOLT_HOSTS_MOLT_BOT_SWARM_H_
#define MOLT_HOSTS_MOLT_BOT_SWARM_H_

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "hosts/molt-bot/bot_client.h"
#include "hosts/molt-bot/bot_options.h"
#include "hosts/molt-bot/bot_report.h"

namespace molt::bot {

class Swarm {
 public:
  // `options` and `totals` outlive the swarm.
  Swarm(const BotOptions& options, Totals& totals) : options_(options), totals_(totals) {}

  // Creates the clients and starts connecting them at --join-rate, stepping the ones already
  // connecting meanwhile; the first runs --controllers. Returns 0, or the exit code (told on
  // stderr): 1 when a client cannot be created or connect, 2 when the controllers fail.
  int Connect();
  // Steps until every client is connected or gave up (15 s), resolves each connected client's
  // channels (with --udp, the walk's) and prints how many joined. Returns 0, or 2 when a channel
  // is missing (told).
  int Join();
  // Runs for --duration, or until `stop` is set (a signal): each round every joined client sends
  // what its rate owes and every client steps; a progress line each second. Returns what the run
  // cost. With --udp each progress line carries the walk's figures too (WalkLine).
  RunCost Run(const volatile std::sig_atomic_t& stop);
  // Lets the last answers arrive, for 2 s at most.
  void Drain();
  // Disconnects and destroys every client, in order.
  void Close();

  // Clients connected at the last count (the join, then each round).
  std::size_t connected() const { return connected_; }
  std::size_t size() const { return bots_.size(); }
  // Connected clients whose datagram link is open now, as each sees it
  // (BotClient::DatagramLinkOpen).
  std::size_t DatagramLinks() const;

 private:
  using Clock = std::chrono::steady_clock;

  // Sleeps until one of the first `count` clients' sockets is ready for what it waits for, one's
  // timer is due, or `limit` seconds pass, whichever comes first. Counts a wakeup.
  void WaitForClients(std::size_t count, double limit);
  // One round: the owed messages sent and every client stepped; the clients connected.
  std::size_t Round(double dt);
  // Seconds until the next message is owed (the client owing most goes first), the next report
  // or the end, whichever comes first.
  double NextWait(Clock::time_point next_report, Clock::time_point end) const;

  const BotOptions& options_;
  Totals& totals_;
  std::vector<std::unique_ptr<BotClient>> bots_;
  std::size_t connected_ = 0;
  std::uint64_t wakeups_ = 0;
};

}  // namespace molt::bot

#endif  // MOLT_HOSTS_MOLT_BOT_SWARM_H_
