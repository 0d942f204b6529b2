// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/admin_client.h
//
// AdminClient: the molt CLI's way to a moltd admin endpoint (docs/operations.md): blocking HTTP/1.1
// requests, one per connection, with the admin token as a bearer, each bounded by a deadline.
#ifndef MOLT_HOSTS_MOLT_ADMIN_CLIENT_H_
#define MOLT_HOSTS_MOLT_ADMIN_CLIENT_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace molt::cli {

using kernel::Result;
using kernel::Status;

struct HttpAnswer {
  int status = 0;
  std::string body;
};

class AdminClient {
 public:
  // `server` is "http://HOST:PORT" (the default port 7778 when none is given).
  static Result<AdminClient> Connect(const std::string& server, std::string token);

  // One request (`body`, when not empty, sent as JSON); `timeout` bounds it whole. An answer
  // that is not 2xx is still an answer.
  Result<HttpAnswer> Call(const std::string& method, const std::string& target,
                          std::chrono::seconds timeout = std::chrono::seconds(30),
                          const std::string& body = "") const;
  // POSTs the file at `path` as the body, a chunk at a time; `progress` (may be null) hears the
  // bytes sent so far and the total after each chunk.
  Result<HttpAnswer> Upload(const std::string& target, const std::string& path,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress,
                            std::chrono::seconds timeout) const;

  const std::string& server() const { return server_; }

 private:
  std::string server_;
  std::string host_;
  std::string port_;
  std::string token_;
};

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_ADMIN_CLIENT_H_
