// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/relay.cc
//
// Relay: the poll loop, the table of clients, the reads, the model's verdicts queued and the
// sends.
#include "hosts/molt-relay/relay.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <iostream>
#include <optional>
#include <utility>

namespace molt::relay {
namespace {

// Datagrams read from one socket per turn, so that one busy client cannot starve the others or
// the sends due.
constexpr int kBurst = 64;

// Milliseconds for poll() to wait until `due` (rounded up, so it never wakes early and spins);
// -1 for no deadline.
int TimeoutTo(std::optional<Relay::Clock::time_point> due, Relay::Clock::time_point now) {
  if (!due) {
    return -1;
  }
  if (*due <= now) {
    return 0;
  }
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*due - now).count();
  return static_cast<int>(std::min<long long>(ms, INT_MAX));
}

}  // namespace

std::variant<std::unique_ptr<Relay>, std::string> Relay::Open(const RelayOptions& options) {
  std::variant<SocketAddress, std::string> to = SocketAddress::Resolve(options.to, false);
  if (const std::string* error = std::get_if<std::string>(&to)) {
    return "--to: " + *error;
  }
  std::variant<SocketAddress, std::string> at = SocketAddress::Resolve(options.listen, true);
  if (const std::string* error = std::get_if<std::string>(&at)) {
    return "--listen: " + *error;
  }
  std::variant<UdpSocket, std::string> listen = UdpSocket::Bind(std::get<SocketAddress>(at));
  if (const std::string* error = std::get_if<std::string>(&listen)) {
    return "--listen: " + *error;
  }
  int wake[2];
  if (::pipe2(wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    return std::string("cannot make the wake-up pipe: ") + std::strerror(errno);
  }
  return std::unique_ptr<Relay>(new Relay(options, std::get<SocketAddress>(to),
                                          std::move(std::get<UdpSocket>(listen)), wake[0],
                                          wake[1]));
}

Relay::Relay(const RelayOptions& options, SocketAddress to, UdpSocket listen, int wake_read,
             int wake_write)
    : options_(options),
      to_(to),
      listen_(std::move(listen)),
      wake_read_(wake_read),
      wake_write_(wake_write),
      to_server_model_(options.impairment, options.seed),
      to_client_model_(options.impairment, options.seed ^ kToClientSeedMix),
      buffer_(UdpSocket::kMaxDatagram + 1) {}

Relay::~Relay() {
  ::close(wake_read_);
  ::close(wake_write_);
}

void Relay::Stop() const noexcept {
  const char byte = 0;
  if (::write(wake_write_, &byte, 1) < 0) {
    // The pipe is full: a wake-up is already waiting.
  }
}

RelayStats Relay::Snapshot() const {
  std::lock_guard<std::mutex> lock(published_mutex_);
  return published_;
}

RelayStats Relay::Run() {
  const Clock::time_point start = Clock::now();
  std::optional<Clock::time_point> end;
  if (options_.duration.count() > 0) {
    end = start + options_.duration;
  }
  std::vector<pollfd> fds;
  std::vector<std::pair<const SocketAddress*, Client*>> polled;  // fds[2 + i] is polled[i]'s
  for (;;) {
    Clock::time_point now = Clock::now();
    SendDue(now);
    Publish();
    if (end && now >= *end) {
      break;
    }
    std::optional<Clock::time_point> wake = queue_.NextDue();
    if (end && (!wake || *end < *wake)) {
      wake = end;
    }
    fds.assign({pollfd{wake_read_, POLLIN, 0}, pollfd{listen_.fd(), POLLIN, 0}});
    polled.clear();
    for (auto& [address, client] : clients_) {
      fds.push_back(pollfd{client.upstream.fd(), POLLIN, 0});
      polled.emplace_back(&address, &client);
    }
    const int ready = ::poll(fds.data(), fds.size(), TimeoutTo(wake, now));
    if (ready < 0 && errno != EINTR) {
      std::cerr << "molt-relay: poll: " << std::strerror(errno) << "\n";
      break;
    }
    if (ready <= 0) {
      continue;
    }
    if (fds[0].revents != 0) {
      break;  // Stop()
    }
    now = Clock::now();
    if (fds[1].revents != 0) {
      ReadClients(now);
    }
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if (fds[2 + i].revents != 0) {
        ReadServer(*polled[i].first, *polled[i].second, now);
      }
    }
  }
  Publish();
  return Snapshot();
}

