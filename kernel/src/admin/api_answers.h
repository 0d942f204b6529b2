// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/api_answers.h
//
// The admin API's answers and query numbers, shared by its routes classes (*_routes.h): a JSON
// body with its status, an {"error": ...} body, a whole unsigned number read strictly from a
// query value, a call's ?wait=S, and a time as the API writes it.
//
// Thread safety: none needed (functions of their arguments).
#ifndef MOLT_KERNEL_ADMIN_API_ANSWERS_H_
#define MOLT_KERNEL_ADMIN_API_ANSWERS_H_

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernel/src/admin/http_server.h"

namespace molt::kernel::admin {

inline HttpResponse Json(int status, const boost::json::value& body) {
  return {status, "application/json", boost::json::serialize(body) + "\n", {}};
}

inline HttpResponse Error(int status, std::string message) {
  return Json(status, boost::json::object{{"error", std::move(message)}});
}

// `text` as a whole unsigned number; nullopt for anything else ("", "-1", "1x").
inline std::optional<std::uint64_t> Number(std::string_view text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return v;
}

// ?wait=S of a call that waits for a swap (deploy, reload): 0 when absent; nullopt when malformed
// or over 600.
inline std::optional<std::uint64_t> WaitSeconds(std::string_view query) {
  constexpr std::uint64_t kMaxWaitSeconds = 600;
  const std::string text = QueryValue(query, "wait");
  if (text.empty()) {
    return 0;
  }
  std::optional<std::uint64_t> s = Number(text);
  return s && *s <= kMaxWaitSeconds ? s : std::nullopt;
}

// `t` as ISO 8601 in UTC with milliseconds: "2026-12-03T10:00:00.123Z".
inline std::string IsoTime(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z",
                     fmt::gmtime(std::chrono::system_clock::to_time_t(t)), ms.count() % 1000);
}

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_API_ANSWERS_H_
