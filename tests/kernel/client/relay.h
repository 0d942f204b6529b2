// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/client/relay.h
//
// Relay: a TCP relay between a client and a server, on its own thread, that a test can cut:
// every relayed connection is closed at once (as a lost link would), and new connections are
// relayed again afterwards. Plain POSIX sockets and poll().
#ifndef MOLT_TESTS_CLIENT_RELAY_H_
#define MOLT_TESTS_CLIENT_RELAY_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace molt::test {

class Relay {
 public:
  explicit Relay(std::uint16_t target) : target_(target) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = Loopback(0);
    ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listen_, 64);
    socklen_t n = sizeof a;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &n);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;
  ~Relay() {
    stop_ = true;
    thread_.join();
    CloseCut();
    pairs_ = std::move(frozen_);
    CloseCut();
    ::close(listen_);
  }

  std::uint16_t port() const { return port_; }
  // Closes every relayed connection on the relay's next turn (within ~10 ms).
  void Cut() { cut_ = true; }
  // Stops relaying the current connections without closing them (a link that goes silent);
  // new connections are relayed as usual.
  void Freeze() { freeze_ = true; }
  int connections() const { return connections_; }

  static sockaddr_in Loopback(std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
  }

 private:
  void CloseCut() {
    for (auto& [a, b] : pairs_) {
      ::close(a);
      ::close(b);
    }
    pairs_.clear();
  }

  void Run() {
    while (!stop_) {
      if (cut_.exchange(false)) {
        CloseCut();
      }
      if (freeze_.exchange(false)) {
        frozen_.insert(frozen_.end(), pairs_.begin(), pairs_.end());
        pairs_.clear();
      }
      std::vector<pollfd> fds{{listen_, POLLIN, 0}};
      for (auto& [a, b] : pairs_) {
        fds.push_back({a, POLLIN, 0});
        fds.push_back({b, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 10) <= 0) {
        continue;
      }
      if (fds[0].revents & POLLIN) {
        const int client = ::accept(listen_, nullptr, nullptr);
        const int server = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in t = Loopback(target_);
        if (::connect(server, reinterpret_cast<sockaddr*>(&t), sizeof t) == 0) {
          pairs_.emplace_back(client, server);
          ++connections_;
        } else {
          ::close(client);
          ::close(server);
        }
      }
      for (std::size_t i = 0; i < pairs_.size(); ++i) {
        auto& [a, b] = pairs_[i];
        bool dead = false;
        for (auto [from, to, k] : {std::tuple{a, b, 1 + 2 * i}, std::tuple{b, a, 2 + 2 * i}}) {
          if (k < fds.size() && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
            char buf[65536];
            const ssize_t n = ::recv(from, buf, sizeof buf, 0);
            dead =
                dead || n <= 0 || ::send(to, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n;
          }
        }
        if (dead) {
          ::close(a);
          ::close(b);
          pairs_.erase(pairs_.begin() + static_cast<std::ptrdiff_t>(i));
          break;  // the poll set is stale now
        }
      }
    }
  }

  std::uint16_t target_;
  int listen_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> cut_{false};
  std::atomic<bool> freeze_{false};
  std::vector<std::pair<int, int>> frozen_;  // open, never serviced
  std::atomic<int> connections_{0};
  std::vector<std::pair<int, int>> pairs_;  // (client side, server side); the relay thread's
  std::thread thread_;
};

}  // namespace molt::test

#endif  // MOLT_TESTS_CLIENT_RELAY_H_
