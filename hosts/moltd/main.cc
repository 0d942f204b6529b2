// SPDX-License-Identifier: Apache-2.0
// File: hosts/moltd/main.cc
//
// moltd: the Molt server host. Parses flags, then runs the server (molt/kernel/server.h): the
// flags' table and help, the flags as ServerOptions, and RunServer.
#include <molt/kernel/server.h>
#include <molt/molt.h>
#include <unistd.h>

#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>

namespace {

namespace fs = std::filesystem;

// The bundled plugins: next to the binary in the build tree (bin/../plugins) or where the install
// put them (bin/../lib/molt/plugins, as the prefix's layout says).
std::string DefaultPluginDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return "plugins";
  }
  for (const fs::path& candidate : {exe.parent_path().parent_path() / "plugins",
                                    exe.parent_path() / MOLT_INSTALLED_PLUGIN_DIR}) {
    if (fs::is_directory(candidate, ec)) {
      return candidate.string();
    }
  }
  return "plugins";
}

// moltd's flags and help.
cxxopts::Options Flags() {
  cxxopts::Options options(
      "moltd",
      "moltd: the Molt server host.\n\n"
      "Loads every plugin (*.so) of the plugin directory, starts them in dependency order and\n"
      "serves until SIGTERM or SIGINT, then runs the close phase: Kernel.Closing, every\n"
      "service's stop in reverse boot order within the close budget (a plugin's stop() also\n"
      "within server.callback_deadline_seconds, 5 s: past it, it is cut and the close goes\n"
      "on), Kernel.Stopped; beside the stops, from Kernel.Stopped or 5 s after the close, the\n"
      "final save of every player profile (within 27 s of the close); then each client's Bye.\n"
      "Exit codes: 0 a clean close; 1 the boot failed; 3 --check or --self-test failed; 4 a\n"
      "stop was cut at its deadline (every profile saved; the log names it); 5 the close did\n"
      "not finish its saves (refused, past the drain's deadline, or the process stuck past\n"
      "the close's last deadline; those profiles keep their last autosave).\n"
      "Profiles (the stores plugins declare) live in DATA/profiles.db, SQLite; a server\n"
      "killed with kill -9 leaves it consistent, and its players' leases are taken over when\n"
      "moltd starts again on this host (docs/profiles.md).\n"
      "SIGHUP loads the plugin directory again as a new generation and swaps it in while\n"
      "clients stay connected (state handed over; the old build keeps serving, or is restored,\n"
      "when the new one fails or errs in its health window; one JSON line reports each swap).\n"
      "A build that passes its window is kept in DATA/builds/last-known-good and boots when\n"
      "the plugin directory does not (docs/generations.md).\n"
      "Deploys (docs/deploys.md): `molt deploy` uploads a build file to the registry in\n"
      "DATA/registry and moves a branch's head; this server runs the branch --branch names\n"
      "(default prod), boots its head (then its earlier builds, then the last known good,\n"
      "then the plugin directory), and swaps to each new head deployed to it. The prod\n"
      "branch takes only deploys signed by a key listed in the file deploy.keys names.\n"
      "Clients connect over TCP (default 127.0.0.1:7777), or TLS with --tls-cert and\n"
      "--tls-key; docs/network.md has the limits and refusals.\n"
      "Operators reach it on 127.0.0.1:7778 (--admin): a live dashboard at /, /healthz,\n"
      "/readyz, Prometheus /metrics, and a JSON API (sessions, kicks, logs, reload, debug\n"
      "bundles, the wire inspector) guarded by the token in DATA/admin.token (the dashboard\n"
      "takes it as /#token=TOKEN). Repeated errors are merged into one line per 30 s, and a\n"
      "crash leaves DATA/bundles/crash-PID.json (docs/operations.md).\n"
      "Flags override the configuration file's \"server\" and \"net\" sections; the file may\n"
      "also hold a \"scheduler\" section (budget_ms, target_frame_ms, profile_tasks,\n"
      "stagger_recurring), network limits under \"net\" (max_frame_bytes, bytes_per_tick,\n"
      "auth, ...), the profile database under \"profiles\" (database, synchronous: normal or\n"
      "full, drain_seconds), the admin endpoint under \"admin\" (address, token,\n"
      "allow_insecure_remote), deploys under \"deploy\" (branch, keys, require_signatures,\n"
      "max_build_mb) and per-plugin sections under \"plugins\" that plugins read\n"
      "with config_get.\n");
  options.set_width(100);
  // clang-format off
  options.add_options()
      ("p,plugins", "plugin directory (default: the bundled plugins next to moltd)",
       cxxopts::value<std::string>(), "DIR")
      ("d,data", "data directory: databases and runtime files, created when missing",
       cxxopts::value<std::string>()->default_value("data"), "DIR")
      ("c,config", "configuration file (JSON)", cxxopts::value<std::string>(), "FILE")
      ("t,tick-rate", "scheduler tick rate in Hz (default 60)", cxxopts::value<double>(), "HZ")
      ("l,log-level", "debug, info, warn, error or off (default info)",
       cxxopts::value<std::string>(), "LEVEL")
      ("log-format", "text or json (one JSON object per line; default text)",
       cxxopts::value<std::string>(), "FORMAT")
      ("close-budget", "seconds every service's stop may take together at the close; past "
                       "it the stops left are cut (default 25)",
       cxxopts::value<double>(), "SECONDS")
      ("b,bind", "address clients connect to (default 127.0.0.1; 0.0.0.0 for every interface)",
       cxxopts::value<std::string>(), "ADDRESS")
      ("port", "TCP port for clients (default 7777; 0 picks a free one and logs it)",
       cxxopts::value<int>(), "PORT")
      ("tls-cert", "clients connect over TLS 1.2/1.3 with this PEM certificate chain (with "
                   "--tls-key; default: plain TCP)", cxxopts::value<std::string>(), "FILE")
      ("tls-key", "the PEM private key of --tls-cert", cxxopts::value<std::string>(), "FILE")
      ("database", "where profiles live: a PostgreSQL URL that many servers share "
                   "(postgresql://user@host/db, or host=/run/postgresql dbname=molt; "
                   "docs/fleet.md), or an SQLite file (store.url; default DATA/profiles.db)",
       cxxopts::value<std::string>(), "URL")
      ("server-id", "this server's id in its fleet, 1 to 64 of [A-Za-z0-9._-] (server.id; "
                    "default: made at the first start and kept in DATA/server.id)",
       cxxopts::value<std::string>(), "ID")
      ("ws", "also accept WebSocket clients (browsers) on ADDRESS:PORT, the same frames one per "
             "binary message; wss:// with --tls-cert (net.websocket; default: off)",
       cxxopts::value<std::string>(), "ADDRESS:PORT")
      ("udp", "offer each session a datagram link on this UDP ADDRESS:PORT (IPv4): unreliable "
              "channels and predicted intents go by it, sealed under a key its Welcome gives "
              "(net.udp; default: off; docs/network.md)",
       cxxopts::value<std::string>(), "ADDRESS:PORT")
      ("admin", "the admin endpoint: the dashboard, the HTTP API, /metrics, /healthz and /readyz "
                "(default 127.0.0.1:7778; off turns it off; docs/operations.md)",
       cxxopts::value<std::string>(), "ADDRESS:PORT")
      ("self-test", "the spec gate before a deploy: load and start the plugins (nothing "
                    "listens, a scratch profile database), run each plugin's own tests, the "
                    "security audit and the fuzz gate, print a report and exit 0, or 3 when a "
                    "test fails, on a High finding or a validator that throws")
      ("check", "the same gate as --self-test (its earlier name)")
      ("watch", "development: reload the plugin directory as a new generation whenever a "
                "library in it changes (once the changes settle)")
      ("branch", "the branch this server runs: it boots the branch's head from the registry and "
                 "swaps to each deploy to it (default prod; deploy.branch; docs/deploys.md)",
       cxxopts::value<std::string>(), "NAME")
      ("version", "print the version and exit")
      ("h,help", "print this help and exit");
  // clang-format on
  return options;
}

