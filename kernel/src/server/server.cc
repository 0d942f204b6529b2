// SPDX-License-Identifier: Apache-2.0
// Server: boot, serve, close (server.h); RunServer, the one call a host makes.
#include "kernel/src/server/server.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json/object.hpp>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <thread>

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
#include "kernel/src/server/dir_watcher.h"
#include "kernel/src/server/registry_opener.h"
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

// --self-test (--check): the spec gate over the plugins, started: their own tests, the security
// audit and the fuzz gate over what they declared, as a report on stdout. Fails on a failed
// self-test, a High finding or a validator that throws.
int Check(const std::string& flag, const std::string& plugin_dir, loader::PluginHost& plugins,
          net::Network& network, Kernel& kernel) {
  std::string loaded;
  for (const loader::PluginHost::Plugin& p : plugins.plugins()) {
    loaded += fmt::format("{}{} {}", loaded.empty() ? "" : ", ", p.instance->name(),
                          p.instance->info().version);
  }
  std::string report = fmt::format(
      "moltd {} {}\n  plugins: {} loaded and started ({})\n  protocol: {:016x} ({} "
      "channels)\n",
      flag, plugin_dir, plugins.plugins().size(), loaded, network.channels().ProtocolHash(),
      network.channels().size());
  // The plugins' own tests first: the audit and the fuzz gate see what they leave.
  std::size_t passed = 0;
  std::size_t failed = 0;
  std::string failures;
  const std::vector<loader::PluginHost::SelfTestRun> runs = plugins.RunSelfTests();
  for (const loader::PluginHost::SelfTestRun& run : runs) {
    for (const abi::PluginInstance::SelfTestResult& t : run.tests) {
      if (t.status.ok()) {
        ++passed;
      } else {
        ++failed;
        failures += fmt::format("    {}: \"{}\": {}\n", run.plugin, t.name, t.status.message());
      }
    }
    if (!run.error.ok()) {
      ++failed;
      failures += fmt::format("    {}: {}\n", run.plugin, run.error.message());
    }
  }
  report += fmt::format("  self-tests: {} passed, {} failed ({} of {} plugins have tests)\n{}",
                        passed, failed, runs.size(), plugins.plugins().size(), failures);
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
  const bool ok = failed == 0 && high == 0 && failing_channels.empty();
  if (ok) {
    report += "check passed\n";
  } else {
    report += fmt::format(
        "check failed: {} self-test(s) failed, {} High finding(s), validators threw on {} "
        "channel(s)\n",
        failed, high, failing_channels.size());
  }
  std::fputs(report.c_str(), stdout);
  std::fflush(stdout);
  return ok ? kExitOk : kExitCheckFailed;
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

// Fault injection for the boot-budget tests (tests/hosts/molt_deploy_test.cc): a stuck disk or
// network file system cannot be made for real in a test. MOLT_TEST_SLOW_STAGES="SECONDS[:N]"
// holds each of the first N background stages (every one without N) for SECONDS before it reads.
void InjectSlowStages(loader::PluginHost& plugins) {
  const char* spec = std::getenv("MOLT_TEST_SLOW_STAGES");
  if (spec == nullptr || *spec == '\0') {
    return;
  }
  const double seconds = std::atof(spec);
  const char* colon = std::strchr(spec, ':');
  const long count = colon != nullptr ? std::atol(colon + 1) : -1;
  kLog.Warn("fault injection (MOLT_TEST_SLOW_STAGES={}): {} build stages are held {:.1f} s", spec,
            count < 0 ? std::string("all") : "the first " + std::to_string(count), seconds);
  auto left = std::make_shared<std::atomic<long>>(count);
  plugins.set_stage_hook_for_testing([seconds, left, all = count < 0] {
    if (all || left->fetch_sub(1) > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    }
  });
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
      exit_code = Check(options_.self_test ? "--self-test" : "--check", settings_.plugin_dir,
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
    parts_->kernel().loop().Post([this] { AwaitRegistry(); });
    parts_->kernel().loop().Run();
    exit_code = boot_exit_code_;
  }
  Release();
  if (exit_code == kExitOk) {
    kLog.Info("exited cleanly");
  }
  return exit_code;
}

// --- boot --------------------------------------------------------------------------------------

Status Server::Prepare() {
  MOLT_RETURN_IF_ERROR(ResolveSettings(options_, config_, &settings_));
  Logger::Get().SetLevel(settings_.log_level);
  Logger::Get().SetConsoleFormat(settings_.log_format);
  std::error_code ec;
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
  const fs::path run_root = fs::path(settings_.data_dir) / "run";
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
  InjectSlowStages(plugins);
  plugins.set_last_known_good_dir(last_known_good_);
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
      admin::AdminSources{
          kernel, parts_->network(), parts_->plugins(), parts_->profile_db(), *log_ring_,
          *diagnostics_, *error_watch_,
          [this](std::function<void(const loader::SwapReport&)> done) {
            Reload("admin API", std::move(done));
          },
          [this](std::string_view reason) { return bundles_->Write(reason); },
          [this] { return close_requested_.load(); },
          [this](double deadline, const std::string& why) { return RequestDrain(deadline, why); },
          nullptr, &parts_->analytics(), &parts_->live(), fleet_.get(), [this] { return Report(); },
          &parts_->messages(), &parts_->kv()},
      admin_token_);
  return Status::Ok();
}

