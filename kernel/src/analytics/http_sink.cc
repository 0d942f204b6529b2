// SPDX-License-Identifier: Apache-2.0
// The analytics HTTP sink: one POST on a private io_context, so the timeout covers the
// connection, the request and the answer alike.
#include "kernel/src/analytics/http_sink.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <string>

namespace molt::kernel::analytics {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

Status BadUrl(std::string_view url, const char* why) {
  return Status::InvalidArgument("analytics.http_url \"" + std::string(url) + "\" " + why +
                                 ": write http://HOST[:PORT][/PATH]");
}

}  // namespace

Result<HttpEndpoint> ParseHttpUrl(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind("https://", 0) == 0) {
    return Status::InvalidArgument(
        "analytics.http_url \"" + std::string(url) +
        "\": moltd posts plain http only; run a TLS proxy beside it (nginx, Vector) and name "
        "its http:// address");
  }
  if (url.rfind(kScheme, 0) != 0) {
    return BadUrl(url, "is not an http:// URL");
  }
  HttpEndpoint e;
  e.url = std::string(url);
  std::string_view rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  e.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    return BadUrl(url, "carries credentials, which moltd does not send");
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return BadUrl(url, "has an unclosed [");
    }
    e.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return BadUrl(url, "has text after its ]");
      }
      port = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    e.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
    }
  }
  if (e.host.empty()) {
    return BadUrl(url, "names no host");
  }
  if (port.empty()) {
    e.port = "80";
  } else {
    for (char c : port) {
      if (c < '0' || c > '9') {
        return BadUrl(url, "has a port that is not a number");
      }
    }
    if (port.size() > 5 || std::stoi(std::string(port)) == 0 ||
        std::stoi(std::string(port)) > 65535) {
      return BadUrl(url, "has a port outside 1 to 65535");
    }
    e.port = std::string(port);
  }
  return e;
}

Status PostLines(const HttpEndpoint& to, const std::string& body,
                 std::chrono::milliseconds timeout) {
  asio::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  http::request<http::string_body> req(http::verb::post, to.target, 11);
  req.set(http::field::host, to.host);
  req.set(http::field::user_agent, "moltd analytics");
  req.set(http::field::content_type, "application/x-ndjson");
  req.body() = body;
  req.prepare_payload();
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  beast::error_code failure;
  const char* stage = "resolve";
  // Each step's handler starts the next; the first error ends the chain. The expiry covers all.
  auto fail = [&](const beast::error_code& ec) {
    failure = ec;
    return;
  };
  stream.expires_after(timeout);
  resolver.async_resolve(
      to.host, to.port, [&](const beast::error_code& ec, tcp::resolver::results_type results) {
        if (ec) {
          return fail(ec);
        }
        stage = "connect";
        stream.async_connect(results, [&](const beast::error_code& ec, const tcp::endpoint&) {
          if (ec) {
            return fail(ec);
          }
          stage = "send";
          http::async_write(stream, req, [&](const beast::error_code& ec, std::size_t) {
            if (ec) {
              return fail(ec);
            }
            stage = "read the answer";
            http::async_read(stream, buffer, res, [&](const beast::error_code& ec, std::size_t) {
              if (ec) {
                return fail(ec);
              }
              beast::error_code ignored;
              stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
            });
          });
        });
      });
  io.run();
  if (failure == beast::error::timeout) {
    return Status::TimedOut(to.url + ": no answer within " + std::to_string(timeout.count()) +
                            " ms (at " + stage + ")");
  }
  if (failure) {
    return Status::IoError(to.url + ": cannot " + stage + ": " + failure.message());
  }
  const unsigned code = res.result_int();
  if (code >= 200 && code < 300) {
    return Status::Ok();
  }
  std::string answer = res.body().substr(0, 200);
  for (char& c : answer) {
    if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  const std::string what = to.url + " answered " + std::to_string(code) +
                           (answer.empty() ? std::string() : ": " + answer);
  if (code >= 400 && code < 500 && code != 408 && code != 429) {
    return Status::Rejected(what);
  }
  return Status::IoError(what);
}

}  // namespace molt::kernel::analytics
