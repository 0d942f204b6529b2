// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/settings.h
//
// The server's settings, resolved once at boot from three layers: RunServer's options (moltd's
// flags) over the configuration file's "server", "scheduler", "net" and "profiles" sections over
// the defaults. Every value is checked here, so a typo or an out-of-range number stops the boot
// with one line naming the key, the value and what is accepted; nothing is applied as a side
// effect.
//
// Thread safety: a pure function; call it before the kernel boots.
#ifndef MOLT_KERNEL_SERVER_SETTINGS_H_
#define MOLT_KERNEL_SERVER_SETTINGS_H_

#include <molt/kernel/server.h>
#include <molt/kernel/status.h>

#include <string>

#include "kernel/src/analytics/analytics.h"
#include "kernel/src/core/config.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/net/network.h"
#include "kernel/src/server/close_phase.h"
#include "kernel/src/workers/workers_api.h"

namespace molt::kernel {

// Everything RunServer needs to boot, resolved.
struct Settings {
  double tick_rate = 60;
  double close_budget = ToSeconds(kCloseBudget);
  double health_errors = 3;   // server.health_errors
  double health_window = 30;  // server.health_window_seconds
  // server.diagnostics_seconds: the diagnostics window (docs/operations.md); 5 s, 1 s with --watch
  double diagnostics_seconds = 5;
  double error_window_seconds = 30;  // server.error_window_seconds: ErrorWatch's window
  // server.callback_deadline_seconds: how long a plugin's init, start, export_state,
  // import_state or stop (in a swap and at the close) may take before it is abandoned
  // (loader/plugin_host.h, close_phase.h).
  double callback_deadline = 5;
  // server.id, --server-id: this server's id in its fleet ("": the one kept in the data
  // directory); server.heartbeat_seconds: how often it reports itself (docs/fleet.md).
  std::string server_id;
  double heartbeat_seconds = 2;
  SchedulerConfig scheduler;
  std::string plugin_dir;
  std::string data_dir;
  net::NetOptions net;
  // --database, store.url (profiles.database names a file): a PostgreSQL URL or an SQLite file,
  // <data_dir>/profiles.db by default.
  std::string profiles_db;
  bool profiles_sync_full = false;  // profiles.synchronous = "full"
  double profiles_drain = 27;  // profiles.drain_seconds: the drain ends this long after the close
  analytics::AnalyticsOptions analytics;  // analytics.*: dir is <data_dir>/analytics
  workers::WorkersOptions workers;        // workers.*: threads, timeout, queue and detached caps
  // The admin endpoint: off, or where it listens; its token ("" : the data directory's
  // admin.token); whether a bind beyond loopback is allowed over plain HTTP.
  bool admin_enabled = true;
  std::string admin_address = "127.0.0.1";
  std::uint16_t admin_port = 7778;
  std::string admin_token;
  bool admin_allow_insecure_remote = false;
  // Deploys (docs/deploys.md): the branch this server runs (--branch, deploy.branch), its
  // trusted keys file (deploy.keys), whether deploys must be signed (deploy.require_signatures;
  // on for the prod branch), the largest build it takes (deploy.max_build_mb), how often it reads
  // the fleet's deployments without a notification (deploy.poll_seconds; docs/fleet.md).
  std::string branch = "prod";
  std::string deploy_keys;
  bool require_signatures = true;
  double max_build_mb = 1024;
  double deploy_poll_seconds = 60;
  LogLevel log_level = LogLevel::kInfo;
  ConsoleFormat log_format = ConsoleFormat::kText;
};

// Merges options.config_file into `config` (unknown keys of the server's sections are refused
// by name), resolves every setting into `out`, and records the resolved kernel keys in `config`
// ("server.tick_rate", "server.data_dir", "server.plugin_dir") for plugins' config_get.
Status ResolveSettings(const ServerOptions& options, Config& config, Settings* out);
// Merges the configuration JSON text `json` into `config` as a configuration file is merged:
// unknown keys of the server's sections are refused by name, with `source` saying where they
// came from (the plugin test kit's config_json).
Status MergeConfigJson(Config& config, std::string_view json, const std::string& source);
// Whether `id` may be a server's id: 1 to 64 of [A-Za-z0-9._-].
bool ValidServerId(std::string_view id);

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_SETTINGS_H_
