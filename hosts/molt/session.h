// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/session.h
//
// Session: what a molt verb that talks to moltd shares (server_verbs.cc, fleet_verbs.cc, the
// deploy verbs, config_verbs.cc): its options (with the common ones), the token, a client for
// --server, and calls whose errors become the documented exit codes; and the small formatters
// their output uses.
#ifndef MOLT_HOSTS_MOLT_SESSION_H_
#define MOLT_HOSTS_MOLT_SESSION_H_

#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <variant>

#include "hosts/molt/admin_client.h"
#include "hosts/molt/cli.h"

namespace molt::cli {

namespace json = boost::json;

// `s` percent-encoded for a query value.
inline std::string UrlEncode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

inline std::string Duration(double seconds) {
  const auto s = static_cast<long long>(seconds);
  if (s < 60) {
    return std::to_string(s) + "s";
  }
  if (s < 3600) {
    return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  }
  return std::to_string(s / 3600) + "h" + std::to_string(s % 3600 / 60) + "m";
}

inline double Number(const json::value& v) {
  return v.is_double() ? v.as_double() : v.is_int64() ? static_cast<double>(v.as_int64()) : 0;
}

// An environment variable, "" when unset.
inline std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// A field of a JSON object: its text, or its number; "" / 0 when absent or of another type.
inline std::string Text(const json::value& v, std::string_view key) {
  const json::value* f = v.is_object() ? v.as_object().if_contains(key) : nullptr;
  return f != nullptr && f->is_string() ? std::string(f->as_string()) : std::string();
}

inline std::uint64_t Whole(const json::value& v, std::string_view key) {
  const json::value* f = v.is_object() ? v.as_object().if_contains(key) : nullptr;
  return f != nullptr && f->is_number() ? f->to_number<std::uint64_t>() : 0;
}

// "5m3s ago" for a time in ms since the epoch; "-" for none.
inline std::string Age(std::int64_t at_ms) {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  return at_ms <= 0 ? "-" : Duration(static_cast<double>(now - at_ms) / 1000) + " ago";
}

// A verb that talks to moltd: its parsed options, a client, and the call made.
class Session {
 public:
  Session(const std::string& verb, const std::string& summary) : options_("molt " + verb, summary) {
    AddCommon(options_);
  }
  cxxopts::Options& options() { return options_; }
  // Parses; returns an exit code when the verb is done (help, a bad flag, no token).
  std::optional<int> Parse(int argc, char** argv) {
    if (auto done = ParseFlags(argc, argv)) {
      return done;
    }
    return Connect();
  }
  // Parse() in two steps, for a verb that checks its arguments before it needs a server (so a
  // mistake exits 2 even without a token): the flags (help, a bad flag), then the token and the
  // client.
  std::optional<int> ParseFlags(int argc, char** argv) {
    try {
      parsed_ = options_.parse(argc, argv);
    } catch (const std::exception& e) {
      return Fail(kExitUsage,
                  std::string(e.what()) + " (" + options_.program() + " --help lists the flags)");
    }
    if (parsed_.count("help") > 0) {
      std::cout << options_.help() << "\n";
      return kExitOk;
    }
    common_ = ReadCommon(parsed_);
    return std::nullopt;
  }
  std::optional<int> Connect() {
    Result<std::string> token = AdminToken(common_);
    if (!token.ok()) {
      return Fail(kExitUnreachable, token.status().message());
    }
    Result<AdminClient> client = AdminClient::Connect(common_.server, *token);
    if (!client.ok()) {
      return Fail(kExitUsage, client.status().message());
    }
    client_ = std::move(client).value();
    return std::nullopt;
  }
  const cxxopts::ParseResult& parsed() const { return parsed_; }
  const Common& common() const { return common_; }
  // Calls the API; on success the parsed JSON body, else the exit code (the error printed).
  std::variant<json::value, int> Call(const std::string& method, const std::string& target,
                                      std::chrono::seconds timeout = std::chrono::seconds(30),
                                      const std::string& body = "") {
    return Answered(client_->Call(method, target, timeout, body));
  }
  // The answer of a call made otherwise (AdminClient::Upload), as Call() reads one.
  std::variant<json::value, int> Answered(Result<HttpAnswer> a) {
    if (!a.ok()) {
      return Fail(kExitUnreachable, a.status().message());
    }
    if (a->status == 401) {
      return Fail(kExitUnreachable, "moltd at " + common_.server +
                                        " refused the admin token: pass the token of that "
                                        "server (MOLT_TOKEN, --token-file or --data)");
    }
    boost::system::error_code ec;
    json::value body = json::parse(a->body, ec);
    if (a->status < 200 || a->status >= 300) {
      const std::string why = !ec && body.is_object() && body.as_object().contains("error")
                                  ? std::string(body.at("error").as_string())
                                  : a->body;
      return Fail(kExitFailed, "moltd answered " + std::to_string(a->status) + ": " + why);
    }
    if (ec) {
      return Fail(kExitFailed, "moltd answered something that is not JSON: " + a->body);
    }
    return body;
  }
  const AdminClient& client() const { return *client_; }
  // GET of a path outside the API (/healthz): its text, or "" when it did not answer.
  std::string Text(const std::string& target) {
    Result<HttpAnswer> a = client_->Call("GET", target, std::chrono::seconds(5));
    return a.ok() ? a->body : std::string();
  }

 private:
  cxxopts::Options options_;
  cxxopts::ParseResult parsed_;
  Common common_;
  std::optional<AdminClient> client_;
};

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_SESSION_H_
