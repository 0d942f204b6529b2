// SPDX-License-Identifier: Apache-2.0
// RunServer: settings, kernel, plugins, signals, close phase, teardown.
#include <fmt/format.h>
#include <molt/kernel/server.h>
#include <molt/scope_exit.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "kernel/src/admin/admin_api.h"
#include "kernel/src/admin/debug_bundle.h"
#include "kernel/src/admin/diagnostics.h"
#include "kernel/src/admin/http_server.h"
#include "kernel/src/admin/log_ring.h"
#include "kernel/src/admin/stats_json.h"
#include "kernel/src/core/error_watch.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/audit.h"
#include "kernel/src/net/net_api.h"
#include "kernel/src/net/network.h"
#include "kernel/src/server/close_phase.h"
#include "kernel/src/server/dir_watcher.h"
#include "kernel/src/server/settings.h"
#include "kernel/src/server/signal_watcher.h"
#include "kernel/src/store/profile_api.h"
#include "kernel/src/store/profile_registry.h"
#include "kernel/src/store/sqlite_store.h"

namespace molt::kernel {
namespace {

namespace fs = std::filesystem;

// --watch: how long the plugin directory must stay quiet before a reload (a build writes several
// files, and a linker writes one in several steps).
constexpr Duration kWatchSettle = std::chrono::milliseconds(300);

// Every connection is a descriptor: the soft limit (often 1024) goes up to the hard one, and the
// figure is logged, with a warning when it cannot hold net.max_sessions.
void RaiseDescriptorLimit(const Settings& settings, const LogScope& log) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return;
  }
  const rlim_t before = limit.rlim_cur;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      limit.rlim_cur = before;
    }
  }
  const auto now = static_cast<unsigned long long>(limit.rlim_cur);
  if (limit.rlim_cur != before) {
    log.Info("file descriptors: {} (the soft limit was {}; raised to the hard limit)", now,
             static_cast<unsigned long long>(before));
  } else {
    log.Info("file descriptors: {}", now);
  }
  // Sessions, half-open connections and the process's own files (plugins, the database, logs).
  const std::size_t wanted = settings.net.max_sessions + settings.net.max_half_open + 64;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < wanted) {
    log.Warn(
        "file descriptors: {} cannot hold net.max_sessions ({}) and net.max_half_open ({}): "
        "connections past it are refused; raise the hard limit (ulimit -Hn, LimitNOFILE= in a "
        "systemd unit) to {} or more",
        now, settings.net.max_sessions, settings.net.max_half_open, wanted);
  }
}

// Removes copy directories of moltd processes that no longer exist (a kill -9 leaves them).
void RemoveStaleRunDirs(const fs::path& run_root) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(run_root, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("moltd-", 0) != 0) {
      continue;
    }
    const long pid = std::strtol(name.c_str() + 6, nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      fs::remove_all(e.path(), ec);
    }
  }
}

// The close drain: every profile's final save and lease release, then `done`; at `deadline` (the
// drain's budget, counted from the close) `done` runs anyway, naming what is still unsaved.
void DrainProfiles(Kernel& kernel, store::ProfileRegistry& profiles, TimePoint deadline,
                   std::function<void()> done) {
  struct State {
    std::function<void()> done;
    TaskHandle timer;
    bool finished = false;
  };
  auto state = std::make_shared<State>();
  state->done = std::move(done);
  auto finish = [state] {
    if (!std::exchange(state->finished, true)) {
      state->timer.Cancel();
      state->done();
    }
  };
  const TimePoint t0 = RealNow();
  const Duration left = std::max<Duration>(deadline - t0, Duration::zero());
  state->timer = kernel.scheduler().After(
      left,
      [finish, left] {
        LogScope("Profiles")
            .Error(
                "the close drain did not finish in its {:.1f} s: the server exits now and the "
                "profiles not yet written keep only their last autosave (raise "
                "profiles.drain_seconds, or free the database's disk)",
                ToSeconds(left));
        finish();
      },
      Priority::kKernel, TaskOrigin::Named("profile drain deadline"));
  profiles.Drain([finish, t0](std::size_t saved, std::size_t failed) {
    LogScope("Profiles")
        .Info("close drain done in {:.1f}ms: {} profiles saved{}", ToSeconds(RealNow() - t0) * 1000,
              saved,
              failed > 0 ? fmt::format(", {} refused (their leases were lost)", failed) : "");
    finish();
  });
}

