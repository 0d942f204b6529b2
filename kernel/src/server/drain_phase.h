// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/drain_phase.h
//
// DrainPhase: a server's drain (docs/fleet.md, "Draining a server"; molt drain, SIGUSR1, the
// admin API). No new clients, Kernel.SoftShutdown(sessions), every session told which live server
// of the branch to go to (the least loaded first, net::Network::Redirect), then the close once no
// session is left or at the deadline; a SIGTERM or SIGINT while it waits closes at once. A server
// still starting, or one without a fleet (a check), closes at once. Composed by Server
// (server.h), whose close it ends with.
//
//   DrainPhase drain(parts, fleet, settings, close_requested, report, serving, close);
//   drain.Request(30, "molt drain");   // any thread
//
// Thread safety: Request() and CutShort() from any thread; the rest on the kernel thread.
#ifndef MOLT_KERNEL_SERVER_DRAIN_PHASE_H_
#define MOLT_KERNEL_SERVER_DRAIN_PHASE_H_

#include <molt/kernel/status.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/fleet/fleet.h"
#include "kernel/src/server/settings.h"

namespace molt::kernel {

class Assembly;

class DrainPhase {
 public:
  // What the drain asks of the server that composes it.
  struct Hooks {
    std::function<fleet::ServerReport()> report;        // this server as the fleet sees it
    std::function<bool()> serving;                      // a generation serves
    std::function<void(const std::string& why)> close;  // the close (Server::Close)
  };

  // `fleet` null: no fleet (a check). `close_requested`: the server's, shared with its signals.
  DrainPhase(Assembly& parts, fleet::Fleet* fleet, const Settings& settings,
             std::atomic<bool>& close_requested, Hooks hooks)
      : parts_(parts),
        fleet_(fleet),
        settings_(settings),
        close_requested_(close_requested),
        hooks_(std::move(hooks)) {}

  // From any thread: false (logged) when a close already runs. `deadline_seconds`: how long
  // sessions may stay before the close ends them.
  bool Request(double deadline_seconds, const std::string& why);
  // A SIGTERM or SIGINT: true when the drain was waiting for its deadline (the caller closes
  // now). Any thread.
  bool CutShort() { return waiting_.exchange(false); }
  // The close began: the drain waits no more (the kernel thread).
  void Stop();

 private:
  // The kernel thread: no new clients, Kernel.SoftShutdown(sessions), every session told where
  // to go, then the close once the server is empty or at the deadline.
  void Drain(double deadline_seconds, const std::string& why);
  // Spreads the sessions over the live servers of this branch in `servers`, the least loaded
  // first (net::Network::Redirect); none: logged, and the close ends them.
  void Redirect(Result<std::vector<fleet::ServerReport>> servers, const std::string& why);
  // The drain's end: the close, once no session is left or at `deadline` (checked every 100 ms).
  void CloseWhenEmpty(TimePoint deadline, const std::string& why);

  Assembly& parts_;
  fleet::Fleet* const fleet_;
  const Settings& settings_;
  std::atomic<bool>& close_requested_;
  const Hooks hooks_;
  std::atomic<bool> waiting_{false};  // a drain waits for its deadline: a signal cuts it
  TaskHandle wait_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_DRAIN_PHASE_H_