void Relay::ReadClients(Clock::time_point now) {
  for (int i = 0; i < kBurst; ++i) {
    SocketAddress from;
    const ssize_t n = listen_.ReceiveFrom(buffer_.data(), buffer_.size(), from);
    if (n < 0) {
      return;
    }
    DirectionStats& counts = stats_.to_server;
    ++counts.in;
    counts.bytes_in += static_cast<std::uint64_t>(n);
    Client* client = FindOrAddClient(from);
    if (client == nullptr) {
      ++counts.send_errors;
      continue;
    }
    ++client->received;
    if (options_.rebind_after > 0 && client->received > 1 &&
        (client->received - 1) % options_.rebind_after == 0) {
      Rebind(*client);
    }
    Impair(Direction::kToServer, from, buffer_.data(), static_cast<std::size_t>(n), now);
  }
}

void Relay::ReadServer(const SocketAddress& address, Client& client, Clock::time_point now) {
  for (int i = 0; i < kBurst; ++i) {
    SocketAddress from;
    const ssize_t n = client.upstream.ReceiveFrom(buffer_.data(), buffer_.size(), from);
    if (n < 0) {
      return;
    }
    ++stats_.to_client.in;
    stats_.to_client.bytes_in += static_cast<std::uint64_t>(n);
    Impair(Direction::kToClient, address, buffer_.data(), static_cast<std::size_t>(n), now);
  }
}

Relay::Client* Relay::FindOrAddClient(const SocketAddress& address) {
  if (auto found = clients_.find(address); found != clients_.end()) {
    return &found->second;
  }
  std::variant<UdpSocket, std::string> upstream = UdpSocket::BindAny(to_.family());
  if (const std::string* error = std::get_if<std::string>(&upstream)) {
    std::cerr << "molt-relay: client " << address.ToString() << ": " << *error << "\n";
    return nullptr;
  }
  ++stats_.clients;
  Client& client = clients_[address];
  client.upstream = std::move(std::get<UdpSocket>(upstream));
  return &client;
}

void Relay::Rebind(Client& client) {
  std::variant<UdpSocket, std::string> fresh = UdpSocket::BindAny(to_.family());
  if (const std::string* error = std::get_if<std::string>(&fresh)) {
    std::cerr << "molt-relay: rebind: " << *error << "\n";
    return;
  }
  client.upstream = std::move(std::get<UdpSocket>(fresh));  // the old one closes after
  ++stats_.rebinds;
}

void Relay::Impair(Direction direction, const SocketAddress& client, const std::uint8_t* data,
                   std::size_t size, Clock::time_point now) {
  DirectionStats& counts = stats(direction);
  const Verdict verdict =
      (direction == Direction::kToServer ? to_server_model_ : to_client_model_).Next();
  if (verdict.dropped()) {
    ++counts.dropped;
    return;
  }
  if (verdict.copies == 2) {
    ++counts.duplicated;
  }
  for (int i = 0; i < verdict.copies; ++i) {
    if (verdict.copy[i].reordered) {
      ++counts.reordered;
    }
    queue_.Push(now + verdict.copy[i].delay,
                Datagram{direction, client, std::vector<std::uint8_t>(data, data + size)});
  }
}

void Relay::SendDue(Clock::time_point now) {
  while (std::optional<Datagram> datagram = queue_.PopDue(now)) {
    DirectionStats& counts = stats(datagram->direction);
    const std::vector<std::uint8_t>& bytes = datagram->bytes;
    bool sent = false;
    if (datagram->direction == Direction::kToClient) {
      sent = listen_.SendTo(bytes.data(), bytes.size(), datagram->client);
    } else if (auto client = clients_.find(datagram->client); client != clients_.end()) {
      sent = client->second.upstream.SendTo(bytes.data(), bytes.size(), to_);
    }
    if (sent) {
      ++counts.out;
      counts.bytes_out += bytes.size();
    } else {
      ++counts.send_errors;
    }
  }
}

void Relay::Publish() {
  stats_.to_server.pending = queue_.size(Direction::kToServer);
  stats_.to_client.pending = queue_.size(Direction::kToClient);
  std::lock_guard<std::mutex> lock(published_mutex_);
  published_ = stats_;
}

}  // namespace molt::relay