// --check: the security audit and the fuzz gate over what the plugins declared, as a report on
// stdout. Fails on a High finding or a validator that throws.
int Check(const std::string& plugin_dir, const loader::PluginHost& plugins, net::Network& network,
          Kernel& kernel) {
  std::string loaded;
  for (const loader::PluginHost::Plugin& p : plugins.plugins()) {
    loaded += fmt::format("{}{} {}", loaded.empty() ? "" : ", ", p.instance->name(),
                          p.instance->info().version);
  }
  std::string report = fmt::format("moltd --check {}\n  plugins: {} loaded and started ({})\n",
                                   plugin_dir, plugins.plugins().size(), loaded);
  const std::vector<net::AuditFinding> findings =
      net::SecurityAudit(network.channels(), kernel.hooks());
  std::size_t high = 0;
  report += findings.empty() ? "  security audit: clean\n"
                             : fmt::format("  security audit: {} finding(s)\n", findings.size());
  for (const net::AuditFinding& f : findings) {
    high += f.severity == net::AuditFinding::Severity::kHigh;
    report += "    " + net::FormatFinding(f) + "\n";
  }
  const net::FuzzReport fuzz = net::Fuzz(network.channels(), kernel.hooks(), 0);
  report += fmt::format(
      "  fuzz gate: {} channel(s), {} hostile payloads: {} passed, {} rejected, {} validator "
      "error(s)\n",
      fuzz.channels, fuzz.cases, fuzz.passed, fuzz.rejected, fuzz.validator_errors.size());
  // Each distinct error once, with how often it happened.
  std::vector<std::pair<const net::FuzzReport::Error*, std::size_t>> distinct;
  std::set<std::string> failing_channels;
  for (const net::FuzzReport::Error& e : fuzz.validator_errors) {
    failing_channels.insert(e.channel);
    auto same = std::find_if(distinct.begin(), distinct.end(), [&](const auto& d) {
      return d.first->channel == e.channel && d.first->error == e.error;
    });
    if (same != distinct.end()) {
      ++same->second;
    } else {
      distinct.emplace_back(&e, 1);
    }
  }
  for (const auto& [e, count] : distinct) {
    report += fmt::format("    channel \"{}\": {}{} (validators must reject, not throw)\n",
                          e->channel, e->error, count > 1 ? fmt::format(" (x{})", count) : "");
  }
  const bool passed = high == 0 && failing_channels.empty();
  if (passed) {
    report += "check passed\n";
  } else {
    report += fmt::format("check failed: {} High finding(s), validators threw on {} channel(s)\n",
                          high, failing_channels.size());
  }
  std::fputs(report.c_str(), stdout);
  std::fflush(stdout);
  return passed ? kExitOk : kExitCheckFailed;
}

}  // namespace

