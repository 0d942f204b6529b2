// SPDX-License-Identifier: Apache-2.0
// AdminClient: HTTP/1.1 over Beast, one request per connection.
#include "hosts/molt/admin_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/system/system_error.hpp>
#include <fstream>
#include <vector>

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

namespace {

// Reads the answer to a request written on `stream`.
HttpAnswer ReadAnswer(beast::tcp_stream& stream) {
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  http::read(stream, buffer, parser);
  beast::error_code ec;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  return HttpAnswer{static_cast<int>(parser.get().result_int()), parser.get().body()};
}

// Why a request got no answer, in the system's words (Boost's what() also names the source line
// that threw, which helps no operator).
Status Unreachable(const std::string& server, const std::exception& e) {
  const auto* system = dynamic_cast<const boost::system::system_error*>(&e);
  return Status::IoError("cannot reach moltd at " + server + " (" +
                         (system != nullptr ? system->code().message() : std::string(e.what())) +
                         "): is it running, and is --server its admin address?");
}

}  // namespace

Result<HttpAnswer> AdminClient::Upload(
    const std::string& target, const std::string& path,
    const std::function<void(std::uint64_t, std::uint64_t)>& progress,
    std::chrono::seconds timeout) const {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound("cannot read \"" + path + "\"");
  }
  in.seekg(0, std::ios::end);
  const auto total = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  try {
    asio::io_context io;
    asio::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    stream.connect(resolver.resolve(host_, port_));
    http::request<http::buffer_body> req(http::verb::post, target, 11);
    req.set(http::field::host, host_);
    req.set(http::field::user_agent, "molt");
    req.set(http::field::content_type, "application/octet-stream");
    req.set(http::field::authorization, "Bearer " + token_);
    req.content_length(total);
    req.body().data = nullptr;
    req.body().more = true;
    http::request_serializer<http::buffer_body> sr(req);
    http::write_header(stream, sr);
    std::vector<char> chunk(1 << 20);
    std::uint64_t sent = 0;
    while (sent < total) {
      in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      const auto n = static_cast<std::size_t>(in.gcount());
      if (n == 0) {
        return Status::IoError("\"" + path + "\" was cut short while it was sent");
      }
      sent += n;
      req.body().data = chunk.data();
      req.body().size = n;
      req.body().more = sent < total;
      beast::error_code ec;
      http::write(stream, sr, ec);
      if (ec && ec != http::error::need_buffer) {
        // moltd may answer (413, 401) and close before the whole body is in: read why.
        try {
          return ReadAnswer(stream);
        } catch (const std::exception&) {
          throw beast::system_error(ec);
        }
      }
      if (progress) {
        progress(sent, total);
      }
    }
    return ReadAnswer(stream);
  } catch (const std::exception& e) {
    return Unreachable(server_, e);
  }
}

Result<HttpAnswer> AdminClient::Call(const std::string& method, const std::string& target,
                                     std::chrono::seconds timeout, const std::string& body) const {
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
    if (!body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
    }
    req.prepare_payload();
    http::write(stream, req);
    return ReadAnswer(stream);
  } catch (const std::exception& e) {
    return Unreachable(server_, e);
  }
}

}  // namespace molt::cli
