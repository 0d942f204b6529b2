// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/assembly.h
//
// Assembly: the parts that serve plugins and players, wired the one way every host of them
// wires them: moltd (server.h) and the plugin test kit (testkit/). In build order, released in
// reverse:
//   the kernel, the profile database (its own thread), the network (nothing listening yet), the
//   profile registry, the plugin host with the ABI's layers attached (network, profiles,
//   analytics, live values, worker jobs), each subsystem's stats section.
// And the close they share (spec: Close phase): Kernel.Closing (intake stops), every service's
// stop in reverse boot order within its deadline, Kernel.Stopped; beside the stops, the drain
// (analytics, every profile's final save), from Kernel.Stopped or at most 5 s after the close;
// and only then do the sessions end. What is moltd's alone (the admin endpoint, deploys, signals,
// the boot plan, diagnostics) stays in Server.
//
//   MOLT_ASSIGN_OR_RETURN(auto parts, Assembly::Build(settings, std::move(config), paths));
//   parts->plugins().LoadDirectory(dir); parts->kernel().Start();
//   parts->StopIntakeOnClose();                     // serving
//   parts->Close("SIGTERM", over, [](const CloseOutcome&) { ... });  // the loop runs until then
//   parts->Release();                                // Kernel::Shutdown, the libraries unload
//
// Thread safety: the kernel thread (the thread that builds it, until its loop runs elsewhere).
#ifndef MOLT_KERNEL_SERVER_ASSEMBLY_H_
#define MOLT_KERNEL_SERVER_ASSEMBLY_H_

#include <molt/kernel/status.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/core/bus.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/config.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/server/settings.h"

namespace molt::kernel {

class ClosePhase;
class Kernel;
namespace analytics {
class Analytics;
}  // namespace analytics
namespace fleet {
class KvStore;
class Messages;
}  // namespace fleet
namespace live {
class LiveValues;
}  // namespace live
namespace loader {
class PluginHost;
}  // namespace loader
namespace net {
class Network;
}  // namespace net
namespace store {
class ProfileRegistry;
class ProfileStore;
}  // namespace store
namespace workers {
class Workers;
}  // namespace workers

// How a close ended (Assembly::Close).
struct CloseOutcome {
  std::vector<std::string> overran;  // the stops cut at their deadline: "NAME (5.0 s)"
  std::size_t refused = 0;           // final saves refused: their leases were lost
  bool drain_cut = false;            // the drain's deadline came before its last save
  // Every profile saved and every stop on time.
  bool clean() const { return overran.empty() && refused == 0 && !drain_cut; }
};

// The whole close may take this much past the later of its budget and the drain's deadline
// before the watchdog ends it (ClosePhase::Limits::deadline).
inline constexpr Duration kCloseMargin = std::chrono::seconds(2);

// Where an assembly keeps its files.
struct AssemblyPaths {
  std::string copy_dir;  // the private copies of the plugin libraries
  std::string live_db;   // live values (live.db)
  // The profile store's lease owner (store::HostId() for moltd).
  std::string host;
  // The kernel's clock; null: the real one (the test kit passes its manual clock).
  Clock* clock = nullptr;
};

class Assembly {
 public:
  // Builds every part from `settings` (the profile database at settings.profiles_db: a
  // PostgreSQL URL, an SQLite file, or ":memory:") with `config` for the plugins' config_get.
  // Fails naming the part.
  static Result<std::unique_ptr<Assembly>> Build(const Settings& settings, Config config,
                                                 AssemblyPaths paths);
  Assembly(const Assembly&) = delete;
  Assembly& operator=(const Assembly&) = delete;
  // Release() if it did not run, then every part in reverse build order.
  ~Assembly();

  Kernel& kernel() { return *kernel_; }
  store::ProfileStore& profile_db() { return *profile_db_; }
  net::Network& network() { return *network_; }
  store::ProfileRegistry& profiles() { return *profiles_; }
  analytics::Analytics& analytics() { return *analytics_; }
  live::LiveValues& live() { return *live_; }
  fleet::Messages& messages() { return *messages_; }
  fleet::KvStore& kv() { return *kv_; }
  loader::PluginHost& plugins() { return *plugins_; }
  workers::Workers& workers() { return *workers_; }

  // A generation serves: from now on Kernel.Closing stops new connections (after the plugins'
  // own Kernel.Closing handlers, which subscribed at init).
  void StopIntakeOnClose();
  // The close (see the top of this file and close_phase.h). `done` runs on the kernel thread
  // once the sessions ended: after the stops and the drain, or the drain's deadline
  // (settings.profiles_drain after the close began), which logs what stays unsaved.
  // `over_deadline` runs on the watchdog's thread when the close as a whole has not ended
  // kCloseMargin after the later of the budget and the drain's deadline (the kernel thread is
  // stuck). A second close is ignored (false).
  bool Close(const std::string& reason, std::function<void()> over_deadline,
             std::function<void(const CloseOutcome&)> done);
  bool closing() const;
  // Kernel::Shutdown, then every library unloads (those that cannot are reported retired).
  // Idempotent.
  void Release();

 private:
  explicit Assembly(const Settings& settings);
  void Drain();
  void EndClose();

  struct Closing {  // the close under way
    TimePoint at;
    std::string reason;
    std::function<void(const CloseOutcome&)> done;
    TaskHandle deadline;  // the drain's
    bool stopped = false;
    bool drained = false;
    bool ended = false;
    CloseOutcome outcome;
  };

  const Settings settings_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<store::ProfileStore> profile_db_;
  std::unique_ptr<net::Network> network_;
  std::unique_ptr<store::ProfileRegistry> profiles_;
  std::unique_ptr<analytics::Analytics> analytics_;  // destroyed before the kernel: it drains
  std::unique_ptr<live::LiveValues> live_;           // outlives the plugins that declare
  std::unique_ptr<fleet::Messages> messages_;        // outlives the plugins that subscribe
  std::unique_ptr<fleet::KvStore> kv_;               // outlives the plugins that call it
  std::unique_ptr<loader::PluginHost> plugins_;
  workers::Workers* workers_ = nullptr;  // the plugin host's layer
  std::unique_ptr<ClosePhase> close_;
  std::unique_ptr<Closing> closing_;
  Connection stop_intake_;
  bool released_ = false;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_ASSEMBLY_H_
