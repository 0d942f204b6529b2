// SPDX-License-Identifier: Apache-2.0
// Server: boot, serve, close (server.h); RunServer, the one call a host makes.
#include "kernel/src/server/server.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/object.hpp>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>

#include "kernel/src/admin/admin_api.h"
#include "kernel/src/admin/debug_bundle.h"
#include "kernel/src/admin/diagnostics.h"
#include "kernel/src/admin/error_watch.h"
#include "kernel/src/admin/http_server.h"
#include "kernel/src/admin/log_ring.h"
#include "kernel/src/admin/stats_json.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/deploy/deploys.h"
#include "kernel/src/fleet/fleet.h"
#include "kernel/src/live/live_values.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/audit.h"
#include "kernel/src/net/network.h"
#include "kernel/src/server/assembly.h"
#include "kernel/src/server/boot_plan.h"
#include "kernel/src/server/dir_watcher.h"
#include "kernel/src/server/drain_phase.h"
#include "kernel/src/server/self_check.h"
#include "kernel/src/server/signal_watcher.h"
#include "kernel/src/store/pg_store.h"
#include "kernel/src/store/profile_registry.h"
#include "kernel/src/workers/workers_api.h"

namespace molt::kernel {
namespace {

namespace fs = std::filesystem;

const LogScope kLog("molt");

// --watch: how long the plugin directory must stay quiet before a reload (a build writes several
// files, and a linker writes one in several steps).
constexpr Duration kWatchSettle = std::chrono::milliseconds(300);

// Where clients reach a listener bound to `bind` ("ADDRESS" or "ADDRESS:PORT"), for the fleet's
// heartbeat and the redirects of a drain: a wildcard address is this machine's host name.
std::string Advertised(std::string bind, std::uint16_t port) {
  if (const std::size_t colon = bind.rfind(':');
      colon != std::string::npos && bind.find(':') == colon) {  // ADDRESS:PORT, not IPv6
    bind.resize(colon);
  } else if (bind.size() > 2 && bind.front() == '[') {  // [v6]:PORT
    bind = bind.substr(1, bind.find(']') - 1);
  }
  if (bind.empty() || bind == "0.0.0.0" || bind == "::") {
    char host[256] = {};
    bind = gethostname(host, sizeof(host) - 1) == 0 ? host : "localhost";
  }
  return bind.find(':') != std::string::npos ? fmt::format("[{}]:{}", bind, port)
                                             : fmt::format("{}:{}", bind, port);
}

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

// This server's id in its fleet when none is configured: the one kept in `data_dir`/server.id,
// made at the first start ("<hostname>-<6 hex digits>", the hostname cut to what an id takes).
Result<std::string> KeptServerId(const std::string& data_dir) {
  const fs::path file = fs::path(data_dir) / "server.id";
  std::error_code ec;
  if (fs::exists(file, ec)) {
    std::ifstream in(file);
    std::string id;
    std::getline(in, id);
    if (!ValidServerId(id)) {
      return Status::FailedPrecondition(fmt::format(
          "{} holds \"{}\", not a server id (1 to 64 of [A-Za-z0-9._-]): correct it, remove it "
          "for a new one, or give --server-id",
          file.string(), id));
    }
    return id;
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string id;
  for (const char* c = host; *c != '\0' && id.size() < 48; ++c) {
    id += std::isalnum(static_cast<unsigned char>(*c)) != 0 || *c == '-' ? *c : '-';
  }
  std::random_device random;
  id = fmt::format("{}-{:06x}", id.empty() ? "moltd" : id, random() & 0xffffff);
  std::ofstream out(file);
  out << id << "\n";
  if (!out.flush()) {
    return Status::IoError(
        fmt::format("{} cannot be written: this server's id is kept there "
                    "(give --server-id, or make the data directory writable)",
                    file.string()));
  }
  return id;
}

// The exit code of a close that ended as `o` did.
int CloseExitCode(const CloseOutcome& o) {
  if (o.refused > 0 || o.drain_cut) {
    return kExitCloseCut;
  }
  return o.overran.empty() ? kExitOk : kExitStopOverran;
}

}  // namespace

int RunServer(const ServerOptions& options) { return Server(options).Run(); }

Server::Server(ServerOptions options)
    : options_([&options] {
        options.check = options.check || options.self_test;  // the same gate
        return std::move(options);
      }()),
      log_ring_(std::make_unique<admin::LogRing>()) {}

Server::~Server() = default;

int Server::Run() {
  Status booted = Prepare();
  if (booted.ok()) {
    booted = Assemble();
  }
  int exit_code = kExitOk;
  if (booted.ok() && options_.check) {
    booted = LoadPlugins();
    if (booted.ok()) {
      exit_code = SelfCheck(options_.self_test ? "--self-test" : "--check", settings_.plugin_dir,
                            parts_->plugins(), parts_->network(), parts_->kernel());
    }
  } else if (booted.ok()) {
    // Clients may connect at once: they are refused with "Starting" until a generation serves.
    parts_->network().SetServing(false);
    booted = Open();
  }
  if (!booted.ok()) {
    kLog.Error("cannot start: {}", booted.message());
    exit_code = kExitBootFailed;
  } else if (!options_.check) {
    parts_->kernel().loop().Post([this] { boot_->Begin(); });
    parts_->kernel().loop().Run();
    exit_code = boot_->exit_code();
    if (exit_code == kExitOk) {
      exit_code = close_exit_;
    }
  }
  Release();
  if (exit_code == kExitOk) {
    kLog.Info("exited cleanly");
  } else if (exit_code == kExitStopOverran || exit_code == kExitCloseCut) {
    kLog.Warn("exited with {}: the close was not clean ({})", exit_code,
              exit_code == kExitStopOverran
                  ? "every profile saved, but a stop was cut at its deadline: named above"
                  : "profiles left unsaved keep their last autosave: named above");
  }
  return exit_code;
}

// --- boot --------------------------------------------------------------------------------------

Status Server::Prepare() {
  MOLT_RETURN_IF_ERROR(ResolveSettings(options_, config_, &settings_));
  Logger::Get().SetLevel(settings_.log_level);
  Logger::Get().SetConsoleFormat(settings_.log_format);
  std::error_code ec;
  const fs::path run_root = fs::path(settings_.data_dir) / "run";
  if (options_.check) {  // what it makes, it removes (Release): the innermost first
    for (const fs::path& dir : {run_root, fs::path(settings_.data_dir)}) {
      if (!fs::exists(dir, ec)) {
        check_made_dirs_.push_back(dir.string());
      }
    }
  }
  fs::create_directories(settings_.data_dir, ec);
  if (ec) {
    return Status::IoError(fmt::format("data directory \"{}\" cannot be created: {}",
                                       settings_.data_dir, ec.message()));
  }
  RaiseDescriptorLimit(settings_, kLog);
  token_file_ = (fs::path(settings_.data_dir) / "admin.token").string();
  if (settings_.admin_enabled && !options_.check) {
    MOLT_ASSIGN_OR_RETURN(admin_token_, admin::LoadAdminToken(token_file_, settings_.admin_token));
  }
  RemoveStaleRunDirs(run_root);
  copy_dir_ = (run_root / ("moltd-" + std::to_string(::getpid()))).string();
  if (options_.check) {  // nothing of the live server is touched: a scratch database
    fs::create_directories(run_root, ec);
    settings_.profiles_db = copy_dir_ + "-check.db";
    settings_.analytics.dir = copy_dir_ + "-check-analytics";
  }
  last_known_good_ = (fs::path(settings_.data_dir) / "builds" / "last-known-good").string();
  if (!options_.check && settings_.server_id.empty()) {
    MOLT_ASSIGN_OR_RETURN(settings_.server_id, KeptServerId(settings_.data_dir));
  }
  started_ms_ = WallMs();
  return Status::Ok();
}

Status Server::Assemble() {
  AssemblyPaths paths;
  paths.copy_dir = copy_dir_;
  // Live values: the fleet's, where the profiles are shared (docs/live-values.md).
  paths.live_db = options_.check ? copy_dir_ + "-check-live.db"
                  : store::IsPostgresUrl(settings_.profiles_db)
                      ? settings_.profiles_db
                      : (fs::path(settings_.data_dir) / "live.db").string();
  paths.host = store::HostId();
  MOLT_ASSIGN_OR_RETURN(parts_, Assembly::Build(settings_, std::move(config_), std::move(paths)));
  Kernel& kernel = parts_->kernel();
  // Repeated warnings and errors become one line per window, and Kernel.ScriptError.
  error_watch_ =
      std::make_unique<admin::ErrorWatch>(kernel, Seconds(settings_.error_window_seconds));
  if (!options_.check) {  // the fleet: heartbeats where the profiles are shared, else alone
    fleet_ = std::make_unique<fleet::Fleet>(
        store::IsPostgresUrl(settings_.profiles_db) ? settings_.profiles_db : std::string(),
        Seconds(settings_.heartbeat_seconds));
    MOLT_RETURN_IF_ERROR(fleet_->Open());
  }
  if (!options_.check) {
    parts_->profiles().ReclaimAbandoned();  // a killed predecessor's leases: queued before any load
  }
  loader::PluginHost& plugins = parts_->plugins();
  plugins.set_health(static_cast<std::uint32_t>(settings_.health_errors),
                     Seconds(settings_.health_window));
  plugins.set_callback_deadline(Seconds(settings_.callback_deadline));
  plugins.set_background_staging(loader::PluginHost::kStageDeadline);
  BootPlan::InjectSlowStages(plugins);
  plugins.set_last_known_good_dir(last_known_good_);
  boot_ = std::make_unique<BootPlan>(
      *parts_, settings_, last_known_good_, close_requested_,
      BootPlan::Hooks{[this](std::unique_ptr<deploy::Deploys> d) {
                        deploys_ = std::move(d);
                        admin_api_->set_deploys(deploys_.get());
                      },
                      [this] { StartDeploys(); }, [this](std::size_t at) { StartServing(at); },
                      [this](const std::string& reason) { Reload(reason, nullptr); }});
  drain_ = std::make_unique<DrainPhase>(
      *parts_, fleet_.get(), settings_, close_requested_,
      DrainPhase::Hooks{[this] { return Report(); }, [this] { return !booted_from_.empty(); },
                        [this](const std::string& why) { Close(why); }});
  signals_ = std::make_unique<SignalWatcher>([this](int signo) { OnSignal(signo); });
  // Windowed health (Kernel.Overload), with the network's rates.
  admin::DiagnosticsOptions diag_options;
  diag_options.interval = Seconds(settings_.diagnostics_seconds);
  diag_options.extend = [this, last = net::NetStats(), logged = admin::ErrorWatch::Counts(),
                         at = RealNow()](std::vector<std::pair<std::string, double>>& out) mutable {
    const net::NetStats now = parts_->network().stats();
    const admin::ErrorWatch::Counts counts = error_watch_->counts();
    const TimePoint t = RealNow();
    const double seconds = std::max(ToSeconds(t - at), 1e-9);
    out.emplace_back("sessions", static_cast<double>(parts_->network().sessions().count()));
    out.emplace_back("net_in_bytes_per_second",
                     static_cast<double>(now.bytes_in - last.bytes_in) / seconds);
    out.emplace_back("net_out_bytes_per_second",
                     static_cast<double>(now.bytes_out - last.bytes_out) / seconds);
    out.emplace_back("net_rejected",
                     static_cast<double>((now.intents_rejected + now.requests_rejected) -
                                         (last.intents_rejected + last.requests_rejected)));
    out.emplace_back("errors_logged", static_cast<double>(counts.errors - logged.errors));
    out.emplace_back("warnings_logged", static_cast<double>(counts.warnings - logged.warnings));
    last = now;
    logged = counts;
    at = t;
  };
  diagnostics_ = std::make_unique<admin::Diagnostics>(kernel, std::move(diag_options));
  // Debug bundles: on demand (the API), and from the last snapshot on a fatal signal.
  bundles_ = std::make_unique<admin::DebugBundles>(
      (fs::path(settings_.data_dir) / "bundles").string(),
      [this](std::string_view reason) { return admin_api_->BundleJson(reason); });
  // The admin endpoint: its own thread; its answers are built on this one.
  admin_api_ = std::make_unique<admin::AdminApi>(
      admin::AdminSources{kernel, parts_->network(), parts_->plugins(), parts_->profile_db(),
                          *log_ring_, *diagnostics_, *error_watch_,
                          [this](std::function<void(const loader::SwapReport&)> done) {
                            Reload("admin API", std::move(done));
                          },
                          [this](std::string_view reason) { return bundles_->Write(reason); },
                          [this] { return close_requested_.load(); },
                          [this](double deadline, const std::string& why) {
                            return drain_->Request(deadline, why);
                          },
                          nullptr, &parts_->analytics(), &parts_->live(), fleet_.get(),
                          [this] { return Report(); }, &parts_->messages(), &parts_->kv()},
      admin_token_);
  return Status::Ok();
}

// --check boots the plugin directory alone (no registry, no last known good), on this thread,
// nothing listening.
Status Server::LoadPlugins() {
  MOLT_RETURN_IF_ERROR(parts_->plugins().LoadDirectory(settings_.plugin_dir));
  MOLT_RETURN_IF_ERROR(parts_->kernel().Start());
  booted_from_ = settings_.plugin_dir;
  return Status::Ok();
}

void Server::Reload(const std::string& reason,
                    std::function<void(const loader::SwapReport&)> done) {
  const std::string head = deploys_ != nullptr ? deploys_->HeadFile() : std::string();
  parts_->plugins().RequestReload(
      head.empty() ? settings_.plugin_dir : head, reason,
      [this, head, done = std::move(done)](const loader::SwapReport& r) {
        if (r.ok && !head.empty()) {  // the head serves again, as a new generation
          deployed_generation_ = r.serving;
          deployed_sha_ = fs::path(head).stem().string();
        }
        if (done) {
          done(r);
        }
      });
}

void Server::StartDeploys() {
  if (deploys_ == nullptr) {
    return;
  }
  parts_->plugins().set_swap_listener([this](const loader::SwapReport& r) {
    if (r.rollback && r.ok) {  // the health window rolled back from the build r.previous ran
      deploys_->RolledBack(r.previous.substr(0, r.previous.rfind('#')), r.reason);
    }
  });
  deploys_->Start([this](deploy::SwapTarget target, std::string reason,
                         std::function<void(deploy::SwapOutcome)> done) {
    parts_->kernel().loop().Post([this, target = std::move(target), reason = std::move(reason),
                                  done = std::move(done)]() mutable {
      if (deployed_generation_ == parts_->plugins().generation() &&
          deployed_sha_ == target.sha256) {
        done({"adopted", "", "", false});  // it serves already: the seq is adopted, no swap
        return;
      }
      parts_->plugins().RequestReload(
          target.file, reason,
          [this, sha = target.sha256, done = std::move(done)](const loader::SwapReport& r) {
            if (r.ok) {
              deployed_generation_ = r.serving;
              deployed_sha_ = sha;
            }
            // A swap refused at the gate (closing, superseded) says nothing of the build.
            done({r.ok ? "swapped" : "failed", r.error, r.Json(), !r.ok && r.stage != "gate"});
          });
    });
  });
}

Status Server::Open() {
  MOLT_RETURN_IF_ERROR(parts_->network().Listen());
  return StartAdmin();
}

Status Server::StartAdmin() {
  if (!settings_.admin_enabled) {
    kLog.Info("admin endpoint off");
    return Status::Ok();
  }
  MOLT_ASSIGN_OR_RETURN(admin_server_, admin::HttpServer::Start(
                                           settings_.admin_address, settings_.admin_port, {},
                                           [this](admin::HttpRequest req, admin::HttpReply reply) {
                                             admin_api_->Handle(std::move(req), std::move(reply));
                                           },
                                           [this](const admin::HttpRequest& head) {
                                             return admin_api_->Plan(head);
                                           }));
  const bool v6 = settings_.admin_address.find(':') != std::string::npos;
  kLog.Info(
      "admin endpoint on http://{}{}{}:{}/ (the dashboard; /metrics, /healthz, /readyz; the "
      "API's token is in {})",
      v6 ? "[" : "", settings_.admin_address, v6 ? "]" : "", admin_server_->port(),
      settings_.admin_token.empty() ? token_file_ : "the configuration's admin.token");
  return Status::Ok();
}

// --- serve -------------------------------------------------------------------------------------

void Server::StartServing(std::size_t at) {
  Kernel& kernel = parts_->kernel();
  if (settings_.net.auth == net::AuthMode::kDev) {
    if (Status s = net::FuzzGate(parts_->network().channels(), kernel.hooks()); !s.ok()) {
      boot_->StopBooting(s.message());
      return;
    }
  }
  const BootPlan::Source& source = boot_->Booted(at);
  if (source.deployed != nullptr) {
    deployed_generation_ = parts_->plugins().generation();
    deployed_sha_ = source.deployed->sha256;
  }
  booted_from_ = source.path;
  parts_->network().SetServing(true);
  net::LogSecurityAudit(net::SecurityAudit(parts_->network().channels(), kernel.hooks()));
  parts_->plugins().BeginHealthWindow();
  StartDeploys();
  kernel.scheduler().Every(
      Seconds(settings_.diagnostics_seconds), [this] { bundles_->RefreshCrashSnapshot(); },
      Priority::kLow, TaskOrigin::Named("crash snapshot"));
  if (options_.watch) {
    StartWatching();
  }
  parts_->StopIntakeOnClose();  // the sessions end once every service stopped (Close)
  if (fleet_ != nullptr && fleet_->shared()) {  // alone, `molt servers` asks when it asks
    fleet_->Beat(Report());
    kernel.scheduler().Every(
        fleet_->interval(),
        [this] {
          fleet_->Beat(Report());
          ReclaimLost();
        },
        Priority::kLow, TaskOrigin::Named("heartbeat"));
    // `molt drain` through another server (the fleet's thread).
    fleet_->WatchDrains(settings_.server_id,
                        [this](double deadline) { drain_->Request(deadline, "molt drain"); });
  }
  kLog.Info(
      "serving {} plugins from {} as generation {} after {:.0f} ms (data in {}, profiles in {} as "
      "{}); SIGHUP reloads them, SIGTERM or SIGINT closes",
      parts_->plugins().plugins().size(), booted_from_, parts_->plugins().generation(),
      ToSeconds(RealNow() - boot_->started()) * 1000, settings_.data_dir,
      store::PgDb::Redacted(settings_.profiles_db), parts_->profiles().host());
  bundles_->RefreshCrashSnapshot();  // installs the fatal-signal writer
  boot_->AfterServing();
}

// The watcher's thread posts each change; the reload waits until they settle.
void Server::StartWatching() {
  Result<std::unique_ptr<DirWatcher>> w =
      DirWatcher::Start(settings_.plugin_dir, [this](std::string file) {
        parts_->kernel().loop().Post([this, file = std::move(file)] {
          if (file == DirWatcher::kOverflow) {
            kLog.Warn(
                "watch: inotify's event queue overflowed, so changes to {} were missed: "
                "reloading it whole (raise /proc/sys/fs/inotify/max_queued_events if this "
                "repeats)",
                settings_.plugin_dir);
          }
          const std::string reason = file == DirWatcher::kOverflow
                                         ? "watch: changes missed (inotify queue overflow)"
                                         : "watch: " + file + " changed";
          debounce_.Cancel();
          debounce_ = parts_->kernel().scheduler().After(
              kWatchSettle,
              [this, reason] {
                parts_->plugins().RequestReload(settings_.plugin_dir, reason, nullptr,
                                                loader::PluginHost::Trigger::kAutomatic);
              },
              Priority::kKernel, TaskOrigin::Named("watch"));
        });
      });
  if (!w.ok()) {
    kLog.Warn("{}; --watch is off", w.status().message());
    return;
  }
  watcher_ = std::move(w).value();
  kLog.Info("watching {}: a rebuilt plugin is swapped in live", settings_.plugin_dir);
}

// At each heartbeat: the leases of the servers the fleet lost are taken over (docs/fleet.md,
// "Crashes"). The fleet is listed on its thread; the takeover is the kernel thread's.
void Server::ReclaimLost() {
  fleet_->List("", [this](Result<std::vector<fleet::ServerReport>> all) {
    if (!all.ok()) {
      return;  // the fleet's database is away: its own log says so
    }
    std::set<std::string> lost = fleet::LostLeaseOwners(*all, settings_.server_id);
    if (!lost.empty()) {
      parts_->kernel().loop().Post([this, lost = std::move(lost)]() mutable {
        parts_->profiles().ReclaimLost(std::move(lost));
      });
    }
  });
}

fleet::ServerReport Server::Report() const {
  fleet::ServerReport r;
  r.id = settings_.server_id;
  r.lease_owner = parts_->profiles().host();
  r.branch = settings_.branch;
  if (!booted_from_.empty()) {
    const std::string& generation = parts_->plugins().generation();
    r.build = generation.substr(0, generation.rfind('#'));
  }
  r.applied_seq = deploys_ != nullptr ? deploys_->AppliedSeq() : 0;
  r.sessions = parts_->network().sessions().count();
  r.tps = diagnostics_->last().tps;
  const std::size_t stuck = parts_->plugins().stuck_callbacks().size();
  r.health = booted_from_.empty() ? "starting"
             : stuck > 0          ? fmt::format("stuck callbacks: {}", stuck)
                                  : "ok";
  r.state = close_requested_.load() ? "draining" : "live";
  r.address = Advertised(settings_.net.bind_address, parts_->network().port());
  if (const std::uint16_t ws = parts_->network().websocket_port(); ws != 0) {
    r.websocket_address = Advertised(settings_.net.websocket, ws);
  }
  r.started_ms = started_ms_;
  return r;
}

// --- close -------------------------------------------------------------------------------------

// Signals arrive on the watcher's thread: SIGHUP reloads, the first SIGTERM or SIGINT posts the
// close to the kernel thread; later ones are logged there and then, even while a stop() blocks
// the loop.
void Server::OnSignal(int signo) {
  if (signo == SIGHUP) {  // reload the plugin directory as a new generation
    parts_->kernel().loop().Post([this] {
      if (deploys_ != nullptr) {
        deploys_->ReloadKeys();
      }
      Reload("SIGHUP", nullptr);
    });
    return;
  }
  if (signo == SIGUSR1) {  // drain: the clients go to another server of the branch
    drain_->Request(0, "SIGUSR1");
    return;
  }
  std::string reason = signo == SIGTERM ? "SIGTERM" : "SIGINT";
  if (drain_->CutShort()) {  // a drain waits for its deadline: close now
    kLog.Info("{} during the drain: the server closes now", reason);
    parts_->kernel().loop().Post([this, reason = std::move(reason)] { Close(reason); });
    return;
  }
  if (close_requested_.exchange(true)) {
    kLog.Warn("close ({}) ignored: a close is already running (SIGKILL forces an exit)", reason);
    return;
  }
  parts_->kernel().loop().Post([this, reason = std::move(reason)] { Close(reason); });
}

// The close (Assembly::Close): the services stop, the drain beside them, the sessions end; then
// the loop stops. A close stuck past its last deadline exits the process from the watchdog.
void Server::Close(const std::string& reason) {
  drain_->Stop();
  if (parts_->closing()) {  // a drain's end and a signal in the same instant
    return;
  }
  if (fleet_ != nullptr && fleet_->shared()) {  // the fleet sees it draining at once
    fleet_->Beat(Report());
  }
  if (booted_from_.empty()) {  // still starting: nothing serves, nothing to drain
    parts_->plugins().Close();
    parts_->workers().Close();
    kLog.Info("closing ({}) while starting: no generation served", reason);
    parts_->network().Shutdown();
    parts_->kernel().loop().Stop();
    return;
  }
  parts_->Close(
      reason, [] { std::_Exit(kExitCloseCut); },  // logged by the watchdog
      [this](const CloseOutcome& outcome) {
        close_exit_ = CloseExitCode(outcome);
        parts_->kernel().loop().Stop();
      });
}

// The parts that run threads or plugin code stop first: the watcher, the admin endpoint (no
// request reaches the kernel from here), the kernel's teardown, the plugins' libraries.
void Server::Release() {
  if (fleet_ != nullptr && fleet_->shared() && diagnostics_ != nullptr && close_requested_) {
    fleet_->Beat(Report());  // its last heartbeat: closed, no session left (molt drain waits)
  }
  watcher_.reset();
  admin_server_.reset();
  if (boot_ != nullptr) {
    boot_->StopOpening();  // no registry arrives from here on
  }
  fleet_.reset();    // its last heartbeat written
  deploys_.reset();  // its thread posts to the kernel loop: it goes first
  if (parts_ != nullptr) {
    parts_->Release();
  }
  if (copy_dir_.empty()) {
    return;
  }
  std::error_code ec;
  fs::remove_all(copy_dir_, ec);
  if (options_.check) {
    for (const char* suffix : {"-check.db", "-check.db-wal", "-check.db-shm", "-check-live.db",
                               "-check-live.db-wal", "-check-live.db-shm"}) {
      fs::remove(copy_dir_ + suffix, ec);
    }
    fs::remove_all(copy_dir_ + "-check-analytics", ec);
    // A check leaves no directory of its own behind either (moltd --self-test without -d left
    // ./data/run): run/ first, then the data directory, each only when it made it and it is empty.
    for (const std::string& dir : check_made_dirs_) {
      fs::remove(dir, ec);
    }
  }
}

}  // namespace molt::kernel
