// SPDX-License-Identifier: Apache-2.0
// ResolveSettings: flags over the configuration file over the defaults, every value checked.
#include "kernel/src/server/settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <tuple>

#include "kernel/src/core/host_port.h"
#include "kernel/src/loader/build.h"

namespace molt::kernel {
namespace {

const std::set<std::string, std::less<>> kServerKeys = {"server.tick_rate",
                                                        "server.log_level",
                                                        "server.log_format",
                                                        "server.close_budget_seconds",
                                                        "server.plugin_dir",
                                                        "server.data_dir",
                                                        "server.health_errors",
                                                        "server.health_window_seconds",
                                                        "server.diagnostics_seconds",
                                                        "server.error_window_seconds",
                                                        "server.callback_deadline_seconds",
                                                        "server.id",
                                                        "server.heartbeat_seconds"};
const std::set<std::string, std::less<>> kProfileKeys = {
    "profiles.database", "profiles.synchronous", "profiles.drain_seconds"};
const std::set<std::string, std::less<>> kStoreKeys = {"store.url"};
const std::set<std::string, std::less<>> kAnalyticsKeys = {
    "analytics.flush_seconds",
    "analytics.max_per_minute",
    "analytics.seed",
    "analytics.rotate_bytes",
    "analytics.keep_files",
    "analytics.http_url",
    "analytics.http_retries",
    "analytics.http_backoff_seconds",
    "analytics.http_timeout_seconds"};  // and analytics.sample.<event>
const std::set<std::string, std::less<>> kWorkersKeys = {
    "workers.threads", "workers.timeout_seconds", "workers.queue_max", "workers.detached_max"};
const std::set<std::string, std::less<>> kDeployKeys = {
    "deploy.branch", "deploy.keys", "deploy.require_signatures", "deploy.max_build_mb",
    "deploy.poll_seconds"};
const std::set<std::string, std::less<>> kAdminKeys = {"admin.address", "admin.token",
                                                       "admin.allow_insecure_remote"};
const std::set<std::string, std::less<>> kSchedulerKeys = {
    "scheduler.budget_ms", "scheduler.target_frame_ms", "scheduler.profile_tasks",
    "scheduler.stagger_recurring"};

// net.* keys that take a number, with where each goes in NetOptions.
template <class T>
using NetField = T net::NetOptions::*;
struct NetNumber {
  const char* key;
  double min;
  double max;
  NetField<double> d = nullptr;
  NetField<std::uint32_t> u32 = nullptr;
  NetField<std::size_t> size = nullptr;
};
const NetNumber kNetNumbers[] = {
    {"net.max_frame_bytes", 64, 16 << 20, nullptr, &net::NetOptions::max_frame_bytes},
    {"net.bytes_per_tick", 64, 1 << 30, nullptr, &net::NetOptions::bytes_per_tick},
    {"net.messages_per_tick", 1, 1 << 20, nullptr, &net::NetOptions::messages_per_tick},
    {"net.budget_burst_ticks", 1, 1000, &net::NetOptions::budget_burst_ticks},
    {"net.max_outbound_bytes", 1024, 1u << 31, nullptr, nullptr,
     &net::NetOptions::max_outbound_bytes},
    {"net.handshake_timeout_seconds", 0.1, 3600, &net::NetOptions::handshake_timeout_seconds},
    {"net.max_half_open", 1, 1 << 20, nullptr, nullptr, &net::NetOptions::max_half_open},
    {"net.max_half_open_per_address", 1, 1 << 20, nullptr, nullptr,
     &net::NetOptions::max_half_open_per_address},
    {"net.handshakes_per_address", 0.01, 1e6, &net::NetOptions::handshakes_per_address},
    {"net.max_sessions", 1, 1 << 24, nullptr, nullptr, &net::NetOptions::max_sessions},
    {"net.ping_interval_seconds", 0.05, 3600, &net::NetOptions::ping_interval_seconds},
    {"net.idle_timeout_seconds", 0.1, 86400, &net::NetOptions::idle_timeout_seconds},
    {"net.resume_window_seconds", 0, 86400, &net::NetOptions::resume_window_seconds},
    {"net.offender_drop_first", 0, 1e6, nullptr, &net::NetOptions::offender_drop_first},
    {"net.offender_window_seconds", 0.1, 3600, &net::NetOptions::offender_window_seconds},
    {"net.offender_kick_after", 1, 1e9, nullptr, &net::NetOptions::offender_kick_after},
    {"net.error_frame_gap_seconds", 0, 3600, &net::NetOptions::error_frame_gap_seconds},
    {"net.refusal_log_seconds", 0, 86400, &net::NetOptions::refusal_log_seconds},
    {"net.descriptor_reserve", 0, 1 << 20, nullptr, nullptr, &net::NetOptions::descriptor_reserve},
    {"net.udp_public_port", 0, 65535, nullptr, &net::NetOptions::udp_public_port},
    {"net.udp_max_links", 1, 4095, nullptr, &net::NetOptions::udp_max_links},
    {"net.governor_good_rtt_ms", 0, 1e6, &net::NetOptions::governor_good_rtt_ms},
    {"net.governor_poor_rtt_ms", 0, 1e6, &net::NetOptions::governor_poor_rtt_ms},
    {"net.governor_good_jitter_ms", 0, 1e6, &net::NetOptions::governor_good_jitter_ms},
    {"net.governor_poor_jitter_ms", 0, 1e6, &net::NetOptions::governor_poor_jitter_ms},
    {"net.governor_good_loss", 0, 1, &net::NetOptions::governor_good_loss},
    {"net.governor_poor_loss", 0, 1, &net::NetOptions::governor_poor_loss},
    {"net.governor_up_after", 1, 3600, nullptr, &net::NetOptions::governor_up_after},
    {"net.governor_device_strained", 0, 16, &net::NetOptions::governor_device_strained},
    {"net.overload_seconds", 0, 3600, &net::NetOptions::overload_seconds},
    {"net.overload_retry_after_seconds", 0.1, 3600, &net::NetOptions::overload_retry_after_seconds},
};

std::set<std::string, std::less<>> NetKeys() {
  std::set<std::string, std::less<>> keys = {"net.bind",
                                             "net.port",
                                             "net.auth",
                                             "net.tls_cert",
                                             "net.tls_key",
                                             "net.websocket",
                                             "net.websocket_origins",
                                             "net.udp"};
  for (const NetNumber& n : kNetNumbers) {
    keys.insert(n.key);
  }
  return keys;
}

std::string Join(const std::set<std::string, std::less<>>& keys) {
  std::string s;
  for (const auto& k : keys) {
    s += (s.empty() ? "" : ", ") + k;
  }
  return s;
}

// Unknown keys in the sections the server reads are typos: refuse them by name.
Status CheckKeys(const Config& config, const std::string& source) {
  for (const std::string& key : config.Keys()) {
    const std::string section = key.substr(0, key.find('.'));
    if (section == "plugins") {
      continue;
    }
    if (section == "server" && kServerKeys.count(key) == 0) {
      return Status::InvalidArgument(source + ": unknown key \"" + key +
                                     "\" (known: " + Join(kServerKeys) + ")");
    }
    if (section == "scheduler" && kSchedulerKeys.count(key) == 0) {
      return Status::InvalidArgument(source + ": unknown key \"" + key +
                                     "\" (known: " + Join(kSchedulerKeys) + ")");
    }
    if (section == "net" && NetKeys().count(key) == 0) {
      return Status::InvalidArgument(source + ": unknown key \"" + key +
                                     "\" (known: " + Join(NetKeys()) + ")");
    }
    if (section == "profiles" && kProfileKeys.count(key) == 0) {
      return Status::InvalidArgument(source + ": unknown key \"" + key +
                                     "\" (known: " + Join(kProfileKeys) + ")");
    }
    if (section == "store" && kStoreKeys.count(key) == 0) {
      return Status::InvalidArgument(source + ": unknown key \"" + key +
                                     "\" (known: " + Join(kStoreKeys) + ")");
    }
    if (section == "admin" && kAdminKeys.count(key) == 0) {
      return Status::InvalidArgument(source + ": unknown key \"" + key +
                                     "\" (known: " + Join(kAdminKeys) + ")");
    }
    if (section == "analytics" && kAnalyticsKeys.count(key) == 0 &&
        key.rfind("analytics.sample.", 0) != 0) {
      return Status::InvalidArgument(source + ": unknown key \"" + key + "\" (known: " +
                                     Join(kAnalyticsKeys) + ", analytics.sample.<event>)");
    }
    if (section == "workers" && kWorkersKeys.count(key) == 0) {
      return Status::InvalidArgument(source + ": unknown key \"" + key +
                                     "\" (known: " + Join(kWorkersKeys) + ")");
    }
    if (section == "deploy" && kDeployKeys.count(key) == 0) {
      return Status::InvalidArgument(source + ": unknown key \"" + key +
                                     "\" (deploy takes branch, keys, require_signatures, "
                                     "max_build_mb)");
    }
    if (section != "server" && section != "scheduler" && section != "net" &&
        section != "profiles" && section != "store" && section != "admin" && section != "deploy" &&
        section != "analytics" && section != "workers") {
      return Status::InvalidArgument(source + ": unknown section \"" + section +
                                     "\" (known: server, scheduler, net, profiles, store, admin, "
                                     "deploy, analytics, workers, plugins)");
    }
  }
  return Status::Ok();
}

Result<double> Number(const Config& config, const std::string& key) {
  const Config::Scalar* v = config.Get(key);
  if (const auto* i = std::get_if<std::int64_t>(v)) {
    return static_cast<double>(*i);
  }
  if (const auto* d = std::get_if<double>(v)) {
    return *d;
  }
  return Status::InvalidArgument("configuration key \"" + key + "\" must be a number");
}

std::optional<std::string> Text(const Config& config, const std::string& key) {
  if (const auto* s = std::get_if<std::string>(config.Get(key))) {
    return *s;
  }
  return std::nullopt;
}

// A number from the flag when given, else from the configuration key when set, else `fallback`.
Result<double> FlagOrNumber(const std::optional<double>& flag, const Config& config,
                            const std::string& key, double fallback) {
  if (flag) {
    return *flag;
  }
  if (config.Get(key) != nullptr) {
    return Number(config, key);
  }
  return fallback;
}

// A true/false configuration key, when set.
Status Flag(const Config& config, const std::string& key, bool* out) {
  if (const Config::Scalar* v = config.Get(key)) {
    if (!std::holds_alternative<bool>(*v)) {
      return Status::InvalidArgument("configuration key \"" + key + "\" must be true or false");
    }
    *out = std::get<bool>(*v);
  }
  return Status::Ok();
}

Status ResolveNet(const ServerOptions& options, const Config& config, net::NetOptions* out) {
  out->bind_address =
      options.bind_address.value_or(Text(config, "net.bind").value_or(out->bind_address));
  out->tls_cert_file = options.tls_cert.value_or(Text(config, "net.tls_cert").value_or(""));
  out->tls_key_file = options.tls_key.value_or(Text(config, "net.tls_key").value_or(""));
  out->websocket = options.websocket.value_or(Text(config, "net.websocket").value_or(""));
  out->udp = options.udp.value_or(Text(config, "net.udp").value_or(""));
  // "https://a.example, https://b.example": one string, as every key here is a scalar.
  const std::string origins = Text(config, "net.websocket_origins").value_or("");
  for (std::size_t at = 0; at < origins.size();) {
    const std::size_t end = std::min(origins.find_first_of(", ", at), origins.size());
    if (end > at) {
      out->websocket_origins.push_back(origins.substr(at, end - at));
    }
    at = end + 1;
  }
  const std::optional<double> flag =
      options.port ? std::optional<double>(*options.port) : std::nullopt;
  MOLT_ASSIGN_OR_RETURN(const double port, FlagOrNumber(flag, config, "net.port", out->port));
  if (!(port >= 0 && port <= 65535) || port != std::floor(port)) {
    return Status::InvalidArgument(
        fmt::format("port {} is out of range: use 0..65535 (0 picks a free port)", port));
  }
  out->port = static_cast<std::uint16_t>(port);
  const std::string auth = Text(config, "net.auth").value_or("dev");
  if (auth != "dev" && auth != "production") {
    return Status::InvalidArgument("net.auth \"" + auth + "\" is unknown: use dev or production");
  }
  out->auth = auth == "dev" ? net::AuthMode::kDev : net::AuthMode::kProduction;
  for (const NetNumber& n : kNetNumbers) {
    if (config.Get(n.key) == nullptr) {
      continue;
    }
    MOLT_ASSIGN_OR_RETURN(const double v, Number(config, n.key));
    if (!(v >= n.min && v <= n.max)) {
      return Status::InvalidArgument(fmt::format(
          "configuration key \"{}\" = {} is out of range: use {}..{}", n.key, v, n.min, n.max));
    }
    if (n.d != nullptr) {
      out->*n.d = v;
    } else if (n.u32 != nullptr) {
      out->*n.u32 = static_cast<std::uint32_t>(v);
    } else {
      out->*n.size = static_cast<std::size_t>(v);
    }
  }
  return Status::Ok();
}

bool IsLoopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "::1" || address == "localhost";
}

// The admin endpoint: "ADDRESS:PORT" ("[::1]:7778" for IPv6) or "off".
Status ResolveAdmin(const ServerOptions& options, const Config& config, Settings* out) {
  const std::string where =
      options.admin.value_or(Text(config, "admin.address").value_or("127.0.0.1:7778"));
  out->admin_token = Text(config, "admin.token").value_or("");
  if (!out->admin_token.empty() && out->admin_token.size() < 16) {
    return Status::InvalidArgument(
        "admin.token is too short to guard the admin endpoint: use 16 characters or more");
  }
  MOLT_RETURN_IF_ERROR(
      Flag(config, "admin.allow_insecure_remote", &out->admin_allow_insecure_remote));
  if (where == "off") {
    out->admin_enabled = false;
    return Status::Ok();
  }
  std::string host;
  std::uint16_t port = 0;
  if (!SplitHostPort(where, &host, &port)) {
    return Status::InvalidArgument("admin endpoint \"" + where +
                                   "\" is not ADDRESS:PORT (e.g. 127.0.0.1:7778) or off");
  }
  if (!IsLoopback(host) && !out->admin_allow_insecure_remote) {
    return Status::InvalidArgument(
        "admin endpoint " + where +
        " is beyond loopback and speaks plain HTTP, so its token would cross the network in "
        "clear: keep it on 127.0.0.1 and reach it through an SSH tunnel or a TLS proxy, or set "
        "admin.allow_insecure_remote to true in the configuration if that network is private");
  }
  out->admin_address = host == "localhost" ? "127.0.0.1" : host;
  out->admin_port = port;
  return Status::Ok();
}

// "server": the tick rate, the close budget, the health, diagnostics and error windows, logging
// and the directories.
Status ResolveServer(const ServerOptions& options, const Config& config, Settings* out) {
  MOLT_ASSIGN_OR_RETURN(const double tick,
                        FlagOrNumber(options.tick_rate, config, "server.tick_rate", 60));
  if (!std::isfinite(tick) || tick <= 0 || tick > 10000) {
    return Status::InvalidArgument(
        fmt::format("tick rate {} Hz is out of range: use a value in (0, 10000]", tick));
  }
  out->tick_rate = tick;
  MOLT_ASSIGN_OR_RETURN(const double budget,
                        FlagOrNumber(options.close_budget_seconds, config,
                                     "server.close_budget_seconds", out->close_budget));
  if (!std::isfinite(budget) || budget <= 0) {
    return Status::InvalidArgument("close budget must be a number of seconds above 0");
  }
  out->close_budget = budget;
  // The health window a build gets when its manifest sets none (docs/generations.md), and the
  // diagnostics window (1 s in development: --watch).
  out->diagnostics_seconds = options.watch ? 1 : 5;
  for (auto [key, lo, hi, field] :
       {std::tuple{"server.health_errors", loader::kHealthErrorsMin, loader::kHealthErrorsMax,
                   &out->health_errors},
        std::tuple{"server.health_window_seconds", loader::kHealthWindowMinSeconds,
                   loader::kHealthWindowMaxSeconds, &out->health_window},
        std::tuple{"server.diagnostics_seconds", 0.1, 3600.0, &out->diagnostics_seconds},
        std::tuple{"server.error_window_seconds", 0.1, 3600.0, &out->error_window_seconds},
        std::tuple{"server.callback_deadline_seconds", 0.1, 300.0, &out->callback_deadline},
        std::tuple{"server.heartbeat_seconds", 0.05, 60.0, &out->heartbeat_seconds}}) {
    if (config.Get(key) == nullptr) {
      continue;
    }
    MOLT_ASSIGN_OR_RETURN(const double v, Number(config, key));
    if (!(v >= lo && v <= hi)) {
      return Status::InvalidArgument(
          fmt::format("configuration key \"{}\" is {}: use {} to {}", key, v, lo, hi));
    }
    *field = v;
  }
  // The server's id in its fleet (docs/fleet.md): "" here means the one kept in the data
  // directory, made at the first start (the server reads or writes it as it starts).
  out->server_id = options.server_id.value_or(Text(config, "server.id").value_or(""));
  if (!out->server_id.empty() && !ValidServerId(out->server_id)) {
    return Status::InvalidArgument("server id \"" + out->server_id +
                                   "\" is not 1 to 64 of [A-Za-z0-9._-]");
  }
  const std::string level =
      options.log_level.value_or(Text(config, "server.log_level").value_or("info"));
  if (!ParseLogLevel(level, &out->log_level)) {
    return Status::InvalidArgument("log level \"" + level +
                                   "\" is unknown: use debug, info, warn, error or off");
  }
  const std::string format =
      options.log_format.value_or(Text(config, "server.log_format").value_or("text"));
  if (format != "text" && format != "json") {
    return Status::InvalidArgument("log format \"" + format + "\" is unknown: use text or json");
  }
  out->log_format = format == "json" ? ConsoleFormat::kJson : ConsoleFormat::kText;
  out->plugin_dir = !options.plugin_dir.empty()
                        ? options.plugin_dir
                        : Text(config, "server.plugin_dir").value_or(std::string());
  if (out->plugin_dir.empty()) {
    return Status::InvalidArgument("no plugin directory: pass --plugins DIR");
  }
  out->data_dir = options.data_dir;
  return Status::Ok();
}

// "scheduler": the step budget, the frame target, task profiling, staggered recurring tasks.
Status ResolveScheduler(const Config& config, SchedulerConfig* out) {
  for (auto [key, field] : {std::pair{"scheduler.budget_ms", &out->budget},
                            std::pair{"scheduler.target_frame_ms", &out->target_frame}}) {
    if (config.Get(key) == nullptr) {
      continue;
    }
    MOLT_ASSIGN_OR_RETURN(const double ms, Number(config, key));
    if (!std::isfinite(ms) || ms <= 0) {
      return Status::InvalidArgument(std::string("configuration key \"") + key +
                                     "\" must be a number of milliseconds above 0");
    }
    *field = Seconds(ms / 1000);
  }
  MOLT_RETURN_IF_ERROR(Flag(config, "scheduler.profile_tasks", &out->profile_tasks));
  return Flag(config, "scheduler.stagger_recurring", &out->stagger_recurring);
}

// "profiles" and "store": the database (--database, store.url: a PostgreSQL URL or an SQLite
// file; the older profiles.database names a file), its durability, the close drain's budget.
Status ResolveProfiles(const ServerOptions& options, const Config& config, Settings* out) {
  out->profiles_db = options.database.value_or(
      Text(config, "store.url")
          .value_or(
              Text(config, "profiles.database")
                  .value_or((std::filesystem::path(out->data_dir) / "profiles.db").string())));
  if (out->profiles_db.empty()) {
    return Status::InvalidArgument(
        "the database is empty: give --database (store.url) a PostgreSQL URL "
        "(postgresql://...) or an SQLite file, or leave it out for DATA/profiles.db");
  }
  const std::string sync = Text(config, "profiles.synchronous").value_or("normal");
  if (sync != "normal" && sync != "full") {
    return Status::InvalidArgument("profiles.synchronous \"" + sync +
                                   "\" is unknown: use normal (WAL's default: a power loss may "
                                   "undo the last saves) or full (every save survives it)");
  }
  out->profiles_sync_full = sync == "full";
  if (config.Get("profiles.drain_seconds") != nullptr) {
    MOLT_ASSIGN_OR_RETURN(const double v, Number(config, "profiles.drain_seconds"));
    if (!(v >= 1 && v <= 3600)) {
      return Status::InvalidArgument(
          fmt::format("configuration key \"profiles.drain_seconds\" is {}: use 1 to 3600", v));
    }
    out->profiles_drain = v;
  }
  return Status::Ok();
}

// "analytics": the flush delay, the per-minute cap, sampling, the seed, rotation, the endpoint.
Status ResolveAnalytics(const Config& config, Settings* out) {
  analytics::AnalyticsOptions& a = out->analytics;
  a.dir = (std::filesystem::path(out->data_dir) / "analytics").string();
  auto number = [&config](const char* key, double min, double max, double* v) -> Status {
    if (config.Get(key) == nullptr) {
      return Status::Ok();
    }
    MOLT_ASSIGN_OR_RETURN(*v, Number(config, key));
    if (!(*v >= min && *v <= max)) {
      return Status::InvalidArgument(
          fmt::format("configuration key \"{}\" is {}: use {} to {}", key, *v, min, max));
    }
    return Status::Ok();
  };
  double flush = 10, cap = a.max_per_minute, seed = 0, rotate = static_cast<double>(a.rotate_bytes),
         keep = a.keep_files;
  MOLT_RETURN_IF_ERROR(number("analytics.flush_seconds", 0.01, 3600, &flush));
  MOLT_RETURN_IF_ERROR(number("analytics.max_per_minute", 0, 1e9, &cap));
  MOLT_RETURN_IF_ERROR(number("analytics.seed", 0, 9e15, &seed));
  MOLT_RETURN_IF_ERROR(number("analytics.rotate_bytes", 4096, 1e12, &rotate));
  MOLT_RETURN_IF_ERROR(number("analytics.keep_files", 0, 10000, &keep));
  a.flush_after = Seconds(flush);
  a.max_per_minute = static_cast<std::uint32_t>(cap);
  a.seed = static_cast<std::uint64_t>(seed);
  a.rotate_bytes = static_cast<std::uint64_t>(rotate);
  a.keep_files = static_cast<std::uint32_t>(keep);
  const std::optional<std::string> url = Text(config, "analytics.http_url");
  if (!url && config.Get("analytics.http_url") != nullptr) {
    return Status::InvalidArgument(
        "configuration key \"analytics.http_url\" must be a string (http://HOST[:PORT][/PATH])");
  }
  if (url && !url->empty()) {
    MOLT_ASSIGN_OR_RETURN(a.http, analytics::ParseHttpUrl(*url));
  }
  double retries = a.http_retries, backoff = 1, timeout = 10;
  MOLT_RETURN_IF_ERROR(number("analytics.http_retries", 0, 100, &retries));
  MOLT_RETURN_IF_ERROR(number("analytics.http_backoff_seconds", 0.001, 600, &backoff));
  MOLT_RETURN_IF_ERROR(number("analytics.http_timeout_seconds", 0.1, 600, &timeout));
  if (retries != std::floor(retries)) {
    return Status::InvalidArgument(fmt::format(
        "configuration key \"analytics.http_retries\" is {}: use a whole number", retries));
  }
  a.http_retries = static_cast<std::uint32_t>(retries);
  a.http_backoff = Seconds(backoff);
  a.http_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout * 1000));
  constexpr std::string_view kSample = "analytics.sample.";
  for (const std::string& key : config.Keys()) {
    if (key.rfind(kSample, 0) == 0) {
      double share = 1;
      MOLT_RETURN_IF_ERROR(number(key.c_str(), 0, 1, &share));
      a.sample[key.substr(kSample.size())] = share;
    }
  }
  return Status::Ok();
}

