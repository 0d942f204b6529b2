// SPDX-License-Identifier: Apache-2.0
// AdminClient: HTTP/1.1 over Beast, one request per connection.
#include "hosts/molt/admin_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace molt::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

Result<AdminClient> AdminClient::Connect(const std::string& server, std::string token) {
  constexpr std::string_view kScheme = "http://";
  if (server.rfind(kScheme, 0) != 0) {
    return Status::InvalidArgument("--server \"" + server +
                                   "\" is not an http:// address (the admin endpoint speaks plain "
                                   "HTTP on loopback: http://127.0.0.1:7778)");
  }
  std::string rest = server.substr(kScheme.size());
  while (!rest.empty() && rest.back() == '/') {
    rest.pop_back();
  }
  AdminClient c;
  c.server_ = server;
  c.token_ = std::move(token);
  const std::size_t colon = rest.rfind(':');
  const bool bracketed = !rest.empty() && rest.front() == '[';
  if (colon != std::string::npos && (!bracketed || rest.find(']') < colon)) {
    c.host_ = rest.substr(0, colon);
    c.port_ = rest.substr(colon + 1);
  } else {
    c.host_ = rest;
    c.port_ = "7778";
  }
  if (bracketed && c.host_.size() >= 2) {
    c.host_ = c.host_.substr(1, c.host_.size() - 2);
  }
  if (c.host_.empty() || c.port_.empty() || rest.find('/') != std::string::npos) {
    return Status::InvalidArgument("--server \"" + server + "\" is not http://HOST:PORT");
  }
  return c;
}

Result<HttpAnswer> AdminClient::Call(const std::string& method, const std::string& target,
                                     std::chrono::seconds timeout) const {
  try {
    asio::io_context io;
    asio::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    const auto endpoints = resolver.resolve(host_, port_);
    stream.connect(endpoints);
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, host_);
    req.set(http::field::user_agent, "molt");
    if (!token_.empty()) {
      req.set(http::field::authorization, "Bearer " + token_);
    }
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    http::read(stream, buffer, parser);
    beast::error_code ec;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    return HttpAnswer{static_cast<int>(parser.get().result_int()), parser.get().body()};
  } catch (const std::exception& e) {
    return Status::IoError("cannot reach moltd at " + server_ + " (" + e.what() +
                           "): is it running, and is --server its admin address?");
  }
}

}  // namespace molt::cli
