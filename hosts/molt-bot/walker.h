// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/walker.h
//
// Walker: what one of molt-bot's clients does with --udp: it walks the walk plugin's square
// (plugins/walk) by the predicted intent walk.Move, a step of 1 on x at a time, always towards
// 0 from its predicted position (so it goes back and forth and never leaves the square), and
// hears the unreliable walk.Pos. Each step is applied to the predicted position at once and
// undone when it is rolled back (rejected, or timed out), as an app does; every resolution, its
// ack round trip and every position go into the bot's Totals. Whether the steps and positions
// travel by the datagram link or the reliable one is the client's business (docs/client.md, "The
// datagram link"): the calls are the same. Included by bot_client.h.
//
// Thread safety: none; molt-bot runs every client on its one thread. A Walker never moves once
// joined (libmolt_client's callbacks hold its address).
#ifndef MOLT_HOSTS_MOLT_BOT_WALKER_H_
#define MOLT_HOSTS_MOLT_BOT_WALKER_H_

#include <molt/client.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "hosts/molt-bot/bot_report.h"

namespace molt::bot {

class Walker {
 public:
  // `totals` outlives the walker.
  explicit Walker(Totals& totals) : totals_(totals) {}
  Walker(const Walker&) = delete;
  Walker& operator=(const Walker&) = delete;

  // Once `client` is connected: resolves walk.Move and walk.Pos, and hears walk.Pos and every
  // prediction's resolution (the client's one resolution handler). The error line (without
  // "molt-bot: ") when the server lacks the walk plugin. `client` outlives the walker's use.
  std::optional<std::string> Join(molt_client* client);
  // Predicts the next step and sends it; a step the client refuses (its limiter or queue) is
  // counted and not applied.
  void Step();

  // The predicted x: the steps sent, less those rolled back.
  int x() const { return x_; }
  // Predictions sent and not yet resolved.
  std::size_t pending() const { return in_flight_.size(); }

 private:
  using Clock = std::chrono::steady_clock;
  // A step sent and not yet resolved: its dx (to undo it) and when it went.
  struct InFlight {
    int dx;
    Clock::time_point sent;
  };

  static void OnResolved(void* ud, std::uint16_t channel, std::uint32_t seq, std::int32_t accepted,
                         molt_status_t status);
  static void OnPos(void* ud, std::uint16_t channel, const void* data, std::size_t size);

  Totals& totals_;
  molt_client* client_ = nullptr;
  std::uint16_t move_ = 0;
  int x_ = 0;
  std::unordered_map<std::uint32_t, InFlight> in_flight_;  // by seq
};

}  // namespace molt::bot

#endif  // MOLT_HOSTS_MOLT_BOT_WALKER_H_