// "workers": the pool's threads, the default job timeout, the queue's and detached jobs' caps.
Status ResolveWorkers(const Config& config, Settings* out) {
  workers::WorkersOptions& w = out->workers;
  auto number = [&config](const char* key, double min, double max, double* v) -> Status {
    if (config.Get(key) == nullptr) {
      return Status::Ok();
    }
    MOLT_ASSIGN_OR_RETURN(*v, Number(config, key));
    if (!(*v >= min && *v <= max) || (min >= 1 && *v != std::floor(*v))) {
      return Status::InvalidArgument(fmt::format("configuration key \"{}\" is {}: use {} to {}{}",
                                                 key, *v, min, max,
                                                 min >= 1 ? " (a whole number)" : ""));
    }
    return Status::Ok();
  };
  double threads = static_cast<double>(w.threads), timeout = ToSeconds(w.timeout),
         queue = static_cast<double>(w.queue_max), detached = static_cast<double>(w.detached_max);
  MOLT_RETURN_IF_ERROR(number("workers.threads", 1, 256, &threads));  // unset: 0, cores - 1
  MOLT_RETURN_IF_ERROR(number("workers.timeout_seconds", 0.001, 86400, &timeout));
  MOLT_RETURN_IF_ERROR(number("workers.queue_max", 1, 1e7, &queue));
  MOLT_RETURN_IF_ERROR(number("workers.detached_max", 1, 1e6, &detached));
  w.threads = static_cast<std::size_t>(threads);
  w.timeout = Seconds(timeout);
  w.queue_max = static_cast<std::size_t>(queue);
  w.detached_max = static_cast<std::size_t>(detached);
  return Status::Ok();
}

