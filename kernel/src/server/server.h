// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/server.h
//
// Server: moltd's composition root (RunServer, molt/kernel/server.h). It owns every part of a
// running server, builds them in order and releases them in reverse, in three phases:
//   boot   the settings, the data directory, the parts every host of plugins shares (assembly.h:
//          the kernel, the profile database, the network, the profile registry, the plugin host
//          with the ABI's layers attached), the signals, diagnostics, debug bundles and the
//          admin API; then the plugins loaded and
//          started (the last known good build when the plugin directory fails), the fuzz gate,
//          the listener and the admin endpoint
//   serve  the kernel loop, until the close stops it
//   close  SIGTERM or SIGINT: Kernel.Closing, every service's stop, the profiles' final saves,
//          the sessions' end, the loop stops; then the kernel's teardown and the plugins unload
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
class DirWatcher;
class RegistryOpener;
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
  // What boots, in order: the branch's head and its earlier builds
  // (deploy::Deploys::BootCandidates), the plugin directory (first when the branch has no head),
  // the last known good build.
  void PlanBoot();
  // --check: the plugin directory alone, loaded and started on this thread.
  Status LoadPlugins();
  // The boot of a serving moltd (spec §31), on the kernel thread with its loop running: from
  // boot_sources_[at] on, within the boot budget, then StartServing(). Clients are refused with
  // "Starting" until a generation serves.
  static constexpr Duration kBootBudget = std::chrono::seconds(15);
  static constexpr Duration kBootDeadline = std::chrono::seconds(12);
  static constexpr Duration kBootLoadCap = std::chrono::seconds(4);
  static constexpr Duration kBootLateLoad = std::chrono::seconds(2);
  static constexpr Duration kBootFallbackAt = std::chrono::seconds(9);
  void BootFrom(std::size_t at);
  static constexpr Duration kBootReadsWait = std::chrono::seconds(3);
  // Opens the registry off the kernel thread and boots once it is open, or at kBootReadsWait.
  void AwaitRegistry();
  // The registry opened (the kernel thread): deploys start; opened late, the head follows.
  void OnRegistryOpen(std::unique_ptr<deploy::Deploys> deploys);
  void FollowHeadAfterLateRegistry();
  // boot_sources_[at] failed (logged; a deployed build is marked failed here), or serves.
  void BootFailed(std::size_t at, const Status& why);
  void Booted(std::size_t at);
  // Nothing boots: logs why, and the loop ends with kExitBootFailed.
  void StopBooting(const std::string& why);
  // A reload (SIGHUP, the admin API): the branch's head swapped in again, else the plugin
  // directory; `done` (may be null) hears the report.
  void Reload(const std::string& reason, std::function<void(const loader::SwapReport&)> done);
  // Deploys ask the kernel thread to serve a build through this (deploy::SwapFn).
  void StartDeploys();
  // The listener and the admin endpoint.
  Status Open();
  Status StartAdmin();
  // --- serve ---
  // boot_sources_[at] serves: the fuzz gate (dev auth), then clients are admitted and the
  // server's own tasks start (health window, deploys, crash snapshots, --watch).
  void StartServing(std::size_t at);
  void StartWatching();  // --watch
  // This server as its fleet sees it (the heartbeat; `molt servers`), on the kernel thread.
  fleet::ServerReport Report() const;
  // --- close ---
  void OnSignal(int signo);               // the watcher's thread
  void Close(const std::string& reason);  // the kernel thread
  // The drain (docs/fleet.md, "Draining a server"), from any thread: false (logged) when a close
  // already runs. `deadline_seconds`: how long sessions may stay before the close ends them.
  bool RequestDrain(double deadline_seconds, const std::string& why);
  // The kernel thread: no new clients, Kernel.SoftShutdown(sessions), every session told where
  // to go, then the close once the server is empty or at the deadline.
  void Drain(double deadline_seconds, const std::string& why);
  // Spreads the sessions over the live servers of this branch in `servers`, the least loaded
  // first (net::Network::Redirect); none: logged, and the close ends them.
  void Redirect(Result<std::vector<fleet::ServerReport>> servers, const std::string& why);
  // The drain's end: the close, once no session is left or at `deadline` (checked every 100 ms;
  // a SIGTERM or SIGINT meanwhile closes at once).
  void CloseWhenEmpty(TimePoint deadline, const std::string& why);
  void Release();

  const ServerOptions options_;
  std::unique_ptr<admin::LogRing> log_ring_;  // the newest lines, from the first one logged
  Config config_;
  Settings settings_;
  std::string admin_token_;
  std::string token_file_;
  std::string copy_dir_;  // this process's copies of the plugin libraries
  std::string last_known_good_;
  std::string booted_from_;  // the build the boot generation came from ("": still starting)
  struct BootSource {
    std::string path;
    std::string what;                                      // for the log
    std::string reason;                                    // the swap report's, after "boot: "
    const deploy::Deploys::Candidate* deployed = nullptr;  // into boot_candidates_
  };
  std::vector<deploy::Deploys::Candidate> boot_candidates_;
  std::vector<BootSource> boot_sources_;
  TimePoint boot_started_;
  bool retry_head_ = false;  // the head ran out of boot time: swap it in once serving
  bool boot_begun_ = false;
  bool boot_planned_with_registry_ = false;  // else the head follows once serving
  TaskHandle registry_gate_;                 // kBootReadsWait after the start
  std::unique_ptr<RegistryOpener> registry_opener_;
  int boot_exit_code_ = 0;  // kExitBootFailed when nothing booted
  // The generation a deploy (or the boot) made serve, and its build's manifest SHA-256: a deploy
  // of that build while that generation serves is adopted without a swap (the kernel thread).
  std::string deployed_generation_;
  std::string deployed_sha_;
  // The kernel, the network, the profiles, the plugins and their layers (assembly.h).
  std::unique_ptr<Assembly> parts_;
  std::unique_ptr<admin::ErrorWatch> error_watch_;
  std::unique_ptr<fleet::Fleet> fleet_;  // null for --check
  std::int64_t started_ms_ = 0;          // wall clock, for the fleet
  // Set on the kernel thread once the registry opened (RegistryOpener); null for --check.
  std::unique_ptr<deploy::Deploys> deploys_;
  std::unique_ptr<SignalWatcher> signals_;
  std::unique_ptr<admin::Diagnostics> diagnostics_;
  std::unique_ptr<admin::DebugBundles> bundles_;
  std::unique_ptr<admin::AdminApi> admin_api_;
  std::unique_ptr<admin::HttpServer> admin_server_;
  std::unique_ptr<DirWatcher> watcher_;  // stopped before the plugins unload
  TaskHandle debounce_;                  // --watch: the reload waits for the changes to settle
  std::atomic<bool> close_requested_{false};
  std::atomic<bool> drain_waiting_{false};  // a drain waits for its deadline: a signal cuts it
  TaskHandle drain_wait_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_SERVER_H_
