// SPDX-License-Identifier: Apache-2.0
// Reconnector: the backoff, and where a Redirect sends a client (reconnector.h).
#include "kernel/src/client/reconnector.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace molt::kernel::client {
namespace {

// A caller's seconds, clamped to what a timer can hold.
Duration Clamped(double seconds) { return Seconds(std::clamp(seconds, 0.0, 1e6)); }

}  // namespace

Reconnector::Reconnector(double max_seconds) : max_(max_seconds) {}

void Reconnector::AfterLoss(TimePoint now) {
  std::uniform_real_distribution<double> jitter(0.75, 1.25);
  next_attempt_ = now + Clamped(backoff_ * jitter(rng_));
  backoff_ = std::min(backoff_ * 2, max_);
}

void Reconnector::AtLeast(double seconds) { backoff_ = std::max(backoff_, seconds); }

bool Reconnector::Redirect(const std::string& address, std::string server, std::string reason) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return false;
  }
  std::string host = address.substr(0, colon);
  if (host.front() == '[') {  // [::1]:7777
    if (host.size() < 3 || host.back() != ']') {
      return false;
    }
    host = host.substr(1, host.size() - 2);
  }
  const std::string port_text = address.substr(colon + 1);
  char* end = nullptr;
  const unsigned long port = std::strtoul(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port == 0 || port > 65535) {
    return false;
  }
  redirect_ = Redirection{std::move(host), static_cast<std::uint16_t>(port), std::move(server),
                          std::move(reason)};
  return true;
}

Reconnector::Redirection Reconnector::Follow(TimePoint now) {
  Redirection to = *std::exchange(redirect_, std::nullopt);
  backoff_ = kFirstDelay;
  // Spread over the first backoff: not every client of the drained server in the same instant.
  std::uniform_real_distribution<double> spread(0, kFirstDelay);
  next_attempt_ = now + Clamped(spread(rng_));
  return to;
}

}  // namespace molt::kernel::client
