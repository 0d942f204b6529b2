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
// Bounds (HttpLimits, http_message.h): header bytes and count (431), body bytes (413), the time a
// request may take to arrive (a slow client is cut), the time a response may take to leave, and
// the connections held at once (more are closed at accept). A malformed request gets 400 and the
// connection ends. Each connection is an HttpConnection (http_connection.h).
//
// Thread safety: Start and the destructor on one thread; `reply` is safe from any thread, also
// after the server is gone (the answer is dropped).
#ifndef MOLT_KERNEL_ADMIN_HTTP_SERVER_H_
#define MOLT_KERNEL_ADMIN_HTTP_SERVER_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kernel/src/admin/http_message.h"

namespace molt::kernel::admin {

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