// "deploy": the branch this server runs, its trusted keys, its rules, the build size cap.
Status ResolveDeploy(const ServerOptions& options, const Config& config, Settings* out) {
  out->branch = options.branch.value_or(Text(config, "deploy.branch").value_or("prod"));
  out->deploy_keys = Text(config, "deploy.keys").value_or("");
  out->require_signatures = out->branch == "prod";  // the prod branch is prod-channel
  MOLT_RETURN_IF_ERROR(Flag(config, "deploy.require_signatures", &out->require_signatures));
  if (config.Get("deploy.max_build_mb") != nullptr) {
    MOLT_ASSIGN_OR_RETURN(const double v, Number(config, "deploy.max_build_mb"));
    if (!(v >= 1 && v <= 1024)) {
      return Status::InvalidArgument(
          fmt::format("configuration key \"deploy.max_build_mb\" is {}: use 1 to 1024", v));
    }
    out->max_build_mb = v;
  }
  if (config.Get("deploy.poll_seconds") != nullptr) {
    MOLT_ASSIGN_OR_RETURN(const double v, Number(config, "deploy.poll_seconds"));
    if (!(v >= 0.1 && v <= 3600)) {
      return Status::InvalidArgument(
          fmt::format("configuration key \"deploy.poll_seconds\" is {}: use 0.1 to 3600", v));
    }
    out->deploy_poll_seconds = v;
  }
  return Status::Ok();
}

}  // namespace