// The parsed flags as the server's options: each flag given overrides the configuration file.
molt::kernel::ServerOptions ServerOptionsOf(const cxxopts::ParseResult& args) {
  molt::kernel::ServerOptions server;
  server.plugin_dir =
      args.count("plugins") != 0 ? args["plugins"].as<std::string>() : DefaultPluginDir();
  server.data_dir = args["data"].as<std::string>();
  if (args.count("config") != 0) {
    server.config_file = args["config"].as<std::string>();
  }
  if (args.count("tick-rate") != 0) {
    server.tick_rate = args["tick-rate"].as<double>();
  }
  if (args.count("log-level") != 0) {
    server.log_level = args["log-level"].as<std::string>();
  }
  if (args.count("log-format") != 0) {
    server.log_format = args["log-format"].as<std::string>();
  }
  if (args.count("bind") != 0) {
    server.bind_address = args["bind"].as<std::string>();
  }
  if (args.count("tls-cert") != 0) {
    server.tls_cert = args["tls-cert"].as<std::string>();
  }
  if (args.count("tls-key") != 0) {
    server.tls_key = args["tls-key"].as<std::string>();
  }
  if (args.count("server-id") != 0) {
    server.server_id = args["server-id"].as<std::string>();
  }
  if (args.count("database") != 0) {
    server.database = args["database"].as<std::string>();
  }
  if (args.count("ws") != 0) {
    server.websocket = args["ws"].as<std::string>();
  }
  if (args.count("udp") != 0) {
    server.udp = args["udp"].as<std::string>();
  }
  if (args.count("admin") != 0) {
    server.admin = args["admin"].as<std::string>();
  }
  if (args.count("port") != 0) {
    server.port = args["port"].as<int>();
  }
  if (args.count("close-budget") != 0) {
    server.close_budget_seconds = args["close-budget"].as<double>();
  }
  if (args.count("branch") != 0) {
    server.branch = args["branch"].as<std::string>();
  }
  server.watch = args.count("watch") != 0;
  server.self_test = args.count("self-test") != 0;
  server.check = args.count("check") != 0;
  return server;
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options options = Flags();
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << "moltd: " << e.what() << "\nTry 'moltd --help'.\n";
    return 2;
  }
  if (args.count("help") != 0) {
    std::cout
        << options.help() << "\nExamples:\n"
        << "  moltd                              the bundled plugins, data in ./data\n"
        << "  moltd -p build/plugins -d /var/lib/molt --log-format json\n"
        << "  moltd --self-test -p build/plugins test, audit and fuzz a build before deploying "
           "it\n"
        << "  moltd --bind 0.0.0.0 --tls-cert cert.pem --tls-key key.pem\n"
        << "                                     accept clients from other machines, "
           "over TLS\n";
    return 0;
  }
  if (args.count("version") != 0) {
    std::cout << "moltd " << MOLT_VERSION << " (plugin ABI " << MOLT_ABI_VERSION_MAJOR << "."
              << MOLT_ABI_VERSION_MINOR << ")\n";
    return 0;
  }
  if (!args.unmatched().empty()) {
    std::cerr << "moltd: unexpected argument '" << args.unmatched()[0]
              << "'\nTry 'moltd --help'.\n";
    return 2;
  }
  return molt::kernel::RunServer(ServerOptionsOf(args));
}