// Never an empty server: the first build that loads and starts serves. With a branch head, the
// head, its earlier builds (newest first), the last known good, then the plugin directory (the
// bundled fallback); without one, the plugin directory (the development path), then the last
// known good. Each failure is logged with the next one tried, and a deployed build that failed
// is marked failed here.
void Server::PlanBoot() {
  boot_candidates_ =
      deploys_ != nullptr ? deploys_->BootCandidates() : std::vector<deploy::Deploys::Candidate>();
  boot_sources_.clear();
  for (const deploy::Deploys::Candidate& c : boot_candidates_) {
    boot_sources_.push_back({c.file, c.what + ", " + c.build_id, c.what, &c});
  }
  std::error_code ec;
  const bool have_good = fs::exists(fs::path(last_known_good_) / loader::kBuildManifest, ec);
  if (boot_candidates_.empty()) {
    boot_sources_.push_back(
        {settings_.plugin_dir, "the plugin directory " + settings_.plugin_dir, "plugin directory"});
  }
  if (have_good) {
    boot_sources_.push_back({last_known_good_, "the last known good build from " + last_known_good_,
                             "last known good"});
  }
  if (!boot_candidates_.empty()) {
    boot_sources_.push_back(
        {settings_.plugin_dir,
         "the plugin directory " + settings_.plugin_dir + " (the bundled fallback)",
         "plugin directory"});
  }
}

void Server::BootFailed(std::size_t at, const Status& why) {
  kLog.Error("{} does not boot: {}", boot_sources_[at].what, why.message());
  if (why.code() == Status::Code::kCancelled) {
    // Out of boot time while it was read: nothing is known of the build (a slow disk), so it
    // is not marked failed; the head is tried again once something serves.
    retry_head_ = retry_head_ || (at == 0 && boot_sources_[at].deployed != nullptr);
  } else if (boot_sources_[at].deployed != nullptr) {
    deploys_->BootResult(*boot_sources_[at].deployed, why);
  }
}

void Server::StopBooting(const std::string& why) {
  kLog.Error("cannot start: {}", why);
  boot_exit_code_ = kExitBootFailed;
  parts_->network().Shutdown();
  parts_->kernel().loop().Stop();
}

void Server::Booted(std::size_t at) {
  const BootSource& source = boot_sources_[at];
  if (source.deployed != nullptr) {
    deploys_->BootResult(*source.deployed, Status::Ok());
    deployed_generation_ = parts_->plugins().generation();
    deployed_sha_ = source.deployed->sha256;
  }
  booted_from_ = source.path;
  if (at > 0 || source.deployed != nullptr) {
    kLog.Info("booted {}", source.what);
  }
}

// --check boots the plugin directory alone (no registry, no last known good), on this thread,
// nothing listening.
Status Server::LoadPlugins() {
  MOLT_RETURN_IF_ERROR(parts_->plugins().LoadDirectory(settings_.plugin_dir));
  MOLT_RETURN_IF_ERROR(parts_->kernel().Start());
  booted_from_ = settings_.plugin_dir;
  return Status::Ok();
}