Status ResolveSettings(const ServerOptions& options, Config& config, Settings* out) {
  if (!options.config_file.empty()) {
    MOLT_RETURN_IF_ERROR(config.MergeJsonFile(options.config_file));
    MOLT_RETURN_IF_ERROR(CheckKeys(config, "config file \"" + options.config_file + "\""));
  }
  MOLT_RETURN_IF_ERROR(ResolveServer(options, config, out));
  MOLT_RETURN_IF_ERROR(ResolveScheduler(config, &out->scheduler));
  MOLT_RETURN_IF_ERROR(ResolveProfiles(options, config, out));
  MOLT_RETURN_IF_ERROR(ResolveAnalytics(config, out));
  MOLT_RETURN_IF_ERROR(ResolveWorkers(config, out));
  MOLT_RETURN_IF_ERROR(ResolveNet(options, config, &out->net));
  MOLT_RETURN_IF_ERROR(ResolveAdmin(options, config, out));
  MOLT_RETURN_IF_ERROR(ResolveDeploy(options, config, out));
  out->net.tick_rate = out->tick_rate;
  config.Set("server.tick_rate", out->tick_rate);
  config.Set("server.data_dir", out->data_dir);
  config.Set("server.plugin_dir", out->plugin_dir);
  return Status::Ok();
}

bool ValidServerId(std::string_view id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
  });
}

Status MergeConfigJson(Config& config, std::string_view json, const std::string& source) {
  MOLT_RETURN_IF_ERROR(config.MergeJson(json, source));
  return CheckKeys(config, source);
}

}  // namespace molt::kernel
