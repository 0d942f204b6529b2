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

Result<const json::value*> FindPointer(const json::value& doc, std::string_view pointer) {
  MOLT_ASSIGN_OR_RETURN(std::vector<std::string> tokens, PointerTokens(pointer));
  const json::value* at = &doc;
  for (const std::string& t : tokens) {
    const json::value* next = nullptr;
    if (at->is_object()) {
      next = at->as_object().if_contains(t);
    } else if (at->is_array()) {
      if (auto i = PointerIndex(t, at->as_array().size(), false)) {
        next = &at->as_array()[*i];
      }
    }
    if (next == nullptr) {
      return static_cast<const json::value*>(nullptr);
    }
    at = next;
  }
  return at;
}

Status SetPointer(json::value& doc, std::string_view pointer, json::value value) {
  MOLT_ASSIGN_OR_RETURN(std::vector<std::string> tokens, PointerTokens(pointer));
  if (tokens.empty()) {
    if (!value.is_object()) {
      return Status::InvalidArgument("a profile document is a JSON object");
    }
    doc = std::move(value);
    return Status::Ok();
  }
  json::value* at = &doc;
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (at->is_object()) {
      json::object& o = at->as_object();
      auto it = o.find(t);
      at = it != o.end() ? &it->value() : &o.emplace(t, json::object()).first->value();
    } else if (at->is_array()) {
      auto idx = PointerIndex(t, at->as_array().size(), false);
      if (!idx) {
        return Status::NotFound(fmt::format("\"{}\": no element {} in that array", pointer, t));
      }
      at = &at->as_array()[*idx];
    } else {
      return Status::InvalidArgument(fmt::format(
          "\"{}\": \"{}\" is inside a value that is neither object nor array", pointer, t));
    }
  }
  const std::string& last = tokens.back();
  if (at->is_object()) {
    at->as_object()[last] = std::move(value);
  } else if (at->is_array()) {
    json::array& a = at->as_array();
    auto idx = PointerIndex(last, a.size(), true);
    if (!idx) {
      return Status::NotFound(fmt::format("\"{}\": no element {} in that array", pointer, last));
    }
    if (*idx == a.size()) {
      a.push_back(std::move(value));
    } else {
      a[*idx] = std::move(value);
    }
  } else {
    return Status::InvalidArgument(
        fmt::format("\"{}\": its parent is neither an object nor an array", pointer));
  }
  return Status::Ok();
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
