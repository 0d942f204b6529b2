// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/http_connection.h
//
// HttpConnection: one connection of the admin endpoint (http_server.h), on the server's thread:
// requests read one at a time, each answered before the next is read. A request's head is read
// within the header bounds, planned (HttpPlanner: refused, streamed to a file, or read into
// memory), its body read within the plan's bounds (a "100-continue" answered first), and then
// handed to the handler, which answers through an HttpReply from any thread; no answer within
// the handler timeout is answered 503, and the late one dropped. A malformed or oversized request
// is answered (400, 413, 431) and the connection ends; so does a client that is too slow.
//
//   auto conn = std::make_shared<HttpConnection>(
//       HttpConnection::Server{io, limits, handler, planner, [&](HttpConnection* c) { ... }},
//       std::move(socket));
//   conn->Read(/*first=*/true);
//
// Included by http_server.cc and its test only (it brings Beast).
//
// Thread safety: every member on the server's thread (the io_context's); the replies it hands out
// are safe from any thread, also after the connection or the server is gone.
#ifndef MOLT_KERNEL_ADMIN_HTTP_CONNECTION_H_
#define MOLT_KERNEL_ADMIN_HTTP_CONNECTION_H_

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kernel/src/admin/http_message.h"

namespace molt::kernel::admin {

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  // What a connection uses of its server, which outlives it.
  struct Server {
    std::weak_ptr<boost::asio::io_context> io;  // where replies are posted; gone: dropped
    const HttpLimits& limits;
    const HttpHandler& handler;
    const HttpPlanner& planner;  // may be empty: every request gets the default plan
    // The connection closed: the server lets it go (which may destroy it).
    std::function<void(HttpConnection*)> closed;
  };

  HttpConnection(Server server, boost::asio::ip::tcp::socket socket);
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Reads the next request: the first within the read timeout, a kept-alive connection's next
  // within the idle timeout.
  void Read(bool first);
  // Closes the socket and tells the server (Server::closed: may destroy this).
  void Close();

 private:
  // A read failed: the connection ends, with an answer when the request was at fault. `limit`
  // is the body limit that applied.
  void ReadFailed(boost::beast::error_code ec, std::uint64_t limit);
  void OnHeader(boost::beast::error_code ec);
  // The request's head as the planner and the handler see it.
  HttpRequest Head() const;
  // Reads the body as `plan` says (a "100-continue" answered first).
  void ReadBody(const HttpPlan& plan, std::uint64_t limit, bool expect_continue);
  void OnBody(boost::beast::error_code ec, std::uint64_t limit);
  // A request that cannot be served: the answer, then the connection ends.
  void Fail(int status, std::string text);
  void Respond(HttpResponse r, std::uint64_t request);

  Server server_;
  boost::beast::tcp_stream stream_;
  boost::asio::steady_timer handler_timer_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::empty_body>> head_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::file_body>> file_parser_;
  std::optional<boost::beast::http::response<boost::beast::http::empty_body>> continue_;
  std::optional<boost::beast::http::response<boost::beast::http::string_body>> response_;
  HttpRequest request_head_;  // the request whose body is being read
  std::string upload_;        // the file an upload's body is streamed to, until it is whole
  std::chrono::milliseconds handler_timeout_{0};
  std::string peer_;
  std::uint64_t request_ = 0;
  bool answered_ = true;
  bool keep_alive_ = false;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_HTTP_CONNECTION_H_
