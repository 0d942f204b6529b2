// SPDX-License-Identifier: Apache-2.0
// HttpConnection: one connection's requests, read, bounded, planned, handled and answered
// (http_connection.h).
#include "kernel/src/admin/http_connection.h"

#include <boost/asio/post.hpp>
#include <filesystem>
#include <limits>
#include <utility>

namespace molt::kernel::admin {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

}  // namespace

HttpConnection::HttpConnection(Server server, tcp::socket socket)
    : server_(std::move(server)),
      stream_(std::move(socket)),
      handler_timer_(stream_.get_executor()) {
  beast::error_code ec;
  const tcp::endpoint ep = stream_.socket().remote_endpoint(ec);
  peer_ = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
}

void HttpConnection::Close() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.socket().close(ec);
  handler_timer_.cancel();
  server_.closed(this);  // may destroy this: the last statement
}

void HttpConnection::Read(bool first) {
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

void HttpConnection::ReadFailed(beast::error_code ec, std::uint64_t limit) {
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

HttpRequest HttpConnection::Head() const {
  const auto& req = head_->get();
  HttpRequest r;
  r.method = std::string(req.method_string());
  const std::string_view target = req.target();
  const std::size_t q = target.find('?');
  r.path = std::string(target.substr(0, q));
  r.query = q == std::string_view::npos ? "" : std::string(target.substr(q + 1));
  r.authorization = std::string(req[http::field::authorization]);
  r.peer = peer_;
  return r;
}

void HttpConnection::OnHeader(beast::error_code ec) {
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
  request_head_ = Head();
  HttpPlan plan = server_.planner ? server_.planner(request_head_) : HttpPlan();
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
  ReadBody(plan, limit, expect_continue);
}

void HttpConnection::ReadBody(const HttpPlan& plan, std::uint64_t limit, bool expect_continue) {
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

void HttpConnection::OnBody(beast::error_code ec, std::uint64_t limit) {
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
  HttpReply reply = [weak = weak_from_this(), io = server_.io, request](HttpResponse response) {
    if (std::shared_ptr<asio::io_context> alive = io.lock()) {
      asio::post(*alive, [weak, request, response = std::move(response)]() mutable {
        if (std::shared_ptr<HttpConnection> self = weak.lock()) {
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

void HttpConnection::Fail(int status, std::string text) {
  keep_alive_ = false;
  answered_ = false;
  Respond({status, "text/plain; charset=utf-8", std::move(text) + "\n", {}}, request_);
}

void HttpConnection::Respond(HttpResponse r, std::uint64_t request) {
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

}  // namespace molt::kernel::admin
