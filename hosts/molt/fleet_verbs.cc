// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/fleet_verbs.cc
//
// molt servers and molt drain: the fleet as a server's heartbeats table shows it, and a drain
// followed until the server is empty or gone.
#include "hosts/molt/fleet_verbs.h"

#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "hosts/molt/cli.h"
#include "hosts/molt/session.h"

namespace molt::cli {

int ServersCommand(int argc, char** argv) {
  Session s("servers",
            "The servers of this server's fleet, as their heartbeats report them (docs/fleet.md):\n"
            "id, branch, build, the deployment applied, sessions, TPS, health and state: live,\n"
            "draining (closing), or lost (no heartbeat for three of its intervals; never\n"
            "dropped from the list). A server whose profiles are not on PostgreSQL is a fleet\n"
            "of one.");
  s.options().add_options()("branch", "only the servers of this branch",
                            cxxopts::value<std::string>())(
      "watch", "print the list again every 2 seconds, until Ctrl-C");
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  const std::string path =
      "/api/v1/servers" + (s.parsed().count("branch") > 0
                               ? "?branch=" + UrlEncode(s.parsed()["branch"].as<std::string>())
                               : std::string());
  for (;;) {
    auto answer = s.Call("GET", path);
    if (auto* code = std::get_if<int>(&answer)) {
      return *code;
    }
    const json::value& servers = std::get<json::value>(answer).at("servers");
    if (s.common().json) {
      PrintJson(servers);
    } else {
      std::vector<std::vector<std::string>> rows = {
          {"ID", "BRANCH", "BUILD", "APPLIED", "SESSIONS", "TPS", "HEALTH", "STATE", "SEEN"}};
      for (const json::value& x : servers.as_array()) {
        rows.push_back(
            {Text(x, "id"), Text(x, "branch"), Text(x, "build").empty() ? "-" : Text(x, "build"),
             "#" + std::to_string(Whole(x, "applied_seq")), std::to_string(Whole(x, "sessions")),
             std::to_string(static_cast<int>(Number(x.at("tps")))), Text(x, "health"),
             Text(x, "state"), Age(static_cast<std::int64_t>(Whole(x, "last_seen_ms")))});
      }
      PrintTable(rows);
      std::cout << servers.as_array().size() << " servers\n";
    }
    if (s.parsed().count("watch") == 0) {
      return kExitOk;
    }
    std::cout.flush();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::cout << "\n";
  }
}

int DrainCommand(int argc, char** argv) {
  Session s("drain",
            "Drains a server (docs/fleet.md, \"Draining a server\"): it takes no new players,\n"
            "spreads its players over the other live servers of its branch, the least loaded\n"
            "first (libmolt_client follows by itself, as the same user), saves and releases\n"
            "every profile so those servers load them at once, and exits once empty\n"
            "or at the deadline. Asked through any server of the fleet (or the server itself;\n"
            "SIGUSR1 to moltd does the same with no deadline). Waits until the server is empty\n"
            "or gone, printing its sessions as they leave.");
  s.options().add_options()(
      "deadline", "how long its players may stay (a match ends) before they are moved, seconds",
      cxxopts::value<double>()->default_value("0"))("no-wait",
                                                    "return once the server took the request")(
      "id", "the server id (molt servers lists them)", cxxopts::value<std::string>());
  s.options().parse_positional({"id"});
  s.options().positional_help("ID");
  if (auto done = s.Parse(argc, argv)) {
    return *done;
  }
  if (s.parsed().count("id") == 0) {
    return Fail(kExitUsage, "which server? molt drain ID (molt servers lists them)");
  }
  const std::string id = s.parsed()["id"].as<std::string>();
  const double deadline = s.parsed()["deadline"].as<double>();
  if (!(deadline >= 0 && deadline <= 86400)) {
    return Fail(kExitUsage, "--deadline is 0 to 86400 seconds");
  }
  auto r = s.Call("POST", "/api/v1/drain", std::chrono::seconds(30),
                  json::serialize(json::object{{"server", id}, {"deadline_seconds", deadline}}));
  if (auto* code = std::get_if<int>(&r)) {
    return *code;
  }
  if (!s.common().json) {
    std::cout << "server " << id << " is draining" << std::endl;
  }
  if (s.parsed().count("no-wait") > 0) {
    if (s.common().json) {
      PrintJson(std::get<json::value>(r));
    }
    return kExitOk;
  }
  // The server's heartbeats (`molt servers`) until it is empty or gone: its close takes at most
  // the close budgets after the deadline.
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<std::int64_t>(deadline * 1000)) +
                     std::chrono::minutes(2);
  std::uint64_t last = ~0ull;
  for (;;) {
    Result<HttpAnswer> a = s.client().Call("GET", "/api/v1/servers", std::chrono::seconds(10));
    bool listed = false;  // an answer that is not the list (its database away a moment): again
    json::value row;
    if (a.ok() && a->status == 200) {
      boost::system::error_code ec;
      const json::value body = json::parse(a->body, ec);
      listed = !ec && body.is_object() && body.as_object().contains("servers");
      for (const json::value& x : listed ? body.at("servers").as_array() : json::array()) {
        if (Text(x, "id") == id) {
          row = x;
        }
      }
    }
    // Asked through itself, the server's admin endpoint goes with it: gone is drained.
    const bool gone = !a.ok() || (listed && (row.is_null() || Text(row, "state") == "lost"));
    const std::uint64_t sessions = listed && !gone ? Whole(row, "sessions") : last;
    if (gone || (listed && sessions == 0 && Text(row, "state") != "live")) {
      if (s.common().json) {
        PrintJson(json::object{{"server", id}, {"drained", true}, {"closed", gone}});
      } else {
        std::cout << "server " << id << " drained: no session left"
                  << (gone ? " (it closed)" : " (it closes now)") << "\n";
      }
      return kExitOk;
    }
    if (std::chrono::steady_clock::now() > until) {
      return Fail(kExitFailed, listed
                                   ? "server " + id + " still reports " + std::to_string(sessions) +
                                         " sessions; molt servers shows it, its log says why"
                                   : "the fleet's list cannot be read (moltd answered " +
                                         std::to_string(a->status) + "): molt servers says why");
    }
    if (listed && sessions != last && !s.common().json) {
      std::cout << "  " << sessions << " sessions left" << std::endl;
    }
    last = sessions;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace molt::cli
