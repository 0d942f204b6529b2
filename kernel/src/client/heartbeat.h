// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/heartbeat.h
//
// Heartbeat: a client's pings to the server and what it learns from them (Connection,
// connection.h). Once welcomed it pings every period the Welcome announced, keeps the round trip
// time from the echoes of its own latest ping (a moving average, 1/8 per sample), and says when
// the server has been silent long enough (three periods and two seconds) that the link counts as
// lost. Time is passed in.
//
//   heartbeat.Start(Seconds(1), now);               // the Welcome
//   if (std::optional<Heartbeat::Ping> p = heartbeat.Due(now)) { ... send Ping(p->seq, p->time_ns)
//   } heartbeat.OnPong(seq, time_ns, now);            // rtt() follows heartbeat.Silent(now); //
//   the link is lost
//
// Thread safety: a value type; REQUIRES external synchronization.
#ifndef MOLT_KERNEL_CLIENT_HEARTBEAT_H_
#define MOLT_KERNEL_CLIENT_HEARTBEAT_H_

#include <chrono>
#include <cstdint>
#include <optional>

#include "kernel/src/core/clock.h"

namespace molt::kernel::client {

class Heartbeat {
 public:
  // A ping to send: its sequence number and the sender's clock, which the Pong echoes.
  struct Ping {
    std::uint32_t seq = 0;
    std::uint64_t time_ns = 0;
  };

  // Pings every `period` from `now` (the Welcome's interval).
  void Start(Duration period, TimePoint now);
  // Bytes came from the server at `now`.
  void Received(TimePoint now) { last_receive_ = now; }
  // The ping due at `now`, if one is; the next is then a period later.
  std::optional<Ping> Due(TimePoint now);
  // A Pong at `now`: a sample of the round trip when it echoes the latest ping.
  void OnPong(std::uint32_t seq, std::uint64_t time_ns, TimePoint now);

  // Silence from the server this long is a lost link: three ping periods and two seconds.
  Duration silence() const { return 3 * period_ + std::chrono::seconds(2); }
  bool Silent(TimePoint now) const { return now - last_receive_ > silence(); }
  // When the silence would count as a lost link.
  TimePoint silent_at() const { return last_receive_ + silence(); }
  TimePoint next_ping() const { return next_ping_; }
  // Seconds; 0 before the first sample.
  double rtt() const { return rtt_; }

 private:
  Duration period_ = std::chrono::seconds(1);
  TimePoint next_ping_{};
  TimePoint last_receive_{};
  std::uint32_t seq_ = 0;
  double rtt_ = 0;
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_HEARTBEAT_H_
