// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/http_message.h
//
// The admin endpoint's HTTP messages and the bounds they are read within, as its handlers see
// them: a request (its body read, or streamed to a file), a response, the reply that answers it
// from any thread, and the plan a request's head gets before its body is read. Shared by the
// server (http_server.h), each connection (http_connection.h) and every route (route_table.h).
//
// Thread safety: plain values; an HttpReply is safe from any thread (http_server.h).
#ifndef MOLT_KERNEL_ADMIN_HTTP_MESSAGE_H_
#define MOLT_KERNEL_ADMIN_HTTP_MESSAGE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
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

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_HTTP_MESSAGE_H_
