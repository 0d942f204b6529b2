// SPDX-License-Identifier: Apache-2.0
// HttpServer: Boost.Beast on the admin endpoint's own thread, every request bounded.
#include "kernel/src/admin/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <limits>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kernel/src/core/logger.h"

namespace molt::kernel::admin {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class Conn;

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
  std::unordered_map<Conn*, std::shared_ptr<Conn>> connections;
  std::uint16_t port = 0;
  std::thread thread;
};

namespace {

// One connection: requests read one at a time, each answered before the next is read.
class Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(HttpServer::Impl& server, tcp::socket socket)
      : server_(server), stream_(std::move(socket)), handler_timer_(*server.io) {
    beast::error_code ec;
    const tcp::endpoint ep = stream_.socket().remote_endpoint(ec);
    peer_ = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
    handler_timer_.cancel();
    server_.connections.erase(this);  // may destroy this: the last statement
  }

  void Read(bool first) {
    head_.emplace();
    head_->header_limit(server_.limits.max_header_bytes);
    // The body's limit is the plan's (OnHeader checks a Content-Length against it; a chunked
    // body meets it as it is read).
    head_->body_limit(std::numeric_limits<std::uint64_t>::max());
    // The first request gets the read timeout; a kept-alive connection waits up to the idle
    // timeout for the next one (then the read timeout covers the request itself: a close is
    // enough, the client reconnects).
    stream_.expires_after(first ? server_.limits.read_timeout : server_.limits.idle_timeout);
    http::async_read_header(
        stream_, buffer_, *head_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnHeader(ec); });
  }

 private:
  // A read failed: the connection ends, with an answer when the request was at fault. `limit`
  // is the body limit that applied.
  void ReadFailed(beast::error_code ec, std::uint64_t limit) {
    if (!upload_.empty()) {
      std::error_code e;
      std::filesystem::remove(std::exchange(upload_, std::string()), e);
    }
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        ec == http::error::partial_message) {
      Close();
    } else if (ec == http::error::header_limit) {
      Fail(431, "the request's header is over " + std::to_string(server_.limits.max_header_bytes) +
                    " bytes");
    } else if (ec == http::error::body_limit) {
      Fail(413, "the request's body is over " + std::to_string(limit) + " bytes");
    } else {
      Fail(400, "malformed request: " + ec.message());
    }
  }

  void OnHeader(beast::error_code ec) {
    if (ec) {
      ReadFailed(ec, server_.limits.max_body_bytes);
      return;
    }
    const auto& req = head_->get();
    if (static_cast<std::size_t>(std::distance(req.begin(), req.end())) >
        server_.limits.max_headers) {
      Fail(431, "the request has more than " + std::to_string(server_.limits.max_headers) +
                    " header fields");
      return;
    }
    keep_alive_ = req.keep_alive();
    request_head_ = HttpRequest();
    HttpRequest& r = request_head_;
    r.method = std::string(req.method_string());
    const std::string_view target = req.target();
    const std::size_t q = target.find('?');
    r.path = std::string(target.substr(0, q));
    r.query = q == std::string_view::npos ? "" : std::string(target.substr(q + 1));
    r.authorization = std::string(req[http::field::authorization]);
    r.peer = peer_;
    HttpPlan plan = server_.planner ? server_.planner(r) : HttpPlan();
    if (plan.refuse.has_value()) {
      keep_alive_ = false;
      answered_ = false;
      Respond(std::move(*plan.refuse), request_);
      return;
    }
    handler_timeout_ =
        plan.handler_timeout.count() > 0 ? plan.handler_timeout : server_.limits.handler_timeout;
    const bool expect_continue = beast::iequals(req[http::field::expect], "100-continue");
    const std::uint64_t limit =
        plan.body_file.empty() ? server_.limits.max_body_bytes : plan.max_body_bytes;
    if (const boost::optional<std::uint64_t> length = head_->content_length();
        length.has_value() && *length > limit) {
      ReadFailed(http::error::body_limit, limit);
      return;
    }
    if (!plan.body_file.empty()) {
      file_parser_.emplace(std::move(*head_));
      file_parser_->body_limit(limit);
      beast::error_code open_ec;
      file_parser_->get().body().open(plan.body_file.c_str(), beast::file_mode::write_new, open_ec);
      if (open_ec) {
        Fail(500, "cannot write the upload to " + plan.body_file + ": " + open_ec.message());
        return;
      }
      upload_ = plan.body_file;
      stream_.expires_after(plan.read_timeout.count() > 0 ? plan.read_timeout
                                                          : server_.limits.read_timeout);
    } else {
      parser_.emplace(std::move(*head_));
      parser_->body_limit(limit);
    }
    auto read_body = [self = shared_from_this(), limit] {
      auto done = [self, limit](beast::error_code e, std::size_t) { self->OnBody(e, limit); };
      if (self->file_parser_) {
        http::async_read(self->stream_, self->buffer_, *self->file_parser_, done);
      } else {
        http::async_read(self->stream_, self->buffer_, *self->parser_, done);
      }
    };
    if (expect_continue) {  // the client waits for this before it sends a large body
      continue_.emplace(http::status::continue_, 11);
      http::async_write(stream_, *continue_, [read_body](beast::error_code e, std::size_t) {
        if (!e) {
          read_body();
        }
      });
    } else {
      read_body();
    }
  }

  void OnBody(beast::error_code ec, std::uint64_t limit) {
    if (ec) {
      file_parser_.reset();
      ReadFailed(ec, limit);
      return;
    }
    HttpRequest r = std::move(request_head_);
    if (file_parser_) {
      file_parser_->get().body().file().close(ec);
      file_parser_.reset();
      r.body_file = std::exchange(upload_, std::string());
    } else {
      r.body = std::move(parser_->get().body());
      parser_.reset();
    }
    stream_.expires_never();
    answered_ = false;
    const std::uint64_t request = ++request_;
    handler_timer_.expires_after(handler_timeout_);
    handler_timer_.async_wait([self = shared_from_this(), request](beast::error_code e) {
      if (!e && self->request_ == request && !self->answered_) {
        self->Respond({503,
                       "text/plain; charset=utf-8",
                       "the kernel thread did not answer within " +
                           std::to_string(self->handler_timeout_.count()) + " ms\n",
                       {{"Retry-After", "1"}}},
                      request);
      }
    });
    std::weak_ptr<asio::io_context> io = server_.io;
    HttpReply reply = [weak = weak_from_this(), io, request](HttpResponse response) {
      if (std::shared_ptr<asio::io_context> alive = io.lock()) {
        asio::post(*alive, [weak, request, response = std::move(response)]() mutable {
          if (std::shared_ptr<Conn> self = weak.lock()) {
            self->Respond(std::move(response), request);
          }
        });
      }
    };
    try {
      server_.handler(std::move(r), std::move(reply));
    } catch (const std::exception& e) {
      Respond(
          {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n", {}},
          request);
    }
  }

  // A request that cannot be served: the answer, then the connection ends.
  void Fail(int status, std::string text) {
    keep_alive_ = false;
    answered_ = false;
    Respond({status, "text/plain; charset=utf-8", std::move(text) + "\n", {}}, request_);
  }

  void Respond(HttpResponse r, std::uint64_t request) {
    if (request != request_ || answered_ || !stream_.socket().is_open()) {
      return;  // answered already (the handler timed out), or the client left
    }
    answered_ = true;
    handler_timer_.cancel();
    response_.emplace(static_cast<http::status>(r.status), 11);
    response_->set(http::field::server, "moltd");
    response_->set(http::field::content_type, r.content_type);
    response_->set(http::field::cache_control, "no-store");
    for (auto& [name, value] : r.headers) {
      response_->set(name, value);
    }
    response_->body() = std::move(r.body);
    response_->keep_alive(keep_alive_);
    response_->prepare_payload();
    stream_.expires_after(server_.limits.write_timeout);
    http::async_write(stream_, *response_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec || !self->keep_alive_) {
                          self->Close();
                        } else {
                          self->Read(false);
                        }
                      });
  }

  HttpServer::Impl& server_;
  beast::tcp_stream stream_;
  asio::steady_timer handler_timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> head_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::request_parser<http::file_body>> file_parser_;
  std::optional<http::response<http::empty_body>> continue_;
  std::optional<http::response<http::string_body>> response_;
  HttpRequest request_head_;  // the request whose body is being read
  std::string upload_;        // the file an upload's body is streamed to, until it is whole
  std::chrono::milliseconds handler_timeout_{0};
  std::string peer_;
  std::uint64_t request_ = 0;
  bool answered_ = true;
  bool keep_alive_ = false;
};

}  // namespace

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
        auto conn = std::make_shared<Conn>(*self, std::move(socket));
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
  std::vector<std::shared_ptr<Conn>> open;
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
