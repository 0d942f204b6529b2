// SPDX-License-Identifier: Apache-2.0
// Config: flattening JSON with Boost.JSON.
#include "kernel/src/core/config.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <fstream>
#include <sstream>

namespace molt::kernel {
namespace {

Status Flatten(const boost::json::value& v, const std::string& prefix, Config& out,
               std::string_view source) {
  switch (v.kind()) {
    case boost::json::kind::object:
      for (const auto& [k, child] : v.get_object()) {
        if (k.empty() || k.find('.') != boost::json::string_view::npos) {
          return Status::InvalidArgument(std::string(source) + ": key \"" + std::string(k) +
                                         "\" under \"" + prefix +
                                         "\" must be non-empty and contain no '.'");
        }
        Status s = Flatten(child, prefix.empty() ? std::string(k) : prefix + "." + std::string(k),
                           out, source);
        if (!s.ok()) {
          return s;
        }
      }
      return Status::Ok();
    case boost::json::kind::bool_:
      out.Set(prefix, v.get_bool());
      return Status::Ok();
    case boost::json::kind::int64:
      out.Set(prefix, v.get_int64());
      return Status::Ok();
    case boost::json::kind::uint64:
      out.Set(prefix, static_cast<std::int64_t>(v.get_uint64()));
      return Status::Ok();
    case boost::json::kind::double_:
      out.Set(prefix, v.get_double());
      return Status::Ok();
    case boost::json::kind::string:
      out.Set(prefix, std::string(v.get_string()));
      return Status::Ok();
    case boost::json::kind::array:
      out.Set(prefix, boost::json::serialize(v));
      return Status::Ok();
    case boost::json::kind::null:
      return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace

void Config::Set(std::string key, Scalar value) {
  values_[std::move(key)] = std::make_unique<Scalar>(std::move(value));
}

const Config::Scalar* Config::Get(std::string_view key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : it->second.get();
}

Value Config::GetValue(std::string_view key) const {
  const Scalar* s = Get(key);
  if (s == nullptr) {
    return Value();
  }
  return std::visit(
      [](const auto& v) -> Value {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return Value::Bool(v);
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return Value::Int(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return Value::Double(v);
        } else {
          return Value::String(v);
        }
      },
      *s);
}

Status Config::MergeJson(std::string_view json, std::string_view source) {
  boost::system::error_code ec;
  boost::json::value root =
      boost::json::parse(boost::json::string_view(json.data(), json.size()), ec);
  if (ec) {
    return Status::InvalidArgument(std::string(source) + ": not valid JSON: " + ec.message());
  }
  if (!root.is_object()) {
    return Status::InvalidArgument(std::string(source) + ": the top level must be a JSON object");
  }
  return Flatten(root, "", *this, source);
}

Status Config::MergeJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::IoError("config file \"" + path + "\" cannot be read");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return MergeJson(buffer.str(), "config file \"" + path + "\"");
}

std::vector<std::string> Config::Keys() const {
  std::vector<std::string> keys;
  for (const auto& [k, v] : values_) {
    keys.push_back(k);
  }
  return keys;
}

}  // namespace molt::kernel
