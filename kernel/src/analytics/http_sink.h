// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/analytics/http_sink.h
//
// The analytics HTTP sink: a batch POSTed as JSON Lines (application/x-ndjson) to the endpoint of
// analytics.http_url, one blocking request on the analytics writer thread, bounded by a timeout.
// Analytics (analytics.h) retries with backoff what PostLines reports as worth retrying.
//
//   MOLT_ASSIGN_OR_RETURN(HttpEndpoint to, ParseHttpUrl("http://127.0.0.1:8080/events"));
//   Status s = PostLines(to, "{\"name\":\"a\"}\n", std::chrono::seconds(10));
//   // Ok: a 2xx answer. Rejected: a 4xx but 408 and 429 (sending it again will not help).
//   // Unavailable-like (IoError, TimedOut): anything else, worth another try.
//
// Beast stays in http_sink.cc. Thread safety: PostLines from any thread, one request per call.
#ifndef MOLT_KERNEL_ANALYTICS_HTTP_SINK_H_
#define MOLT_KERNEL_ANALYTICS_HTTP_SINK_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <string>
#include <string_view>

namespace molt::kernel::analytics {

struct HttpEndpoint {
  std::string url;     // as configured
  std::string host;    // a name or an address ([v6] without its brackets)
  std::string port;    // "80" unless the URL names one
  std::string target;  // the path and query, "/" at least
};

// "http://host[:port][/path]"; an error names the URL and what to write instead (https is not
// spoken: put a TLS proxy such as a local Vector or nginx in front).
Result<HttpEndpoint> ParseHttpUrl(std::string_view url);

// POSTs `body`; Ok on a 2xx answer. Rejected for a 4xx other than 408 and 429; IoError (the
// connection, a 5xx or another answer) or TimedOut otherwise. The message says which.
Status PostLines(const HttpEndpoint& to, const std::string& body,
                 std::chrono::milliseconds timeout);

}  // namespace molt::kernel::analytics

#endif  // MOLT_KERNEL_ANALYTICS_HTTP_SINK_H_
