// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/swarm.cc
//
// Swarm: the phases of a run, and the one wait every phase sleeps in.
#include "hosts/molt-bot/swarm.h"

#include <poll.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <string>

namespace molt::bot {

void Swarm::WaitForClients(std::size_t count, double limit) {
  std::vector<pollfd> fds;
  double wait = limit;
  for (std::size_t i = 0; i < count; ++i) {
    molt_client* c = bots_[i]->handle();
    const double t = molt_client_timeout(c);
    if (t >= 0) {
      wait = std::min(wait, t);
    }
    const int fd = molt_client_socket(c);
    const std::int32_t events = molt_client_socket_events(c);
    if (fd >= 0 && events != 0) {
      fds.push_back({fd,
                     static_cast<short>(((events & MOLT_CLIENT_WAIT_READ) != 0 ? POLLIN : 0) |
                                        ((events & MOLT_CLIENT_WAIT_WRITE) != 0 ? POLLOUT : 0)),
                     0});
    }
  }
  ++wakeups_;
  if (wait <= 0) {
    return;
  }
  const auto ns = static_cast<long long>(std::min(wait, 3600.0) * 1e9);
  const timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  ::ppoll(fds.data(), fds.size(), &ts, nullptr);
}

int Swarm::Connect() {
  const molt_client_options client_options = options_.ClientOptions();
  const auto joining = Clock::now();
  const auto clients = static_cast<std::size_t>(options_.clients);
  bots_.reserve(clients);
  for (std::size_t i = 0; i < clients; ++i) {
    // Pace the connects at --join-rate, stepping the clients already connecting meanwhile.
    const auto due =
        joining + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(static_cast<double>(i) / options_.join_rate));
    while (Clock::now() < due) {
      WaitForClients(i, std::chrono::duration<double>(due - Clock::now()).count());
      for (std::size_t j = 0; j < i; ++j) {
        bots_[j]->Step();
      }
    }
    BotClient& b = *bots_.emplace_back(std::make_unique<BotClient>(totals_));
    if (!b.Create(client_options)) {
      std::cerr << "molt-bot: cannot create client " << i << "\n";
      return 1;
    }
    if (i == 0 && options_.controllers.has_value()) {
      // One client kernel per process: the first client runs them, the others are plain.
      if (!b.RunControllers(*options_.controllers)) {
        std::cerr << "molt-bot: --controllers " << *options_.controllers << ": " << b.last_error()
                  << "\n";
        return 2;
      }
    }
    const std::string user = options_.user_prefix + std::to_string(i);
    if (!b.Connect(options_.host, static_cast<std::uint16_t>(options_.port), user)) {
      std::cerr << "molt-bot: " << b.last_error() << "\n";
      return 1;
    }
  }
  return 0;
}

int Swarm::Join() {
  const auto join_deadline = Clock::now() + std::chrono::seconds(15);
  std::size_t settled = 0;
  while (settled < bots_.size() && Clock::now() < join_deadline) {
    settled = connected_ = 0;
    for (const std::unique_ptr<BotClient>& b : bots_) {
      b->Step();
      const std::int32_t s = b->state();
      connected_ += s == MOLT_CLIENT_CONNECTED;
      settled += s != MOLT_CLIENT_CONNECTING;
    }
    if (settled < bots_.size()) {
      WaitForClients(bots_.size(), 0.1);
    }
  }
  for (const std::unique_ptr<BotClient>& b : bots_) {
    if (!b->connected()) {
      continue;
    }
    std::optional<std::string> error =
        options_.udp ? b->JoinWalk()
                     : b->Join(options_.intents, options_.requests, options_.verify);
    if (error.has_value()) {
      std::cerr << "molt-bot: " << *error << "\n";
      return 2;
    }
  }
  std::cout << "molt-bot: " << connected_ << "/" << bots_.size() << " clients joined "
            << options_.Scheme() << options_.host << ":" << options_.port
            << (options_.ws ? "/" : "") << "\n";
  return 0;
}

std::size_t Swarm::Round(double dt) {
  std::size_t connected = 0;
  for (const std::unique_ptr<BotClient>& b : bots_) {
    if (!b->joined() || !b->connected()) {
      b->Step();
      continue;
    }
    ++connected;
    b->Owe(options_.rate, dt, options_.verify);
    b->SendOwed(options_.verify, options_.payload);
    b->Step();
  }
  return connected;
}

double Swarm::NextWait(Clock::time_point next_report, Clock::time_point end) const {
  double owed_most = 0;
  for (const std::unique_ptr<BotClient>& b : bots_) {
    owed_most = std::max(owed_most, b->owed());
  }
  double limit = std::chrono::duration<double>(std::min(next_report, end) - Clock::now()).count();
  if (options_.rate > 0 && options_.sends()) {
    limit = std::min(limit, (1 - owed_most) / options_.rate);
  }
  return std::max(limit, 0.0);
}

RunCost Swarm::Run(const volatile std::sig_atomic_t& stop) {
  const double cpu_at_start = CpuSeconds();
  const std::uint64_t wakeups_at_start = wakeups_;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(options_.duration));
  auto last = start;
  auto next_report = start + std::chrono::seconds(1);
  while (Clock::now() < end && stop == 0) {
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last).count();
    last = now;
    connected_ = Round(dt);
    if (now >= next_report) {
      next_report += std::chrono::seconds(1);
      const double t = std::chrono::duration<double>(now - start).count();
      std::cout << "[" << static_cast<int>(t + 0.5) << "s] "
                << Line(totals_, connected_, bots_.size())
                << (options_.udp ? "  " + WalkLine(totals_, DatagramLinks(), bots_.size()) : "")
                << std::endl;
    }
    WaitForClients(bots_.size(), NextWait(next_report, end));
  }
  RunCost cost;
  cost.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  cost.cpu_seconds = CpuSeconds() - cpu_at_start;
  cost.wakeups = wakeups_ - wakeups_at_start;
  return cost;
}

void Swarm::Drain() {
  const auto drain = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < drain && totals_.Outstanding()) {
    WaitForClients(bots_.size(), std::chrono::duration<double>(drain - Clock::now()).count());
    for (const std::unique_ptr<BotClient>& b : bots_) {
      b->Step();
    }
  }
}

std::size_t Swarm::DatagramLinks() const {
  return static_cast<std::size_t>(std::count_if(
      bots_.begin(), bots_.end(),
      [](const std::unique_ptr<BotClient>& b) { return b->connected() && b->DatagramLinkOpen(); }));
}

void Swarm::Close() {
  for (std::unique_ptr<BotClient>& b : bots_) {
    b->Disconnect();
    b.reset();
  }
  bots_.clear();
}

}  // namespace molt::bot
