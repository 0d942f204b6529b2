// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/config_verbs.cc
//
// molt config: the live values (docs/live-values.md) through the admin API's /api/v1/config.
#include "hosts/molt/config_verbs.h"

#include <boost/json.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "hosts/molt/cli.h"
#include "hosts/molt/session.h"

namespace molt::cli {
namespace {

constexpr char kConfigHelp[] =
    "Live values: what plugins declare for operators to tune while the game runs.\n"
    "  molt config get [KEY]               every value (or one): default, value served, override\n"
    "  molt config set KEY JSON [--by WHO] override KEY (\"<plugin>.<name>\"); JSON of the\n"
    "                                      default's type: 5, true, '\"festival\"', '[1,2]'\n"
    "  molt config unset KEY [--by WHO]    drop the override: the default is served again\n"
    "  molt config history [KEY] [--limit N]  who changed what and when, newest first\n"
    "A set is checked (the type, the plugin's own check) and stored before any plugin sees it;\n"
    "plugins hear Config.Changed. Overrides survive swaps and restarts, and expire after 7 days\n"
    "with no server online.";

std::string Shown(const json::value& v) { return json::serialize(v); }

int Get(Session& s, const std::string& key) {
  auto r = s.Call("GET", "/api/v1/config" + (key.empty() ? "" : "?key=" + UrlEncode(key)));
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  const json::value& v = std::get<json::value>(r);
  if (s.common().json) {
    PrintJson(v);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {{"KEY", "VALUE", "DEFAULT", "OVERRIDE"}};
  auto row = [&](const json::value& x) {
    const json::object& o = x.as_object();
    std::string note = "-";
    if (const json::value* ov = o.if_contains("override")) {
      note = "by " + (Text(*ov, "by").empty() ? std::string("-") : Text(*ov, "by")) + ", " +
             Age(static_cast<std::int64_t>(Whole(*ov, "at_ms")));
      if (ov->at("ignored").as_bool()) {
        note = Shown(ov->at("value")) + " ignored: not of the default's type (" + note + ")";
      }
    }
    const bool declared = o.at("declared").as_bool();
    rows.push_back({Text(x, "key"),
                    declared
                        ? Shown(o.at("value"))
                        : Shown(o.at("override").at("value")) + " (no running plugin declares it)",
                    declared ? Shown(o.at("default")) : "-", note});
  };
  if (key.empty()) {
    for (const json::value& x : v.at("values").as_array()) {
      row(x);
    }
    if (rows.size() == 1) {
      std::cout << "no live values: no running plugin declares any, and none is overridden\n";
      return kExitOk;
    }
  } else {
    row(v);
  }
  PrintTable(rows);
  return kExitOk;
}

int Set(Session& s, const std::string& key, const json::value& value, const std::string& by) {
  json::object body{{"key", key}, {"value", value}, {"by", by}};
  auto r = s.Call("POST", "/api/v1/config", std::chrono::seconds(30), json::serialize(body));
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  const json::value& v = std::get<json::value>(r);
  if (s.common().json) {
    PrintJson(v);
    return kExitOk;
  }
  std::cout << key << (value.is_null() ? " unset" : " set") << ": serving " << Shown(v.at("value"))
            << (v.at("changed").as_bool() ? "" : " (unchanged: it served that already)") << "\n";
  return kExitOk;
}

int History(Session& s, const std::string& key, int limit) {
  std::string target = "/api/v1/config/history?limit=" + std::to_string(limit);
  if (!key.empty()) {
    target += "&key=" + UrlEncode(key);
  }
  auto r = s.Call("GET", target);
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  const json::value& v = std::get<json::value>(r);
  if (s.common().json) {
    PrintJson(v);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {{"SEQ", "KEY", "ACTION", "VALUE", "BY", "WHEN"}};
  for (const json::value& c : v.at("history").as_array()) {
    rows.push_back({std::to_string(Whole(c, "seq")), Text(c, "key"), Text(c, "action"),
                    c.at("value").is_null() ? "-" : Shown(c.at("value")),
                    Text(c, "by").empty() ? "-" : Text(c, "by"),
                    Age(static_cast<std::int64_t>(Whole(c, "at_ms")))});
  }
  if (rows.size() == 1) {
    std::cout << "no changes recorded" << (key.empty() ? "" : " for " + key) << "\n";
    return kExitOk;
  }
  PrintTable(rows);
  return kExitOk;
}

}  // namespace

int ConfigCommand(int argc, char** argv) {
  Session s("config", kConfigHelp);
  s.options().add_options()("action", "get, set, unset or history", cxxopts::value<std::string>())(
      "args", "KEY, and for set the JSON value", cxxopts::value<std::vector<std::string>>())(
      "by", "who changes it (default $USER)", cxxopts::value<std::string>())(
      "limit", "history: how many (1 to 10000)", cxxopts::value<int>()->default_value("50"));
  s.options().parse_positional({"action", "args"});
  s.options().positional_help("get|set|unset|history [KEY] [JSON]");
  if (auto done = s.ParseFlags(argc, argv)) {
    return *done;
  }
  const cxxopts::ParseResult& p = s.parsed();
  const std::string action = p.count("action") > 0 ? p["action"].as<std::string>() : "";
  const std::vector<std::string> args =
      p.count("args") > 0 ? p["args"].as<std::vector<std::string>>() : std::vector<std::string>();
  const std::string key = args.empty() ? "" : args[0];
  const std::string by = p.count("by") > 0 ? p["by"].as<std::string>() : Env("USER");
  json::value value;
  if (action == "get" || action == "history") {
    if (args.size() > 1) {
      return Fail(kExitUsage, "molt config " + action + " takes at most one KEY");
    }
    const int limit = p["limit"].as<int>();
    if (action == "history" && (limit < 1 || limit > 10000)) {
      return Fail(kExitUsage, "--limit is a number from 1 to 10000");
    }
  } else if (action == "set") {
    if (args.size() != 2) {
      return Fail(kExitUsage, "molt config set KEY JSON (molt config --help)");
    }
    boost::system::error_code ec;
    value = json::parse(args[1], ec);
    if (ec || value.is_null()) {
      return Fail(kExitUsage, "the value " + args[1] +
                                  " is not JSON of a type: a string needs its quotes, as in "
                                  "molt config set " +
                                  key + " '\"" + args[1] +
                                  "\"' (molt config unset drops an override)");
    }
  } else if (action == "unset") {
    if (args.size() != 1) {
      return Fail(kExitUsage, "molt config unset KEY");
    }
  } else {
    return Fail(kExitUsage, (action.empty() ? std::string("molt config needs an action")
                                            : "unknown action \"" + action + "\"") +
                                ": get, set, unset or history (molt config --help)");
  }
  if (auto done = s.Connect()) {
    return *done;
  }
  if (action == "get") {
    return Get(s, key);
  }
  if (action == "history") {
    return History(s, key, p["limit"].as<int>());
  }
  return Set(s, key, value, by);
}

}  // namespace molt::cli
