// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/server.h
//
// Server: moltd's composition root (RunServer, molt/kernel/server.h). It owns every part of a
// running server, builds them in order and releases them in reverse, in three phases:
//   boot   the settings, the data directory, the parts every host of plugins shares (assembly.h:
//          the kernel, the profile database, the network, the profile registry, the plugin host
//          with the ABI's layers attached), the signals, diagnostics, debug bundles and the
//          admin API; the listener and the admin endpoint; then, the loop running, the plugins
//          loaded and started as the boot plan says (boot_plan.h: the branch's head, the last
//          known good chain, the plugin directory), the fuzz gate (--check: self_check.h)
//   serve  the kernel loop, until the close stops it
//   close  SIGTERM or SIGINT: Kernel.Closing, every service's stop, the profiles' final saves,
//          the sessions' end, the loop stops; then the kernel's teardown and the plugins unload.
//          A drain (drain_phase.h) moves the sessions to other servers first.
// What one part needs from another reaches it through the Server, which outlives them all.
//
// Thread safety: Run() on the main thread, which becomes the kernel thread; the signal watcher's
// callback posts to it.
#ifndef MOLT_KERNEL_SERVER_SERVER_H_
#define MOLT_KERNEL_SERVER_SERVER_H_

#include <molt/kernel/server.h>
#include <molt/kernel/status.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/core/bus.h"
#include "kernel/src/core/config.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/deploy/deploys.h"
#include "kernel/src/server/settings.h"

namespace molt::kernel {

class Assembly;
class BootPlan;
class DirWatcher;
class DrainPhase;
class SignalWatcher;
namespace admin {
class AdminApi;
class DebugBundles;
class Diagnostics;
class ErrorWatch;
class HttpServer;
class LogRing;
}  // namespace admin
namespace fleet {
class Fleet;
struct ServerReport;
}  // namespace fleet
namespace loader {
struct SwapReport;
}  // namespace loader

class Server {
 public:
  explicit Server(ServerOptions options);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  // Boots, serves until the close, releases everything; returns the exit code (kExitOk, or
  // kExitBootFailed with the reason logged; --check: kExitOk or kExitCheckFailed).
  int Run();

 private:
  // --- boot ---
  // The settings, the data directory, the descriptor limit, the admin token, the run directory.
  Status Prepare();
  // Every part, from the kernel to the admin API; nothing loaded, nothing listening.
  Status Assemble();
  // --check: the plugin directory alone, loaded and started on this thread.
  Status LoadPlugins();
  // A reload (SIGHUP, the admin API): the branch's head swapped in again, else the plugin
  // directory; `done` (may be null) hears the report.
  void Reload(const std::string& reason, std::function<void(const loader::SwapReport&)> done);
  // Deploys ask the kernel thread to serve a build through this (deploy::SwapFn).
  void StartDeploys();
  // The listener and the admin endpoint.
  Status Open();
  Status StartAdmin();
  // --- serve ---
  // Boot source `at` serves (BootPlan): the fuzz gate (dev auth), then clients are admitted and
  // the server's own tasks start (health window, deploys, crash snapshots, --watch).
  void StartServing(std::size_t at);
  void StartWatching();  // --watch
  // This server as its fleet sees it (the heartbeat; `molt servers`), on the kernel thread.
  fleet::ServerReport Report() const;
  // The fleet's lost servers' leases taken over (ProfileRegistry::ReclaimLost).
  void ReclaimLost();
  // --- close ---
  void OnSignal(int signo);               // the watcher's thread
  void Close(const std::string& reason);  // the kernel thread
  void Release();

  const ServerOptions options_;
  std::unique_ptr<admin::LogRing> log_ring_;  // the newest lines, from the first one logged
  Config config_;
  Settings settings_;
  std::string admin_token_;
  std::string token_file_;
  std::string copy_dir_;  // this process's copies of the plugin libraries
  // The directories a --check made (the data directory, its run/), removed after it when empty.
  std::vector<std::string> check_made_dirs_;
  std::string last_known_good_;
  std::string booted_from_;  // the build the boot generation came from ("": still starting)
  // What boots, in what order, within the boot budget; it opens the deploy registry.
  std::unique_ptr<BootPlan> boot_;
  // The generation a deploy (or the boot) made serve, and its build's manifest SHA-256: a deploy
  // of that build while that generation serves is adopted without a swap (the kernel thread).
  std::string deployed_generation_;
  std::string deployed_sha_;
  // The kernel, the network, the profiles, the plugins and their layers (assembly.h).
  std::unique_ptr<Assembly> parts_;
  std::unique_ptr<admin::ErrorWatch> error_watch_;
  std::unique_ptr<fleet::Fleet> fleet_;  // null for --check
  std::int64_t started_ms_ = 0;          // wall clock, for the fleet
  // Set on the kernel thread once the registry opened (BootPlan); null for --check.
  std::unique_ptr<deploy::Deploys> deploys_;
  std::unique_ptr<SignalWatcher> signals_;
  std::unique_ptr<admin::Diagnostics> diagnostics_;
  std::unique_ptr<admin::DebugBundles> bundles_;
  std::unique_ptr<admin::AdminApi> admin_api_;
  std::unique_ptr<admin::HttpServer> admin_server_;
  std::unique_ptr<DirWatcher> watcher_;  // stopped before the plugins unload
  TaskHandle debounce_;                  // --watch: the reload waits for the changes to settle
  std::atomic<bool> close_requested_{false};
  int close_exit_ = kExitOk;           // how the close ended (CloseExitCode)
  std::unique_ptr<DrainPhase> drain_;  // a drain, before the close
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_SERVER_H_
