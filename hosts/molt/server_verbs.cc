// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/server_verbs.cc
//
// molt status, sessions, kick, logs, reload and bundle: one moltd through its admin API.
#include "hosts/molt/server_verbs.h"

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "hosts/molt/cli.h"
#include "hosts/molt/session.h"

namespace molt::cli {

int StatusCommand(int argc, char** argv) {
  Session s("status",
            "The server: its version, uptime, the generation serving, sessions, TPS "
            "and health.");
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  auto status = s.Call("GET", "/api/v1/status");
  if (auto* code = std::get_if<int>(&status)) {
    return *code;
  }
  const json::value& st = std::get<json::value>(status);
  const std::string health = s.Text("/healthz");
  if (s.common().json) {
    json::object o = st.as_object();
    o["health"] = health;
    PrintJson(o);
    return kExitOk;
  }
  const json::value& gens = st.at("stats").at("generations");
  std::cout << "moltd " << st.at("version").as_string().c_str() << " at " << s.common().server
            << ", up " << Duration(Number(st.at("uptime_seconds")))
            << (st.at("closing").as_bool() ? " (closing)" : "") << "\n";
  PrintTable(
      {{"  generation", std::string(gens.at("serving").as_string()) + " (" +
                            std::to_string(gens.at("plugins").as_array().size()) + " plugins)"},
       {"  swaps", std::to_string(gens.at("swaps").as_int64()) + " ok, " +
                       std::to_string(gens.at("failed_swaps").as_int64()) + " failed, " +
                       std::to_string(gens.at("rollbacks").as_int64()) + " rolled back"},
       {"  sessions", std::to_string(st.at("sessions").as_int64())},
       {"  tps", std::to_string(static_cast<int>(Number(st.at("tps"))))},
       {"  health", health.empty() ? "no answer" : health.substr(0, health.find('\n'))}});
  return kExitOk;
}

// How a session is linked: "tcp", "websocket", with "+udp" while its datagram link is bound
// (older servers say less, or nothing).
std::string Via(const json::value& session) {
  const json::object& o = session.as_object();
  std::string via = o.contains("transport") ? std::string(o.at("transport").as_string()) : "";
  if (o.contains("datagram") && !o.at("datagram").as_string().empty()) {
    via += "+udp";
  }
  return via;
}

int SessionsCommand(int argc, char** argv) {
  Session s("sessions", "The live sessions: id, user, address, connected for, round trip.");
  s.options().add_options()("limit", "at most this many (1..1000)",
                            cxxopts::value<int>()->default_value("100"));
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  auto page =
      s.Call("GET", "/api/v1/sessions?limit=" + std::to_string(s.parsed()["limit"].as<int>()));
  if (auto* code = std::get_if<int>(&page)) {
    return *code;
  }
  const json::value& p = std::get<json::value>(page);
  if (s.common().json) {
    PrintJson(p);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {
      {"ID", "USER", "ADDRESS", "VIA", "CONNECTED", "RTT", "LINK"}};
  for (const json::value& x : p.at("sessions").as_array()) {
    char rtt[32];
    std::snprintf(rtt, sizeof rtt, "%.1f ms", Number(x.at("rtt_seconds")) * 1000);
    rows.push_back({std::to_string(x.at("id").as_int64()), std::string(x.at("user").as_string()),
                    std::string(x.at("address").as_string()), Via(x),
                    Duration(Number(x.at("connected_seconds"))),
                    x.at("link_lost").as_bool() ? "link lost" : rtt,
                    // The link's tier (a server before the NetGovernor says none).
                    x.as_object().contains("tier") ? std::string(x.at("tier").as_string()) : "-"});
  }
  PrintTable(rows);
  std::cout << p.at("total").as_int64() << " sessions\n";
  return kExitOk;
}

int KickCommand(int argc, char** argv) {
  Session s("kick", "Ends a session: molt kick ID [--reason TEXT].");
  s.options().add_options()("reason", "what the client is told",
                            cxxopts::value<std::string>()->default_value(""))(
      "id", "the session id (molt sessions lists them)", cxxopts::value<std::string>());
  s.options().parse_positional({"id"});
  s.options().positional_help("ID");
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  if (s.parsed().count("id") == 0) {
    return Fail(kExitUsage, "which session? molt kick ID (molt sessions lists them)");
  }
  auto r = s.Call("POST", "/api/v1/sessions/" + UrlEncode(s.parsed()["id"].as<std::string>()) +
                              "/kick?reason=" + UrlEncode(s.parsed()["reason"].as<std::string>()));
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  if (s.common().json) {
    PrintJson(std::get<json::value>(r));
  } else {
    std::cout << "kicked session " << s.parsed()["id"].as<std::string>() << "\n";
  }
  return kExitOk;
}

int LogsCommand(int argc, char** argv) {
  Session s("logs", "The server's newest log lines; --follow keeps printing new ones.");
  s.options().add_options()("follow", "print new lines as they come, until Ctrl-C")(
      "lines", "how many of the newest lines first", cxxopts::value<int>()->default_value("50"));
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  const bool follow = s.parsed().count("follow") > 0;
  const auto first = static_cast<std::size_t>(std::max(0, s.parsed()["lines"].as<int>()));
  std::int64_t since = 0;
  for (bool initial = true;; initial = false) {
    auto page = s.Call("GET", "/api/v1/logs?since=" + std::to_string(since));
    if (auto* code = std::get_if<int>(&page)) {
      return *code;
    }
    const json::value& p = std::get<json::value>(page);
    const json::array& lines = p.at("lines").as_array();
    const std::size_t skip = initial && lines.size() > first ? lines.size() - first : 0;
    for (std::size_t i = skip; i < lines.size(); ++i) {
      const json::value& l = lines[i];
      if (s.common().json) {
        PrintJson(l);
      } else {
        std::cout << l.at("time").as_string().c_str() << " " << l.at("level").as_string().c_str()
                  << " [" << l.at("scope").as_string().c_str() << "] "
                  << l.at("message").as_string().c_str() << "\n";
      }
    }
    std::cout.flush();
    since = p.at("next").as_int64();
    if (!follow) {
      return kExitOk;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

int ReloadCommand(int argc, char** argv) {
  Session s("reload",
            "Loads moltd's plugin directory again as a new generation and swaps it in (as "
            "SIGHUP does), then prints the swap's report. Exits 1 when the swap failed.");
  s.options().add_options()("wait", "seconds to wait for the report (1..600)",
                            cxxopts::value<int>()->default_value("60"));
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  const int wait = s.parsed()["wait"].as<int>();
  if (wait < 1 || wait > 600) {
    return Fail(kExitUsage, "--wait is 1 to 600 seconds");
  }
  auto r = s.Call("POST", "/api/v1/reload?wait=" + std::to_string(wait),
                  std::chrono::seconds(wait + 10));
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  const json::value& body = std::get<json::value>(r);
  if (!body.as_object().contains("report")) {
    if (s.common().json) {
      PrintJson(body);
    }
    return Fail(kExitFailed, "the swap did not finish within " + std::to_string(wait) +
                                 " s; moltd logs its report (molt logs)");
  }
  const json::value& report = body.at("report");
  if (s.common().json) {
    PrintJson(report);
  } else if (report.at("ok").as_bool()) {
    std::printf("swapped: %s serves (was %s), hold %.3f ms\n",
                report.at("serving").as_string().c_str(), report.at("previous").as_string().c_str(),
                Number(report.at("hold_ms")));
  } else {
    std::printf("failed at %s: %s%s\n", report.at("stage").as_string().c_str(),
                report.at("error").as_string().c_str(),
                report.at("restored").as_bool() ? " (the previous build was restored)" : "");
  }
  return report.at("ok").as_bool() ? kExitOk : kExitFailed;
}

int BundleCommand(int argc, char** argv) {
  Session s("bundle", "Writes a debug bundle on the server and prints where.");
  s.options().add_options()("reason", "recorded in the bundle",
                            cxxopts::value<std::string>()->default_value("molt bundle"));
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  auto r =
      s.Call("POST", "/api/v1/bundle?reason=" + UrlEncode(s.parsed()["reason"].as<std::string>()));
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  if (s.common().json) {
    PrintJson(std::get<json::value>(r));
  } else {
    std::cout << "debug bundle written to "
              << std::get<json::value>(r).at("path").as_string().c_str() << " (on the server)\n";
  }
  return kExitOk;
}

}  // namespace molt::cli
