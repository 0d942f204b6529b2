// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/boot_plan.h
//
// BootPlan: what a serving moltd boots, in what order, within the boot budget (spec §31). Never
// an empty server: the first build that loads and starts serves. With a branch head: the head,
// its earlier builds (deploy::BootCandidates), the last known good, then the plugin directory
// (the bundled fallback); without one, the plugin directory (the development path), then the
// last known good. Each build is read off the kernel thread within its load cap; a failure is
// logged with the next one tried, and a deployed build that failed is marked failed here. The
// deploy registry is opened off the kernel thread (RegistryOpener): the boot waits for it at most
// kBootReadsWait, then boots without it, and the branch's head follows once it opens. Clients are
// refused with "Starting" until a generation serves. Composed by Server (server.h), which it asks
// through Hooks.
//
//   BootPlan boot(parts, settings, last_known_good, close_requested, hooks);
//   loop.Post([&] { boot.Begin(); });   // ... hooks.serve(at): the server calls Booted(at)
//
// Thread safety: the kernel thread (the opener's callbacks post to it).
#ifndef MOLT_KERNEL_SERVER_BOOT_PLAN_H_
#define MOLT_KERNEL_SERVER_BOOT_PLAN_H_

#include <molt/kernel/status.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/deploy/boot_candidates.h"
#include "kernel/src/server/settings.h"

namespace molt::kernel {

class Assembly;
class RegistryOpener;
namespace deploy {
class Deploys;
}  // namespace deploy
namespace loader {
class PluginHost;
}  // namespace loader

class BootPlan {
 public:
  static constexpr Duration kBootBudget = std::chrono::seconds(15);
  static constexpr Duration kBootDeadline = std::chrono::seconds(12);
  static constexpr Duration kBootLoadCap = std::chrono::seconds(4);
  static constexpr Duration kBootLateLoad = std::chrono::seconds(2);
  static constexpr Duration kBootFallbackAt = std::chrono::seconds(9);
  static constexpr Duration kBootReadsWait = std::chrono::seconds(3);

  // What the boot asks of the server that composes it, on the kernel thread.
  struct Hooks {
    // The registry opened: the server keeps the deploys (its admin API and report read them);
    // they outlive the boot's use of them.
    std::function<void(std::unique_ptr<deploy::Deploys>)> keep_deploys;
    // The registry opened after a generation began serving: deploys start (Server::StartDeploys).
    std::function<void()> start_deploys;
    // Boot source `at` loaded and started: serving begins (Server::StartServing, which calls
    // Booted(at)).
    std::function<void(std::size_t at)> serve;
    // The branch's head swapped in again, as a new generation (Server::Reload).
    std::function<void(const std::string& reason)> reload;
  };

  // A build the boot may try.
  struct Source {
    std::string path;
    std::string what;                                 // for the log
    std::string reason;                               // the swap report's, after "boot: "
    const deploy::BootCandidate* deployed = nullptr;  // into the candidates
  };

  // `closing`: the server's close was asked (nothing more boots).
  BootPlan(Assembly& parts, const Settings& settings, std::string last_known_good,
           const std::atomic<bool>& closing, Hooks hooks);
  ~BootPlan();
  BootPlan(const BootPlan&) = delete;
  BootPlan& operator=(const BootPlan&) = delete;

  // Opens the registry off the kernel thread and boots once it is open, or at kBootReadsWait.
  // REQUIRES: the kernel loop runs.
  void Begin();
  // Source `at` serves: a deployed build is the applied one now; logged unless the first source
  // boots and is no deployed build. Returns it.
  const Source& Booted(std::size_t at);
  // Once serving: the head follows a registry that opened late, or a head that ran out of boot
  // time is swapped in again.
  void AfterServing();
  // Nothing boots: logs why, and the loop ends with exit_code() kExitBootFailed.
  void StopBooting(const std::string& why);
  // No registry arrives from here on (the close); waits for an attempt in progress.
  void StopOpening();

  int exit_code() const { return exit_code_; }
  // When Begin() ran: the boot budget counts from here.
  TimePoint started() const { return started_; }

  // Fault injection for the boot-budget tests (tests/hosts/molt_deploy_test.cc): a stuck disk or
  // network file system cannot be made for real in a test. MOLT_TEST_SLOW_STAGES="SECONDS[:N]"
  // holds each of the first N background stages (every one without N) for SECONDS before it
  // reads.
  static void InjectSlowStages(loader::PluginHost& plugins);

 private:
  // What boots, in order (see the top of this file).
  void Plan();
  // From sources_[at] on, within the boot budget; then hooks_.serve(at).
  void BootFrom(std::size_t at);
  // sources_[at] failed (logged; a deployed build is marked failed here).
  void BootFailed(std::size_t at, const Status& why);
  // The registry opened (the kernel thread): deploys start; opened late, the head follows.
  void OnRegistryOpen(std::unique_ptr<deploy::Deploys> deploys);
  void FollowHeadAfterLateRegistry();

  Assembly& parts_;
  const Settings& settings_;
  const std::string last_known_good_;
  const std::atomic<bool>& closing_;
  const Hooks hooks_;
  deploy::Deploys* deploys_ = nullptr;  // the server keeps it once the registry opened
  std::vector<deploy::BootCandidate> candidates_;
  std::vector<Source> sources_;
  TimePoint started_;
  bool retry_head_ = false;  // the head ran out of boot time: swap it in once serving
  bool begun_ = false;
  bool planned_with_registry_ = false;  // else the head follows once serving
  bool serving_ = false;
  TaskHandle registry_gate_;  // kBootReadsWait after the start
  std::unique_ptr<RegistryOpener> registry_opener_;
  int exit_code_ = 0;  // kExitBootFailed when nothing booted
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_BOOT_PLAN_H_
