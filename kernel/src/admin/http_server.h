// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/http_server.h
//
// HttpServer: the admin endpoint's HTTP/1.1 server (Boost.Beast), on a thread of its own so that
// nothing an admin client does (a slow or hostile one, a big scrape) reaches the kernel thread
// unasked: requests are read, bounded and parsed here, and only then handed to `handler`, which
// answers through `reply` from any thread (the admin API posts kernel work to the kernel loop and
// replies from there). A request the handler does not answer within `handler_timeout` gets
// 503 naming the wait: /healthz is a watchdog because of it.
//
//   auto server = HttpServer::Start("127.0.0.1", 7778, limits,
//       [](HttpRequest req, HttpReply reply) { reply({200, "text/plain", "ok\n"}); });
//
// Bounds (HttpLimits): header bytes and count (431), body bytes (413), the time a request may take
// to arrive (a slow client is cut), the time a response may take to leave, and the connections
// held at once (more are closed at accept). A malformed request gets 400 and the connection ends.
//
// Thread safety: Start and the destructor on one thread; `reply` is safe from any thread, also
// after the server is gone (the answer is dropped).
#ifndef MOLT_KERNEL_ADMIN_HTTP_SERVER_H_
#define MOLT_KERNEL_ADMIN_HTTP_SERVER_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace molt::kernel::admin {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without its query, percent-decoding not applied
  std::string query;   // after '?', "" when none
  std::string authorization;
  std::string body;
  std::string body_file;  // an upload's body, streamed to this file (HttpPlan); the handler's
  std::string peer;       // "address:port"
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra header fields
};

using HttpReply = std::function<void(HttpResponse)>;
using HttpHandler = std::function<void(HttpRequest, HttpReply)>;

// What to do with one request, decided from its head (no body read yet): by default its body is
// read into HttpRequest::body within max_body_bytes. An upload streams it into `body_file`
// instead (at most `max_body_bytes`, within `read_timeout`; the file is removed when the body
// does not arrive whole); `refuse` answers at once without reading the body (the connection then
// ends); `handler_timeout` replaces the limits' for a handler that answers later by design (a
// call that waits for a swap).
struct HttpPlan {
  std::string body_file;
  std::uint64_t max_body_bytes = 0;
  std::chrono::milliseconds read_timeout{0};
  std::optional<HttpResponse> refuse;
  std::chrono::milliseconds handler_timeout{0};  // 0: HttpLimits::handler_timeout
};
// Sees every request's head (method, path, query, authorization, peer; no body).
using HttpPlanner = std::function<HttpPlan(const HttpRequest& head)>;

struct HttpLimits {
  std::uint32_t max_header_bytes = 8 * 1024;
  std::uint32_t max_headers = 64;
  std::uint64_t max_body_bytes = 64 * 1024;
  std::chrono::milliseconds read_timeout{10000};  // a whole request, from its first byte
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::milliseconds idle_timeout{30000};  // a kept-alive connection between requests
  std::chrono::milliseconds handler_timeout{2000};
  std::size_t max_connections = 64;
};

class HttpServer {
 public:
  // Binds `address:port` (port 0 picks one) and serves on a new thread. Fails naming the address
  // when it cannot be bound.
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& address, std::uint16_t port,
                                                   HttpLimits limits, HttpHandler handler,
                                                   HttpPlanner planner = nullptr);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  // Closes the listener and every connection, and joins the thread.
  ~HttpServer();

  std::uint16_t port() const;

  struct Impl;

 private:
  explicit HttpServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// The value of `key` in a query string ("a=1&b=2"), percent-decoded; "" when absent.
std::string QueryValue(std::string_view query, std::string_view key);

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_HTTP_SERVER_H_