// The registry is read on a thread of its own (RegistryOpener); the boot waits for it at most
// kBootReadsWait, then boots without it (the plugin directory, the last known good), and the
// branch's head follows once it opens (OnRegistryOpen).
void Server::AwaitRegistry() {
  boot_started_ = RealNow();
  deploy::DeploysOptions o;
  o.dir = (fs::path(settings_.data_dir) / "registry").string();
  o.branch = settings_.branch;
  o.prod_rules = settings_.require_signatures;
  o.keys_file = settings_.deploy_keys;
  o.max_build_bytes = static_cast<std::uint64_t>(settings_.max_build_mb * (1 << 20));
  o.server_id = settings_.server_id;                  // its rollout bucket
  if (store::IsPostgresUrl(settings_.profiles_db)) {  // a fleet: its registry is shared
    o.fleet_url = settings_.profiles_db;
    o.poll =
        std::chrono::milliseconds(static_cast<std::int64_t>(settings_.deploy_poll_seconds * 1000));
  }
  o.on_refusal = [this](const std::string& kind, const std::string& reason) {
    parts_->kernel().loop().Post([this, kind, reason] {
      const Value args[] = {Value::String(kind), Value::String(reason)};
      parts_->kernel().bus().Publish("Kernel.DeployRefused", args);
    });
  };
  registry_opener_ = std::make_unique<RegistryOpener>(
      std::move(o),
      [this](std::unique_ptr<deploy::Deploys> d) {
        auto box = std::make_shared<std::unique_ptr<deploy::Deploys>>(std::move(d));
        parts_->kernel().loop().Post([this, box] { OnRegistryOpen(std::move(*box)); });
      },
      [last = std::make_shared<std::string>()](const Status& why) {
        if (why.message() != *last) {  // each new reason once; the retries are quiet
          *last = why.message();
          kLog.Error(
              "the deploy registry cannot be opened: {}; trying again every second (deploys "
              "wait for it, the branch's head follows once it opens)",
              why.message());
        }
      });
  registry_gate_ = parts_->kernel().scheduler().After(
      kBootReadsWait,
      [this] {
        if (!boot_begun_) {
          kLog.Warn("boot: the deploy registry is not open after {:.0f} s: booting without it",
                    ToSeconds(kBootReadsWait));
          BootFrom(0);
        }
      },
      Priority::kKernel, TaskOrigin::Named("boot"));
}

void Server::OnRegistryOpen(std::unique_ptr<deploy::Deploys> deploys) {
  if (close_requested_.load()) {
    return;  // released with the box
  }
  deploys_ = std::move(deploys);
  admin_api_->set_deploys(deploys_.get());
  if (!boot_begun_) {  // in time: the boot plans with it
    registry_gate_.Cancel();
    BootFrom(0);
    return;
  }
  kLog.Info("the deploy registry is open, {:.1f} s after the start",
            ToSeconds(RealNow() - boot_started_));
  if (!booted_from_.empty()) {  // serving: deploys start, and the head follows now
    StartDeploys();
    FollowHeadAfterLateRegistry();
  }  // still booting: StartServing() does both
}

void Server::FollowHeadAfterLateRegistry() {
  if (deploys_ != nullptr && !deploys_->HeadFile().empty()) {
    kLog.Info("boot: the head of {} follows the late registry", settings_.branch);
    Reload("boot: the head, once the registry opened", nullptr);
  }
}

