// SPDX-License-Identifier: Apache-2.0
// File: molt/kernel/server.h
//
// The server host in one call: what moltd runs, and what an embedding host can run instead of
// writing its own main. RunServer boots the kernel, loads and starts every plugin of a directory,
// serves until SIGTERM or SIGINT (SIGHUP swaps in the plugin directory again as a new generation,
// docs/generations.md), then runs the close phase (Kernel.Closing, every service stop in
// reverse boot order within the close budget, Kernel.Stopped) and returns the exit code.
//
// Thread safety: call from the main thread; it becomes the kernel thread until it returns.
#ifndef MOLT_KERNEL_SERVER_H_
#define MOLT_KERNEL_SERVER_H_

#include <optional>
#include <string>

namespace molt::kernel {

struct ServerOptions {
  std::string plugin_dir;         // every *.so here is loaded (required)
  std::string data_dir = "data";  // created when missing
  std::string config_file;        // optional JSON configuration
  // Unset fields fall back to the configuration file ("server.<field>"), then to the defaults.
  std::optional<double> tick_rate;             // Hz; default 60
  std::optional<std::string> log_level;        // debug, info, warn, error, off; default info
  std::optional<std::string> log_format;       // text or json; default text
  std::optional<double> close_budget_seconds;  // default 25
  std::optional<std::string> bind_address;     // default 127.0.0.1 (net.bind)
  std::optional<int> port;                     // default 7777, 0 picks a free port (net.port)
  std::optional<std::string> tls_cert;         // PEM certificate chain: clients speak TLS
  std::optional<std::string> tls_key;          // its PEM private key (net.tls_cert, net.tls_key)
  std::optional<std::string> websocket;  // ADDRESS:PORT of a WebSocket endpoint (net.websocket)
  std::optional<std::string> udp;        // ADDRESS:PORT of the sessions' datagram links (net.udp)
  // Where profiles live (store.url): a PostgreSQL URL (postgresql://..., or libpq's key=value
  // form) that many servers share (docs/fleet.md), or an SQLite file; default
  // <data_dir>/profiles.db.
  std::optional<std::string> database;
  // This server's id in its fleet (server.id; docs/fleet.md): 1 to 64 of [A-Za-z0-9._-]. Unset,
  // one is made at the first start and kept in <data_dir>/server.id.
  std::optional<std::string> server_id;
  // The admin endpoint (docs/operations.md): "ADDRESS:PORT" or "off"; default 127.0.0.1:7778
  // (admin.address). Port 0 picks a free one and logs it.
  std::optional<std::string> admin;
  // Development: reload the plugin directory as a new generation whenever a library in it (or
  // its manifest) is written, moved in or removed, once the changes settle (300 ms).
  bool watch = false;
  // The gate an operator runs before deploying (the spec gate): load and start the plugins
  // (beside a scratch profile database, nothing listening), run their own tests, the security
  // audit and the fuzz gate, print a report to stdout, stop them and return kExitOk or
  // kExitCheckFailed.
  bool check = false;
  // The same gate (check is implied), asked for by its spec name, moltd --self-test: the report
  // is named after it.
  bool self_test = false;
  // The branch this server runs (deploy.branch; default prod): it boots the branch's head from
  // the registry in the data directory, and the plugin directory when the branch has none.
  std::optional<std::string> branch;
};

// Exit codes of RunServer (moltd --help lists them).
inline constexpr int kExitOk = 0;
inline constexpr int kExitBootFailed = 1;   // bad configuration, refused plugins, failed boot
inline constexpr int kExitCheckFailed = 3;  // check: a self-test failed, a High finding, a throw
// Closed with every profile saved, but a service's stop overran its deadline and was cut (the
// log names it, its generation and how long it ran): its own clean-up may not have finished.
inline constexpr int kExitStopOverran = 4;
// The close did not finish its work: final saves refused (their leases were lost) or still
// pending at the drain's deadline, or the kernel thread stuck past the close's last deadline (the
// process ends from the watchdog). The log names what stays unsaved: those profiles keep their
// last autosave.
inline constexpr int kExitCloseCut = 5;

// Runs the server; returns kExitOk after a clean close, kExitBootFailed (with the reason logged)
// when it could not start, kExitStopOverran or kExitCloseCut after a close that was not clean.
// A close stuck past its last deadline ends the process with kExitCloseCut from the watchdog.
int RunServer(const ServerOptions& options);

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_H_
