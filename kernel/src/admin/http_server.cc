// SPDX-License-Identifier: Apache-2.0
// HttpServer: Boost.Beast on the admin endpoint's own thread: the listener and its connections
// (http_connection.h), every request bounded.
#include "kernel/src/admin/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <cctype>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kernel/src/admin/http_connection.h"

namespace molt::kernel::admin {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

}  // namespace

struct HttpServer::Impl {
  Impl(HttpLimits l, HttpHandler h, HttpPlanner p)
      : io(std::make_shared<asio::io_context>(1)),
        limits(l),
        handler(std::move(h)),
        planner(std::move(p)) {}
  void Accept();
  // Closes the listener and every connection: run() returns once their handlers finished.
  void Shutdown();

  std::shared_ptr<asio::io_context> io;  // first: the sockets below are its objects
  tcp::acceptor acceptor{*io};
  HttpLimits limits;
  HttpHandler handler;
  HttpPlanner planner;
  // The open connections (on the server's thread). A connection leaves on its close; replies
  // hold it weakly, so one that comes after the close (or the server) is dropped.
  std::unordered_map<HttpConnection*, std::shared_ptr<HttpConnection>> connections;
  std::uint16_t port = 0;
  std::thread thread;
};

void HttpServer::Impl::Accept() {
  acceptor.async_accept([self = this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) {
      return;
    }
    if (!ec) {
      if (self->connections.size() >= self->limits.max_connections) {
        beast::error_code ignored;
        socket.close(ignored);  // full: the newcomer is closed, the connections held go on
      } else {
        auto conn = std::make_shared<HttpConnection>(
            HttpConnection::Server{self->io, self->limits, self->handler, self->planner,
                                   [self](HttpConnection* c) { self->connections.erase(c); }},
            std::move(socket));
        self->connections.emplace(conn.get(), conn);
        conn->Read(true);
      }
    }
    self->Accept();
  });
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& address,
                                                      std::uint16_t port, HttpLimits limits,
                                                      HttpHandler handler, HttpPlanner planner) {
  auto impl = std::make_shared<Impl>(limits, std::move(handler), std::move(planner));
  beast::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(address, ec);
  if (ec) {
    return Status::InvalidArgument("admin endpoint: \"" + address +
                                   "\" is not an IP address (use e.g. 127.0.0.1)");
  }
  const tcp::endpoint ep(ip, port);
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) {
    impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    impl->acceptor.bind(ep, ec);
  }
  if (!ec) {
    impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return Status::FailedPrecondition(
        "admin endpoint: cannot listen on " + address + ":" + std::to_string(port) + ": " +
        ec.message() +
        (ec == asio::error::address_in_use
             ? " (another moltd runs there? pass --admin ADDRESS:PORT, or --admin off)"
             : ""));
  }
  impl->port = impl->acceptor.local_endpoint().port();
  impl->Accept();
  impl->thread = std::thread([io = impl->io] { io->run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

void HttpServer::Impl::Shutdown() {
  beast::error_code ec;
  acceptor.close(ec);
  std::vector<std::shared_ptr<HttpConnection>> open;
  for (auto& [_, conn] : connections) {
    open.push_back(conn);
  }
  for (auto& conn : open) {
    conn->Close();
  }
}

HttpServer::~HttpServer() {
  asio::post(*impl_->io, [impl = impl_.get()] { impl->Shutdown(); });
  impl_->thread.join();  // run() returns once nothing is left to do
}

std::uint16_t HttpServer::port() const { return impl_->port; }

std::string QueryValue(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    if (pair.substr(0, eq) != key) {
      continue;
    }
    const std::string_view raw = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    std::string value;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '+') {
        value += ' ';
      } else if (raw[i] == '%' && i + 2 < raw.size() + 0 && std::isxdigit(raw[i + 1]) &&
                 std::isxdigit(raw[i + 2])) {
        value += static_cast<char>(std::stoi(std::string(raw.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        value += raw[i];
      }
    }
    return value;
  }
  return "";
}

}  // namespace molt::kernel::admin