int RunServer(const ServerOptions& options) {
  admin::LogRing log_ring;  // the newest lines, for the admin API
  LogScope log("molt");
  Config config;
  Settings settings;
  if (Status s = ResolveSettings(options, config, &settings); !s.ok()) {
    log.Error("cannot start: {}", s.message());
    return kExitBootFailed;
  }
  Logger::Get().SetLevel(settings.log_level);
  Logger::Get().SetConsoleFormat(settings.log_format);
  std::error_code ec;
  fs::create_directories(settings.data_dir, ec);
  if (ec) {
    log.Error("cannot start: data directory \"{}\" cannot be created: {}", settings.data_dir,
              ec.message());
    return kExitBootFailed;
  }
  RaiseDescriptorLimit(settings, log);
  const std::string token_file = (fs::path(settings.data_dir) / "admin.token").string();
  std::string admin_token;
  if (settings.admin_enabled && !options.check) {
    Result<std::string> token = admin::LoadAdminToken(token_file, settings.admin_token);
    if (!token.ok()) {
      log.Error("cannot start: {}", token.status().message());
      return kExitBootFailed;
    }
    admin_token = std::move(token).value();
  }
  const fs::path run_root = fs::path(settings.data_dir) / "run";
  RemoveStaleRunDirs(run_root);
  const fs::path copy_dir = run_root / ("moltd-" + std::to_string(::getpid()));
  if (options.check) {  // nothing of the live server is touched: a scratch database
    fs::create_directories(run_root, ec);
    settings.profiles_db = copy_dir.string() + "-check.db";
  }

  KernelOptions ko;
  ko.role = Role::kServer;
  ko.scheduler = settings.scheduler;
  ko.tick_rate = settings.tick_rate;
  ko.config = std::move(config);
  Result<std::unique_ptr<Kernel>> booted = Kernel::Boot(std::move(ko));
  if (!booted.ok()) {
    log.Error("cannot start: {}", booted.status().message());
    return kExitBootFailed;
  }
  Kernel& kernel = **booted;
  // The profile database, on its own thread; its results come back through the kernel loop.
  store::SqliteOptions so;
  so.synchronous_full = settings.profiles_sync_full;
  Result<std::unique_ptr<store::SqliteStore>> opened = store::SqliteStore::Open(
      settings.profiles_db,
      [&kernel](std::function<void()> fn) { kernel.loop().Post(std::move(fn)); }, so);
  if (!opened.ok()) {
    log.Error("cannot start: {}", opened.status().message());
    return kExitBootFailed;
  }
  const std::unique_ptr<store::SqliteStore> profile_db = std::move(opened).value();
  int exit_code = kExitOk;
  {
    // Repeated warnings and errors become one line per window, and Kernel.ScriptError.
    ErrorWatch error_watch(kernel, Seconds(settings.error_window_seconds));
    net::Network network(kernel, settings.net);
    kernel.AddStatsSection("net", [&network](boost::json::object& section) {
      section = admin::NetJson(network.Snapshot());
    });
    ScopeExit drop_net_stats = [&kernel]() noexcept { kernel.RemoveStatsSection("net"); };
    store::ProfileRegistry profiles(kernel, network, *profile_db, store::HostId());
    loader::PluginHost plugins(kernel, copy_dir.string());
    abi::AttachNetwork(plugins.shared(), &network);
    abi::AttachProfiles(plugins.shared(), profiles);
    if (!options.check) {
      profiles.ReclaimAbandoned();  // a killed predecessor's leases: queued before any load
    }
    plugins.set_health(static_cast<std::uint32_t>(settings.health_errors),
                       Seconds(settings.health_window));
    const std::string last_known_good =
        (fs::path(settings.data_dir) / "builds" / "last-known-good").string();
    plugins.set_last_known_good_dir(last_known_good);
    ClosePhase close(kernel, Seconds(settings.close_budget), [] { std::_Exit(kExitOk); });
    // Signals arrive on the watcher's thread: the first one posts the close to the kernel
    // thread; later ones are logged there and then, even while a stop() blocks the loop.
    std::atomic<bool> close_requested{false};
    SignalWatcher signals([&](int signo) {
      if (signo == SIGHUP) {  // reload the plugin directory as a new generation
        kernel.loop().Post(
            [&plugins, &settings] { plugins.RequestReload(settings.plugin_dir, "SIGHUP"); });
        return;
      }
      const std::string reason = signo == SIGTERM ? "SIGTERM" : "SIGINT";
      if (close_requested.exchange(true)) {
        LogScope("molt").Warn(
            "close ({}) ignored: a close is already running (SIGKILL forces "
            "an exit)",
            reason);
        return;
      }
      kernel.loop().Post([&kernel, &close, &plugins, &network, &profiles, &settings, reason] {
        plugins.Close();
        // The close order: Kernel.Closing (new connections refused from here), every service
        // stops (a stop() may still reach the connected players), Kernel.Stopped, the final
        // saves of every profile (the drain), and only then do the sessions end: nothing a
        // service writes in stop() can miss a final save.
        const TimePoint closing = RealNow();
        close.Begin(reason, [&kernel, &network, &profiles, &settings, closing] {
          DrainProfiles(kernel, profiles, closing + Seconds(settings.profiles_drain), [&] {
            network.Shutdown();
            kernel.loop().Stop();
          });
        });
      });
    });

    // Windowed health (Kernel.Overload), with the network's rates.
    admin::DiagnosticsOptions diag_options;
    diag_options.interval = Seconds(settings.diagnostics_seconds);
    diag_options.extend = [&network, last = net::NetStats(), at = RealNow()](
                              std::vector<std::pair<std::string, double>>& out) mutable {
      const net::NetStats now = network.stats();
      const TimePoint t = RealNow();
      const double seconds = std::max(ToSeconds(t - at), 1e-9);
      out.emplace_back("sessions", static_cast<double>(network.sessions().count()));
      out.emplace_back("net_in_bytes_per_second",
                       static_cast<double>(now.bytes_in - last.bytes_in) / seconds);
      out.emplace_back("net_out_bytes_per_second",
                       static_cast<double>(now.bytes_out - last.bytes_out) / seconds);
      out.emplace_back("net_rejected",
                       static_cast<double>(now.intents_rejected + now.requests_rejected));
      last = now;
      at = t;
    };
    admin::Diagnostics diagnostics(kernel, std::move(diag_options));
    // Debug bundles: on demand (the API), and from the last snapshot on a fatal signal.
    admin::AdminApi* api = nullptr;
    admin::DebugBundles bundles(
        (fs::path(settings.data_dir) / "bundles").string(),
        [&api](std::string_view reason) { return api->BundleJson(reason); });
    // The admin endpoint: its own thread; its answers are built on this one.
    admin::AdminApi admin_api(
        {kernel, network, plugins, *profile_db, log_ring, diagnostics, error_watch,
         [&plugins, &settings] { plugins.RequestReload(settings.plugin_dir, "admin API"); },
         [&bundles](std::string_view reason) { return bundles.Write(reason); },
         [&close_requested] { return close_requested.load(); }},
        admin_token);
    api = &admin_api;
    std::unique_ptr<admin::HttpServer> admin_server;
    auto start_admin = [&]() -> Status {
      if (!settings.admin_enabled) {
        log.Info("admin endpoint off");
        return Status::Ok();
      }
      Result<std::unique_ptr<admin::HttpServer>> started =
          admin::HttpServer::Start(settings.admin_address, settings.admin_port, {},
                                   [&admin_api](admin::HttpRequest req, admin::HttpReply reply) {
                                     admin_api.Handle(std::move(req), std::move(reply));
                                   });
      if (!started.ok()) {
        return started.status();
      }
      admin_server = std::move(started).value();
      const bool v6 = settings.admin_address.find(':') != std::string::npos;
      log.Info(
          "admin endpoint on http://{}{}{}:{}/ (the dashboard; /metrics, /healthz, /readyz; the "
          "API's token is in {})",
          v6 ? "[" : "", settings.admin_address, v6 ? "]" : "", admin_server->port(),
          settings.admin_token.empty() ? token_file : "the configuration's admin.token");
      return Status::Ok();
    };
    std::unique_ptr<DirWatcher> watcher;  // --watch; stopped before the plugins unload
    TaskHandle debounce;
    // Never an empty server: when the plugin directory does not load or start, the build that
    // last passed its health window boots instead (loaded, or swapped in for the failed set).
    const bool have_good =
        !options.check && fs::exists(fs::path(last_known_good) / loader::kBuildManifest, ec);
    auto fall_back = [&](const Status& why) {
      log.Error("the plugin directory {} does not boot: {}", settings.plugin_dir, why.message());
      log.Warn("booting the last known good build from {} instead", last_known_good);
    };
    Status booted = plugins.LoadDirectory(settings.plugin_dir);
    bool from_good = false;
    if (!booted.ok() && have_good) {
      fall_back(booted);
      booted = plugins.LoadDirectory(last_known_good);
      from_good = true;
    }
    if (booted.ok()) {
      booted = kernel.Start();
      if (!booted.ok() && have_good && !from_good) {
        fall_back(booted);
        const loader::SwapReport r = plugins.Reload(last_known_good, "boot: last known good");
        booted = r.ok ? Status::Ok() : Status::FailedPrecondition(r.error);
      }
    }
    if (Status s = booted; !s.ok()) {
      log.Error("cannot start: {}", s.message());
      exit_code = kExitBootFailed;
    } else if (options.check) {
      exit_code = Check(settings.plugin_dir, plugins, network, kernel);
    } else if (Status s = settings.net.auth == net::AuthMode::kDev
                              ? net::FuzzGate(network.channels(), kernel.hooks())
                              : Status::Ok();
               !s.ok()) {
      log.Error("cannot start: {}", s.message());
      exit_code = kExitBootFailed;
    } else if (Status s = network.Listen(); !s.ok()) {
      log.Error("cannot start: {}", s.message());
      exit_code = kExitBootFailed;
    } else if (Status s = start_admin(); !s.ok()) {
      log.Error("cannot start: {}", s.message());
      exit_code = kExitBootFailed;
    } else {
      net::LogSecurityAudit(net::SecurityAudit(network.channels(), kernel.hooks()));
      plugins.BeginHealthWindow();
      kernel.scheduler().Every(
          Seconds(settings.diagnostics_seconds), [&bundles] { bundles.RefreshCrashSnapshot(); },
          Priority::kLow, TaskOrigin::Named("crash snapshot"));
      // --watch: the watcher's thread posts each change; the reload waits until they settle.
      if (options.watch) {
        Result<std::unique_ptr<DirWatcher>> w =
            DirWatcher::Start(settings.plugin_dir, [&](std::string file) {
              kernel.loop().Post([&, file = std::move(file)] {
                debounce.Cancel();
                debounce = kernel.scheduler().After(
                    kWatchSettle,
                    [&plugins, &settings, file] {
                      plugins.RequestReload(settings.plugin_dir, "watch: " + file + " changed");
                    },
                    Priority::kKernel, TaskOrigin::Named("watch"));
              });
            });
        if (w.ok()) {
          watcher = std::move(w).value();
          log.Info("watching {}: a rebuilt plugin is swapped in live", settings.plugin_dir);
        } else {
          log.Warn("{}; --watch is off", w.status().message());
        }
      }
      // Closing stops the intake (after the plugins' own Kernel.Closing handlers, which
      // subscribed at init); the sessions end once every service stopped (above).
      Connection stop_intake = kernel.bus().Subscribe(
          "Kernel.Closing", [&network](std::string_view, Args) { network.StopAccepting(); });
      log.Info(
          "serving {} plugins from {} as generation {} (data in {}, profiles in {} as {}); SIGHUP "
          "reloads them, SIGTERM or SIGINT closes",
          plugins.plugins().size(), settings.plugin_dir, plugins.generation(), settings.data_dir,
          settings.profiles_db, profiles.host());
      bundles.RefreshCrashSnapshot();  // installs the fatal-signal writer
      kernel.loop().Run();
    }
    watcher.reset();
    admin_server.reset();  // before the kernel's teardown: no request reaches it from here
    if (Status s = kernel.Shutdown(); !s.ok()) {
      log.Error("{}", s.message());
    }
    plugins.UnloadAll();
  }
  fs::remove_all(copy_dir, ec);
  if (options.check) {
    for (const char* suffix : {"-check.db", "-check.db-wal", "-check.db-shm"}) {
      fs::remove(copy_dir.string() + suffix, ec);
    }
  }
  if (exit_code == kExitOk) {
    log.Info("exited cleanly");
  }
  return exit_code;
}

}  // namespace molt::kernel
