// SPDX-License-Identifier: Apache-2.0
// File: tests/support/http_endpoint.h
//
// Endpoint: an HTTP server on loopback for the tests of what moltd sends out (the analytics
// HTTP sink): plain sockets on a thread of its own, one request a connection, each answered with
// the next status of a script (200 once it runs out), or never answered at all (`silent`).
//
//   Endpoint endpoint({503});            // the first request gets a 503, the rest 200
//   ... moltd posts to endpoint.url() ...
//   endpoint.requests()[0].body         // what came
#ifndef MOLT_TESTS_SUPPORT_HTTP_ENDPOINT_H_
#define MOLT_TESTS_SUPPORT_HTTP_ENDPOINT_H_

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace molt::test {

// One request as the endpoint read it.
struct Request {
  std::string head;  // the request line and headers
  std::string body;
};

// A loopback HTTP endpoint on a thread of its own: each request gets the next status of
// `script` (200 once it runs out); `silent` reads requests and never answers.
class Endpoint {
 public:
  explicit Endpoint(std::deque<int> script, bool silent = false)
      : script_(std::move(script)), silent_(silent) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~Endpoint() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url(const std::string& path = "/ingest") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::vector<Request> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  // Waits up to `limit` for `n` requests; whether they came.
  bool WaitFor(std::size_t n, std::chrono::seconds limit = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (requests().size() < n) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

 private:
  void Serve() {
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) {
        return;
      }
      Request r;
      std::string in;
      char buf[4096];
      std::size_t want = std::string::npos;
      while (want == std::string::npos || in.size() < want) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) {
          break;
        }
        in.append(buf, static_cast<std::size_t>(n));
        const std::size_t end = in.find("\r\n\r\n");
        if (want == std::string::npos && end != std::string::npos) {
          const std::size_t cl = in.find("Content-Length: ");
          want = end + 4 + (cl < end ? std::stoul(in.substr(cl + 16)) : 0);
        }
      }
      const std::size_t end = in.find("\r\n\r\n");
      r.head = in.substr(0, end);
      r.body = end == std::string::npos ? std::string() : in.substr(end + 4);
      int status = 200;
      {
        std::lock_guard lock(mu_);
        requests_.push_back(r);
        if (!script_.empty()) {
          status = script_.front();
          script_.pop_front();
        }
      }
      if (!silent_) {
        const std::string answer = "HTTP/1.1 " + std::to_string(status) +
                                   " X\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope";
        (void)::write(c, answer.data(), answer.size());
      } else {
        ::read(c, buf, sizeof buf);  // until the client gives up
      }
      ::close(c);
    }
  }

  std::deque<int> script_;  // guarded by mu_
  const bool silent_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Request> requests_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace molt::test

#endif  // MOLT_TESTS_SUPPORT_HTTP_ENDPOINT_H_
