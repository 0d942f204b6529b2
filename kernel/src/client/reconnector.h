// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/reconnector.h
//
// Reconnector: when and where a client's next attempt goes (Connection, connection.h). After a
// lost link the next attempt waits the backoff, with ±25% jitter so that the clients of one
// server do not come back together, and the backoff doubles up to the maximum; a Welcome starts
// it afresh. A busy server's refusal stretches it to the wait the server asked for. A Redirect
// (wire 2.4: the server drains) names the next server: once the link ends the client goes there,
// soon, spread over the first backoff.
//
//   Reconnector reconnect(/*max_seconds=*/8);
//   reconnect.AfterLoss(RealNow());                  // then, in the timers:
//   if (reconnect.Due(RealNow())) { ... a new attempt ... }
//   reconnect.Redirect("10.0.0.2:7777", "moltd-2", "drain");
//
// Thread safety: not thread-safe; REQUIRES one thread at a time (the connection's).
#ifndef MOLT_KERNEL_CLIENT_RECONNECTOR_H_
#define MOLT_KERNEL_CLIENT_RECONNECTOR_H_

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "kernel/src/core/clock.h"

namespace molt::kernel::client {

class Reconnector {
 public:
  // The first backoff, in seconds.
  static constexpr double kFirstDelay = 0.1;
  // Where a Redirect sends the client.
  struct Redirection {
    std::string host;
    std::uint16_t port = 0;
    std::string server;
    std::string reason;
  };

  // `max_seconds`: the longest backoff.
  explicit Reconnector(double max_seconds);

  // The link was lost at `now`: the next attempt after the backoff, which doubles.
  void AfterLoss(TimePoint now);
  // The server asked to wait `seconds` at least before the next attempt.
  void AtLeast(double seconds);
  // The backoff starts afresh (a Welcome, a new connection).
  void Reset() { backoff_ = kFirstDelay; }
  // The next attempt is due at `now`.
  bool Due(TimePoint now) const { return now >= next_attempt_; }
  TimePoint next_attempt() const { return next_attempt_; }

  // Remembers the server a Redirect names in `address` ("host:port", "[v6]:port"); false (and
  // nothing remembered) when it names none.
  bool Redirect(const std::string& address, std::string server, std::string reason);
  bool redirected() const { return redirect_.has_value(); }
  // The redirection, forgotten; the next attempt soon after `now` (spread over the first
  // backoff), the backoff afresh. REQUIRES: redirected().
  Redirection Follow(TimePoint now);
  void ForgetRedirect() { redirect_.reset(); }

 private:
  const double max_;
  double backoff_ = kFirstDelay;
  TimePoint next_attempt_{};
  std::minstd_rand rng_{std::random_device{}()};
  std::optional<Redirection> redirect_;  // followed when the link ends
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_RECONNECTOR_H_
