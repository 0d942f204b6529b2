// SPDX-License-Identifier: Apache-2.0
// Assembly: the parts that serve plugins and players, built in order, and the close they share
// (assembly.h).
#include "kernel/src/server/assembly.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/object.hpp>
#include <memory>
#include <utility>

#include "kernel/src/admin/stats_json.h"
#include "kernel/src/analytics/analytics_api.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/fleet/kv_api.h"
#include "kernel/src/fleet/kv_store.h"
#include "kernel/src/fleet/messages.h"
#include "kernel/src/fleet/messages_api.h"
#include "kernel/src/live/live_api.h"
#include "kernel/src/live/live_values.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/net_api.h"
#include "kernel/src/net/network.h"
#include "kernel/src/server/close_phase.h"
#include "kernel/src/store/pg_store.h"
#include "kernel/src/store/profile_api.h"
#include "kernel/src/store/profile_registry.h"
#include "kernel/src/store/sqlite_store.h"
#include "kernel/src/workers/workers_api.h"

namespace molt::kernel {

Result<std::unique_ptr<Assembly>> Assembly::Build(const Settings& settings, Config config,
                                                  AssemblyPaths paths) {
  std::unique_ptr<Assembly> a(new Assembly(settings));
  KernelOptions ko;
  ko.role = Role::kServer;
  ko.scheduler = settings.scheduler;
  ko.tick_rate = settings.tick_rate;
  ko.clock = paths.clock;
  ko.config = std::move(config);
  MOLT_ASSIGN_OR_RETURN(a->kernel_, Kernel::Boot(std::move(ko)));
  Kernel& kernel = *a->kernel_;
  // The profile database, on its own thread; its results come back through the kernel loop.
  // PostgreSQL for a fleet (docs/fleet.md), else an SQLite file of this server's.
  auto deliver = [&kernel](std::function<void()> fn) { kernel.loop().Post(std::move(fn)); };
  if (store::IsPostgresUrl(settings.profiles_db)) {
    MOLT_ASSIGN_OR_RETURN(a->profile_db_, store::PgStore::Open(settings.profiles_db, deliver));
  } else {
    store::SqliteOptions so;
    so.synchronous_full = settings.profiles_sync_full;
    MOLT_ASSIGN_OR_RETURN(a->profile_db_,
                          store::SqliteStore::Open(settings.profiles_db, deliver, so));
  }
  a->network_ = std::make_unique<net::Network>(kernel, settings.net);
  net::Network& network = *a->network_;
  kernel.AddStatsSection("net", [&network](boost::json::object& section) {
    section = admin::NetJson(network.Snapshot());
  });
  a->profiles_ = std::make_unique<store::ProfileRegistry>(kernel, network, *a->profile_db_,
                                                          std::move(paths.host));
  a->plugins_ = std::make_unique<loader::PluginHost>(kernel, paths.copy_dir);
  abi::AbiShared& shared = a->plugins_->shared();
  abi::AttachNetwork(shared, &network);
  abi::AttachProfiles(shared, *a->profiles_);
  // Analytics: a queue on the kernel thread, JSON Lines written by a thread of its own.
  a->analytics_ = std::make_unique<analytics::Analytics>(kernel, settings.analytics);
  analytics::Analytics& events = *a->analytics_;
  abi::AttachAnalytics(shared, events, [&network](molt_session_t id) {
    const net::Session* s = network.sessions().Find(id);
    return s != nullptr ? s->user() : std::string();
  });
  kernel.AddStatsSection("analytics", [&events](boost::json::object& section) {
    section = admin::AnalyticsJson(events.stats());
  });
  // Live values: overrides read at boot (so a server that starts mid-event serves them), stored
  // by a thread of their own, Config.Changed on the Bus for each real change.
  live::LiveOptions live_options;
  live_options.path = std::move(paths.live_db);
  a->live_ = std::make_unique<live::LiveValues>(
      std::move(live_options),
      [&kernel](std::function<void()> fn) { kernel.loop().Post(std::move(fn)); },
      [&kernel](const std::string& key, const std::string& value) {
        const Value args[] = {Value::String(key), Value::String(value)};
        kernel.bus().Publish("Config.Changed", args);
      },
      [] { return WallMs(); });
  (void)a->live_->Open();  // an error is logged: the defaults are served, sets refused with it
  live::LiveValues& live = *a->live_;
  live::AttachLive(shared, live);
  kernel.AddStatsSection(
      "live", [&live](boost::json::object& section) { section = admin::LiveJson(live.stats()); });
  // Messages between servers: through the fleet's database, else this server hears its own
  // (docs/fleet.md, "Messages").
  fleet::MessagesOptions message_options;
  message_options.url = store::IsPostgresUrl(settings.profiles_db) ? settings.profiles_db : "";
  message_options.server_id = settings.server_id;
  message_options.branch = settings.branch;
  a->messages_ = std::make_unique<fleet::Messages>(
      std::move(message_options),
      [&kernel](std::function<void()> fn) { kernel.loop().Post(std::move(fn)); },
      [&network] { return network.sessions().count(); }, [] { return WallMs(); });
  MOLT_RETURN_IF_ERROR(a->messages_->Open());
  fleet::Messages& messages = *a->messages_;
  fleet::AttachMessages(shared, messages);
  kernel.AddStatsSection("messages", [&messages](boost::json::object& section) {
    section = admin::MessagesJson(messages.stats());
  });
  // The key-value store: the fleet's, else in memory (docs/fleet.md, "Key-value store").
  a->kv_ = std::make_unique<fleet::KvStore>(
      store::IsPostgresUrl(settings.profiles_db) ? settings.profiles_db : "",
      [&kernel](std::function<void()> fn) { kernel.loop().Post(std::move(fn)); },
      [] { return WallMs(); });
  MOLT_RETURN_IF_ERROR(a->kv_->Open());
  fleet::KvStore& kv = *a->kv_;
  fleet::AttachKv(shared, kv);
  kernel.AddStatsSection(
      "kv", [&kv](boost::json::object& section) { section = admin::KvJson(kv.stats()); });
  // Worker jobs: a pool of the layer's own (AbiShared's, like every layer).
  a->workers_ = &workers::AttachWorkers(shared, settings.workers);
  kernel.AddStatsSection("workers", [w = a->workers_](boost::json::object& section) {
    section = admin::WorkersJson(w->stats());
  });
  return a;
}

Assembly::Assembly(const Settings& settings) : settings_(settings) {}

Assembly::~Assembly() {
  Release();
  if (kernel_ != nullptr) {  // the sections read parts that go before the kernel
    for (const char* section : {"net", "analytics", "live", "messages", "kv", "workers"}) {
      kernel_->RemoveStatsSection(section);
    }
  }
}

void Assembly::StopIntakeOnClose() {
  stop_intake_ = kernel_->bus().Subscribe(
      "Kernel.Closing", [this](std::string_view, Args) { network_->StopAccepting(); });
}

bool Assembly::closing() const { return close_ != nullptr && close_->closing(); }

// The close order: Kernel.Closing (new connections refused from here), every service stops (a
// stop() may still reach the connected players), Kernel.Stopped; the final saves of every
// profile (the drain) beside the stops, from Kernel.Stopped or 5 s after the close, whichever
// is first; and only once both ended do the sessions end (their Bye names the reason).
bool Assembly::Close(const std::string& reason, std::function<void()> over_deadline,
                     std::function<void(const CloseOutcome&)> done) {
  if (close_ != nullptr) {
    return close_->Begin(reason, {});  // refused, with its log line
  }
  plugins_->Close();
  messages_->StopPublishing();  // what is queued still goes out
  // Worker jobs not ended are cancelled: their handlers hear so while the plugins still run.
  workers_->Close();
  const Duration budget = Seconds(settings_.close_budget);
  const Duration drain = Seconds(settings_.profiles_drain);
  close_ = std::make_unique<ClosePhase>(
      *kernel_,
      ClosePhase::Limits{budget, kDrainWaitForStopped, std::max(budget, drain) + kCloseMargin},
      std::move(over_deadline));
  closing_ = std::make_unique<Closing>();
  closing_->at = RealNow();
  closing_->reason = reason;
  closing_->done = std::move(done);
  return close_->Begin(reason, {.drain = [this] { Drain(); },
                                .stopped =
                                    [this] {
                                      closing_->stopped = true;
                                      EndClose();
                                    }});
}

// Every profile's final save and lease release; at the drain's deadline (counted from the
// close) it ends anyway, naming what is unsaved.
void Assembly::Drain() {
  // What the services tracked, their stop() included, is written before anything ends.
  analytics_->Drain();
  const TimePoint t0 = RealNow();
  const Duration left =
      std::max<Duration>(closing_->at + Seconds(settings_.profiles_drain) - t0, Duration::zero());
  closing_->deadline = kernel_->scheduler().After(
      left,
      [this, left] {
        LogScope("Profiles")
            .Error(
                "the close drain did not finish in its {:.1f} s: the server exits now and the "
                "profiles not yet written keep only their last autosave (raise "
                "profiles.drain_seconds, or free the database's disk)",
                ToSeconds(left));
        closing_->outcome.drain_cut = true;
        closing_->drained = true;
        EndClose();
      },
      Priority::kKernel, TaskOrigin::Named("profile drain deadline"));
  profiles_->Drain([this, t0](std::size_t saved, std::size_t failed) {
    if (closing_->drained) {  // its deadline came first
      return;
    }
    LogScope("Profiles")
        .Info("close drain done in {:.1f}ms: {} profiles saved{}", ToSeconds(RealNow() - t0) * 1000,
              saved,
              failed > 0 ? fmt::format(", {} refused (their leases were lost)", failed) : "");
    closing_->outcome.refused = failed;
    closing_->drained = true;
    closing_->deadline.Cancel();
    EndClose();
  });
}

// The sessions end once the stops and the drain both did.
void Assembly::EndClose() {
  if (!closing_->stopped || !closing_->drained || std::exchange(closing_->ended, true)) {
    return;
  }
  network_->Shutdown(closing_->reason);
  closing_->outcome.overran = close_->overruns();
  close_->Finish();
  if (closing_->done) {
    closing_->done(closing_->outcome);
  }
}

void Assembly::Release() {
  if (std::exchange(released_, true)) {
    return;
  }
  stop_intake_.Disconnect();
  if (kernel_ != nullptr) {
    if (Status s = kernel_->Shutdown(); !s.ok()) {
      LogScope("molt").Error("{}", s.message());
    }
  }
  if (plugins_ != nullptr) {
    plugins_->UnloadAll();
  }
}

}  // namespace molt::kernel