// The boot budget (spec §31): a generation serves within kBootBudget of the start, or moltd
// exits saying why (its supervisor starts it again). Each build is read off the kernel thread
// within its load cap (kBootLoadCap, squeezed toward kBootDeadline, never under kBootLateLoad);
// one that takes longer is abandoned for the next. Past kBootFallbackAt only the bundled
// fallback (the last source) is tried. Clients are refused with "Starting" meanwhile.
void Server::BootFrom(std::size_t at) {
  if (at == 0) {
    boot_begun_ = true;
    boot_planned_with_registry_ = deploys_ != nullptr;
    PlanBoot();
  }
  if (close_requested_.load()) {
    return;  // Close() ends the loop
  }
  const Duration elapsed = RealNow() - boot_started_;
  if (at >= boot_sources_.size() || elapsed >= kBootBudget) {
    StopBooting(fmt::format(
        "nothing boots within the {:.0f} s boot budget ({} of {} builds tried, each failure "
        "above): the last known good chain is exhausted (lkg_exhausted)",
        ToSeconds(kBootBudget), std::min(at, boot_sources_.size()), boot_sources_.size()));
    return;
  }
  if (elapsed >= kBootFallbackAt && at + 1 < boot_sources_.size()) {
    kLog.Warn("boot: {:.1f} s passed, past the {:.0f} s fallback cut-off: {} boots now",
              ToSeconds(elapsed), ToSeconds(kBootFallbackAt), boot_sources_.back().what);
    at = boot_sources_.size() - 1;
  }
  if (at > 0) {
    kLog.Warn("booting {} instead", boot_sources_[at].what);
  }
  const Duration cap = std::max(kBootLateLoad, std::min(kBootLoadCap, kBootDeadline - elapsed));
  auto next = [this, at](const Status& why) {
    if (boot_sources_.size() == 1) {  // the one source: its error is the boot's
      StopBooting(why.message());
      return;
    }
    BootFailed(at, why);
    BootFrom(at + 1);
  };
  if (!parts_->kernel().started()) {  // Start() runs once: after it failed, the next build swaps in
    parts_->plugins().LoadDirectoryInBackground(boot_sources_[at].path, cap,
                                                [this, at, next](Status s) {
                                                  if (s.ok()) {
                                                    s = parts_->kernel().Start();
                                                  }
                                                  if (!s.ok()) {
                                                    next(s);
                                                    return;
                                                  }
                                                  StartServing(at);
                                                });
    return;
  }
  parts_->plugins().set_background_staging(cap);
  parts_->plugins().RequestReload(
      boot_sources_[at].path, "boot: " + boot_sources_[at].reason,
      [this, at, next](const loader::SwapReport& r) {
        parts_->plugins().set_background_staging(loader::PluginHost::kStageDeadline);
        InjectSlowStages(parts_->plugins());
        if (!r.ok) {
          next(Status::FailedPrecondition(r.error));
          return;
        }
        StartServing(at);
      });
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
      StopBooting(s.message());
      return;
    }
  }
  Booted(at);
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
        fleet_->interval(), [this] { fleet_->Beat(Report()); }, Priority::kLow,
        TaskOrigin::Named("heartbeat"));
    // `molt drain` through another server (the fleet's thread).
    fleet_->WatchDrains(settings_.server_id,
                        [this](double deadline) { RequestDrain(deadline, "molt drain"); });
  }
  kLog.Info(
      "serving {} plugins from {} as generation {} after {:.0f} ms (data in {}, profiles in {} as "
      "{}); SIGHUP reloads them, SIGTERM or SIGINT closes",
      parts_->plugins().plugins().size(), booted_from_, parts_->plugins().generation(),
      ToSeconds(RealNow() - boot_started_) * 1000, settings_.data_dir,
      store::PgDb::Redacted(settings_.profiles_db), parts_->profiles().host());
  bundles_->RefreshCrashSnapshot();  // installs the fatal-signal writer
  if (!boot_planned_with_registry_) {
    FollowHeadAfterLateRegistry();
  } else if (retry_head_) {  // the head ran out of boot time: now, with the normal timeouts
    kLog.Info("boot: the head of {} ran out of boot time; retrying it while {} serves",
              settings_.branch, parts_->plugins().generation());
    Reload("boot: the head again, after its boot timed out", nullptr);
  }
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

fleet::ServerReport Server::Report() const {
  fleet::ServerReport r;
  r.id = settings_.server_id;
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
    RequestDrain(0, "SIGUSR1");
    return;
  }
  std::string reason = signo == SIGTERM ? "SIGTERM" : "SIGINT";
  if (drain_waiting_.exchange(false)) {  // a drain waits for its deadline: close now
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

// The close (Assembly::Close): the services stop, the drain, the sessions end; then the loop
// stops. A close that overruns its budget exits the process from the watchdog.
void Server::Close(const std::string& reason) {
  drain_waiting_ = false;
  drain_wait_.Cancel();
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
      reason, [] { std::_Exit(kExitOk); }, [this] { parts_->kernel().loop().Stop(); });
}

