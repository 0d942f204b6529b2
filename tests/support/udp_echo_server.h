// SPDX-License-Identifier: Apache-2.0
// File: tests/support/udp_echo_server.h
//
// UdpEchoServer: a UDP server on loopback, on a thread of its own, that sends every datagram back
// to where it came from and records what it got and from which port. The test behind molt-relay
// (tests/hosts/molt-relay) reads the record: which client ports it saw, in what order.
#ifndef MOLT_TESTS_SUPPORT_UDP_ECHO_SERVER_H_
#define MOLT_TESTS_SUPPORT_UDP_ECHO_SERVER_H_

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/support/udp_peer.h"

namespace molt::test {

class UdpEchoServer {
 public:
  // Serves on 127.0.0.1 (AF_INET) or ::1 (AF_INET6), an ephemeral port, until destroyed.
  explicit UdpEchoServer(int family = AF_INET) : socket_(family) {
    if (::pipe2(stop_, O_CLOEXEC) != 0 || !socket_.is_open()) {
      return;
    }
    thread_ = std::thread([this] { Serve(); });
  }
  ~UdpEchoServer() {
    if (thread_.joinable()) {
      const char byte = 0;
      if (::write(stop_[1], &byte, 1) < 0) {
      }
      thread_.join();
    }
    ::close(stop_[0]);
    ::close(stop_[1]);
  }
  UdpEchoServer(const UdpEchoServer&) = delete;
  UdpEchoServer& operator=(const UdpEchoServer&) = delete;

  bool is_open() const { return thread_.joinable(); }
  std::uint16_t port() const { return socket_.port(); }
  std::string Host() const { return socket_.Host(); }

  // What arrived so far, in order.
  std::vector<UdpDatagram> received() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }
  std::size_t count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_.size();
  }
  // Waits until at least `n` datagrams arrived (true), or `limit` passed (false).
  bool WaitForCount(std::size_t n, std::chrono::seconds limit = std::chrono::seconds(10)) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (count() < n) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

 private:
  void Serve() {
    pollfd fds[2] = {{socket_.fd(), POLLIN, 0}, {stop_[0], POLLIN, 0}};
    for (;;) {
      if (::poll(fds, 2, -1) < 0 || fds[1].revents != 0) {
        return;
      }
      sockaddr_storage from{};
      socklen_t length = sizeof from;
      std::vector<char> buffer(65536);
      const ssize_t n = ::recvfrom(socket_.fd(), buffer.data(), buffer.size(), 0,
                                   reinterpret_cast<sockaddr*>(&from), &length);
      if (n < 0) {
        continue;
      }
      const std::uint16_t port =
          ntohs(from.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&from)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&from)->sin_port);
      {
        // Recorded before the echo leaves: a test that got the echo finds it in the record.
        std::lock_guard<std::mutex> lock(mutex_);
        received_.push_back(
            UdpDatagram{std::string(buffer.data(), static_cast<std::size_t>(n)), port});
      }
      ::sendto(socket_.fd(), buffer.data(), static_cast<std::size_t>(n), 0,
               reinterpret_cast<sockaddr*>(&from), length);
    }
  }

  UdpPeer socket_;
  int stop_[2] = {-1, -1};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<UdpDatagram> received_;  // GUARDED_BY(mutex_)
};

}  // namespace molt::test

#endif  // MOLT_TESTS_SUPPORT_UDP_ECHO_SERVER_H_
