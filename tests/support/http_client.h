// SPDX-License-Identifier: Apache-2.0
// File: tests/support/http_client.h
//
// A blocking HTTP/1.1 client for tests of the admin endpoint: real sockets on loopback, one
// request per connection ("Connection: close"), or raw bytes for the hostile cases.
#ifndef MOLT_TESTS_SUPPORT_HTTP_CLIENT_H_
#define MOLT_TESTS_SUPPORT_HTTP_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace molt::test {

struct HttpResult {
  int status = 0;       // 0: no response (refused, closed, timed out)
  std::string headers;  // the status line and header fields
  std::string body;
};

// Connects to 127.0.0.1:`port`; -1 on failure.
inline int HttpConnect(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads until the peer closes or `timeout_ms` passes without a byte.
inline std::string HttpReadAll(int fd, int timeout_ms = 10000) {
  std::string in;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) {
      break;
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      break;
    }
    in.append(buf, static_cast<std::size_t>(n));
  }
  return in;
}

inline HttpResult HttpParse(const std::string& in) {
  HttpResult r;
  const std::size_t end = in.find("\r\n\r\n");
  if (in.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) {
    return r;
  }
  r.status = std::atoi(in.c_str() + 9);
  r.headers = in.substr(0, end);
  r.body = in.substr(end + 4);
  return r;
}

// Sends `raw` as is and returns what came back before the close.
inline HttpResult HttpRaw(std::uint16_t port, const std::string& raw, int timeout_ms = 10000) {
  const int fd = HttpConnect(port);
  if (fd < 0) {
    return {};
  }
  ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  HttpResult r = HttpParse(HttpReadAll(fd, timeout_ms));
  ::close(fd);
  return r;
}

inline HttpResult HttpCall(std::uint16_t port, const std::string& method, const std::string& path,
                           const std::string& token = "", const std::string& body = "") {
  std::string raw = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!token.empty()) {
    raw += "Authorization: Bearer " + token + "\r\n";
  }
  raw += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return HttpRaw(port, raw);
}

}  // namespace molt::test

#endif  // MOLT_TESTS_SUPPORT_HTTP_CLIENT_H_