bool Server::RequestDrain(double deadline_seconds, const std::string& why) {
  if (close_requested_.exchange(true)) {
    kLog.Warn("drain ({}) ignored: the server is already closing", why);
    return false;
  }
  parts_->kernel().loop().Post([this, deadline_seconds, why] { Drain(deadline_seconds, why); });
  return true;
}

void Server::Drain(double deadline_seconds, const std::string& why) {
  if (booted_from_.empty() || fleet_ == nullptr) {  // nothing serves yet: nobody to move
    return Close(why);
  }
  parts_->network().Drain();
  fleet_->Beat(Report());  // the fleet sees it draining at once, and sends nobody here
  const std::size_t sessions = parts_->network().sessions().count();
  const Value args[] = {Value::Int(static_cast<std::int64_t>(sessions))};
  parts_->kernel().bus().Publish("Kernel.SoftShutdown", args);
  kLog.Info("draining ({}): {} sessions move to another server of branch {}{}", why, sessions,
            settings_.branch,
            deadline_seconds > 0 ? fmt::format(", or stay for at most {:g} s", deadline_seconds)
                                 : std::string());
  const TimePoint deadline = RealNow() + Seconds(std::max(deadline_seconds, 0.0));
  fleet_->List(
      settings_.branch, [this, deadline, why](Result<std::vector<fleet::ServerReport>> servers) {
        parts_->kernel().loop().Post([this, deadline, why, servers = std::move(servers)]() mutable {
          Redirect(std::move(servers), why);
          CloseWhenEmpty(deadline, why);
        });
      });
}

void Server::CloseWhenEmpty(TimePoint deadline, const std::string& why) {
  if (parts_->network().sessions().count() == 0 || RealNow() >= deadline) {
    return Close(why);
  }
  drain_waiting_ = true;
  drain_wait_ = parts_->kernel().scheduler().After(
      std::chrono::milliseconds(100), [this, deadline, why] { CloseWhenEmpty(deadline, why); },
      Priority::kKernel, TaskOrigin::Named("drain"));
}

void Server::Redirect(Result<std::vector<fleet::ServerReport>> servers, const std::string& why) {
  std::vector<net::Network::RedirectTarget> targets;
  if (servers.ok()) {
    for (const fleet::ServerReport& s : *servers) {
      if (s.id != settings_.server_id && s.state == "live" && !s.build.empty() &&
          !s.address.empty()) {
        targets.push_back({s.id, s.address, s.websocket_address, s.sessions});
      }
    }
  }
  const std::size_t sessions = parts_->network().sessions().count();
  if (targets.empty()) {
    kLog.Warn(
        "draining ({}): no other live server of branch {} to send the {} sessions to{}; "
        "they end as at a close (start a server of the branch first to move them)",
        why, settings_.branch, sessions,
        servers.ok() ? "" : " (the fleet cannot be read: " + servers.status().message() + ")");
    return;
  }
  std::vector<std::uint64_t> before;
  for (const net::Network::RedirectTarget& t : targets) {
    before.push_back(t.sessions);
  }
  const std::vector<net::Network::RedirectTarget>& spread =
      parts_->network().Redirect(std::move(targets), "the server is draining");
  std::string where;
  std::uint64_t told = 0;
  for (std::size_t i = 0; i < spread.size(); ++i) {
    if (const std::uint64_t sent = spread[i].sessions - before[i]; sent > 0) {
      where += fmt::format("{}{} to server {} at {}", where.empty() ? "" : ", ", sent,
                           spread[i].server, spread[i].address);
      told += sent;
    }
  }
  kLog.Info("draining ({}): {} sessions told where to go{}{}", why, told, where.empty() ? "" : ": ",
            where);
}

// The parts that run threads or plugin code stop first: the watcher, the admin endpoint (no
// request reaches the kernel from here), the kernel's teardown, the plugins' libraries.
void Server::Release() {
  if (fleet_ != nullptr && fleet_->shared() && diagnostics_ != nullptr && close_requested_) {
    fleet_->Beat(Report());  // its last heartbeat: closed, no session left (molt drain waits)
  }
  watcher_.reset();
  admin_server_.reset();
  registry_opener_.reset();  // no registry arrives from here on
  fleet_.reset();            // its last heartbeat written
  deploys_.reset();          // its thread posts to the kernel loop: it goes first
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
  }
}

}  // namespace molt::kernel
