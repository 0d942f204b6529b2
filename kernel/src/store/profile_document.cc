// SPDX-License-Identifier: Apache-2.0
// The JSON helpers of profile documents (profile_document.h), on Boost.JSON.
#include "kernel/src/store/profile_document.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cctype>
#include <utility>

namespace molt::kernel::store {

namespace json = boost::json;

Result<json::value> ParseJson(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) {
    return Status::InvalidArgument("not valid JSON (" + ec.message() + ")");
  }
  return v;
}

Result<std::vector<std::string>> PointerTokens(std::string_view pointer) {
  std::vector<std::string> out;
  if (pointer.empty()) {
    return out;
  }
  if (pointer.front() != '/') {
    return Status::InvalidArgument("the path \"" + std::string(pointer) +
                                   "\" is not a JSON Pointer: start it with '/' (\"/coins\")");
  }
  std::string token;
  for (std::size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      out.push_back(std::move(token));
      token.clear();
    } else if (pointer[i] == '~' && i + 1 < pointer.size() &&
               (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
      token += pointer[++i] == '0' ? '~' : '/';
    } else {
      token += pointer[i];
    }
  }
  return out;
}

std::optional<std::size_t> PointerIndex(const std::string& token, std::size_t size, bool append) {
  if (token.empty() || !std::all_of(token.begin(), token.end(), ::isdigit)) {
    return append && token == "-" ? std::optional<std::size_t>(size) : std::nullopt;
  }
  const std::size_t i = std::stoul(token);
  return i < size || (append && i == size) ? std::optional<std::size_t>(i) : std::nullopt;
}

bool FillDefaults(json::value& doc, const json::value& defaults) {
  if (!doc.is_object() || !defaults.is_object()) {
    return false;
  }
  bool added = false;
  json::object& o = doc.as_object();
  for (const auto& [k, v] : defaults.as_object()) {
    auto it = o.find(k);
    if (it == o.end()) {
      o.emplace(k, v);
      added = true;
    } else {
      added = FillDefaults(it->value(), v) || added;
    }
  }
  return added;
}

Result<json::value> MigrateDocument(const ProfileSpec& spec, json::value doc, std::uint32_t from,
                                    const std::string& where) {
  for (std::uint32_t v = from; v < spec.schema_version; ++v) {
    if (!spec.migrate) {
      return Status::FailedPrecondition(
          fmt::format("{} has schema version {} and there is no migration to {}", where, v,
                      spec.schema_version));
    }
    Result<std::string> next = spec.migrate(v, json::serialize(doc));
    Result<json::value> again = next.ok() ? ParseJson(*next) : Result<json::value>(next.status());
    if (!again.ok() || !again->is_object()) {
      return Status::FailedPrecondition(
          fmt::format("{}: the migration from schema version {} failed: {}", where, v,
                      again.ok() ? "it did not return a JSON object" : again.status().message()));
    }
    doc = std::move(again).value();
  }
  return doc;
}

}  // namespace molt::kernel::store
