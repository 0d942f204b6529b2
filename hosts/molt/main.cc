// SPDX-License-Identifier: Apache-2.0
// molt: the operators' CLI. Verbs that talk to a moltd go through its admin API (admin_client.h);
// build and keys work on local files (build_command.cc).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <thread>
#include <variant>

#include "hosts/molt/admin_client.h"
#include "hosts/molt/cli.h"
#include "hosts/molt/session.h"

extern char** environ;

namespace molt::cli {

namespace json = boost::json;

void AddCommon(cxxopts::Options& options) {
  options.add_options("common")(
      "server", "the admin endpoint of the moltd to talk to",
      cxxopts::value<std::string>()->default_value("http://127.0.0.1:7778"))(
      "token-file", "a file holding the admin token (else MOLT_TOKEN, or --data)",
      cxxopts::value<std::string>())("data", "moltd's data directory: its admin.token is the token",
                                     cxxopts::value<std::string>())(
      "json", "print JSON instead of text")("h,help", "this help");
}

Common ReadCommon(const cxxopts::ParseResult& parsed) {
  Common c;
  c.json = parsed.count("json") > 0;
  c.server = parsed["server"].as<std::string>();
  if (parsed.count("token-file") > 0) {
    c.token_file = parsed["token-file"].as<std::string>();
  }
  if (parsed.count("data") > 0) {
    c.data_dir = parsed["data"].as<std::string>();
  }
  return c;
}

Result<std::string> AdminToken(const Common& common) {
  if (const char* env = std::getenv("MOLT_TOKEN"); env != nullptr && *env != '\0') {
    return std::string(env);
  }
  std::string file = common.token_file;
  if (file.empty() && !common.data_dir.empty()) {
    file = common.data_dir + "/admin.token";
  }
  if (file.empty() && std::ifstream("data/admin.token")) {
    file = "data/admin.token";
  }
  if (file.empty()) {
    return Status::NotFound(
        "no admin token: set MOLT_TOKEN, or pass --token-file FILE or --data DIR (moltd keeps "
        "it in its data directory's admin.token)");
  }
  std::ifstream in(file);
  std::string token;
  if (!in || !std::getline(in, token) || token.empty()) {
    return Status::NotFound("the admin token file \"" + file + "\" cannot be read");
  }
  return token;
}

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) {
        line += std::string(width[i] - row[i].size() + 2, ' ');
      }
    }
    std::cout << line << "\n";
  }
}

void PrintJson(const json::value& v) { std::cout << json::serialize(v) << "\n"; }

int Fail(int code, const std::string& text) {
  std::cerr << "molt: " << text << "\n";
  return code;
}

RunResult RunProgram(const std::vector<std::string>& argv) {
  RunResult r;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = argv[0].find('/') != std::string::npos
                     ? posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ)
                     : posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    return r;
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) {
    r.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

namespace {

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
      {"ID", "USER", "ADDRESS", "VIA", "CONNECTED", "RTT"}};
  for (const json::value& x : p.at("sessions").as_array()) {
    char rtt[32];
    std::snprintf(rtt, sizeof rtt, "%.1f ms", Number(x.at("rtt_seconds")) * 1000);
    rows.push_back({std::to_string(x.at("id").as_int64()), std::string(x.at("user").as_string()),
                    std::string(x.at("address").as_string()),
                    x.as_object().contains("transport")  // older servers do not say
                        ? std::string(x.at("transport").as_string())
                        : std::string(),
                    Duration(Number(x.at("connected_seconds"))),
                    x.at("link_lost").as_bool() ? "link lost" : rtt});
  }
  PrintTable(rows);
  std::cout << p.at("total").as_int64() << " sessions\n";
  return kExitOk;
}

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

struct Verb {
  const char* name;
  const char* summary;
  int (*run)(int, char**);
};

constexpr Verb kVerbs[] = {
    {"status", "the server: version, uptime, the generation serving, sessions, health",
     StatusCommand},
    {"sessions", "the live sessions", SessionsCommand},
    {"servers", "the servers of the fleet: id, build, sessions, health, state [--branch B]",
     ServersCommand},
    {"kick", "end a session: kick ID [--reason TEXT]", KickCommand},
    {"drain", "move a server's players to the others and close it: drain ID [--deadline S]",
     DrainCommand},
    {"logs", "the newest log lines [--follow]", LogsCommand},
    {"reload", "swap in the plugin directory again and print the report [--wait S]", ReloadCommand},
    {"bundle", "write a debug bundle on the server", BundleCommand},
    {"build", "pack a plugin directory into a build file: build DIR [--out FILE]", BuildCommand},
    {"deploy",
     "deploy a build to a branch: deploy BUILD_FILE|BUILD --branch B [--wait [S]] [--rollout "
     "PCT], deploy --widen PCT",
     DeployCommand},
    {"promote", "deploy a stored build to another branch: promote BRANCH BUILD|#SEQ",
     PromoteCommand},
    {"rollback", "deploy a branch's previous build: rollback --branch B [--to BUILD|#SEQ]",
     RollbackCommand},
    {"pin", "hold this server on a deployed build: pin BUILD|#SEQ", PinCommand},
    {"unpin", "end this server's pin", UnpinCommand},
    {"builds", "the builds the server stored", BuildsCommand},
    {"branches", "the branches, their heads and this server's rules and keys", BranchesCommand},
    {"deployments", "the deploy history [--branch B] [--limit N]", DeploymentsCommand},
    {"report", "one deployment on every server of its branch: report SEQ", ReportCommand},
    {"keys", "signing keys: keys init [--fallback] [--dir DIR], keys rotate, keys resign",
     KeysCommand},
    {"doctor", "check the server, the token, the keys and moltd for deploys", DoctorCommand},
    {"config", "live values: config get [KEY], set KEY JSON, unset KEY, history [KEY]",
     ConfigCommand},
};

int Help() {
  std::cout << "molt: the Molt operators' CLI.\n\n"
               "Usage: molt VERB [options]    (molt VERB --help explains each)\n\n"
               "Verbs:\n";
  std::vector<std::vector<std::string>> rows;
  for (const Verb& v : kVerbs) {
    rows.push_back({std::string("  ") + v.name, v.summary});
  }
  PrintTable(rows);
  std::cout
      << "\n"
         "Every verb takes --json (machine-readable output). The verbs that talk to a server\n"
         "take --server URL (default http://127.0.0.1:7778, moltd's admin endpoint) and the\n"
         "admin token from MOLT_TOKEN, --token-file FILE, or --data DIR (moltd's data\n"
         "directory, whose admin.token it is; ./data/admin.token when none is given).\n\n"
         "Exit codes: 0 done; 1 the operation failed (a swap, a build); 2 bad flags or\n"
         "arguments; 3 no server at --server, or the token was refused.\n"
         "docs/operations.md, docs/deploys.md and docs/live-values.md describe what each verb\n"
         "does.\n";
  return kExitOk;
}

}  // namespace

}  // namespace molt::cli

int main(int argc, char** argv) {
  using namespace molt::cli;
  if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h" ||
      std::string_view(argv[1]) == "help") {
    return argc < 2 ? (Help(), kExitUsage) : Help();
  }
  if (std::string_view(argv[1]) == "--version") {
    std::cout << "molt " << MOLT_VERSION << "\n";
    return kExitOk;
  }
  for (const Verb& v : kVerbs) {
    if (v.name == std::string_view(argv[1])) {
      return v.run(argc - 1, argv + 1);
    }
  }
  return Fail(kExitUsage,
              "unknown verb \"" + std::string(argv[1]) + "\" (molt --help lists the verbs)");
}
