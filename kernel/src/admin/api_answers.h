// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/api_answers.h
//
// The admin API's answers and query numbers, shared by its routes (admin_api.cc,
// deploy_routes.cc): a JSON body with its status, an {"error": ...} body, and a whole unsigned
// number read strictly from a query value.
//
// Thread safety: none needed (functions of their arguments).
#ifndef MOLT_KERNEL_ADMIN_API_ANSWERS_H_
#define MOLT_KERNEL_ADMIN_API_ANSWERS_H_

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <charconv>
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

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_API_ANSWERS_H_
