// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/admin_sources.h
//
// AdminSources: what the admin API reads and asks, handed to it by the server that owns every
// part (server/server.h), which outlives it. Each resource's routes class takes the parts it
// answers for from here (admin_api.h composes them).
//
// Thread safety: the references are the parts'; each routes class says on which thread it uses
// them (the kernel thread, but where a route says otherwise).
#ifndef MOLT_KERNEL_ADMIN_ADMIN_SOURCES_H_
#define MOLT_KERNEL_ADMIN_ADMIN_SOURCES_H_

#include <molt/kernel/status.h>

#include <functional>
#include <string>
#include <string_view>

#include "kernel/src/fleet/fleet.h"

namespace molt::kernel {
class Kernel;
namespace analytics {
class Analytics;
}  // namespace analytics
namespace deploy {
class Deploys;
}  // namespace deploy
namespace fleet {
class KvStore;
class Messages;
}  // namespace fleet
namespace live {
class LiveValues;
}  // namespace live
namespace loader {
class PluginHost;
struct SwapReport;
}  // namespace loader
namespace net {
class Network;
}  // namespace net
namespace store {
class ProfileStore;
}  // namespace store
}  // namespace molt::kernel

namespace molt::kernel::admin {

class Diagnostics;
class ErrorWatch;
class LogRing;

struct AdminSources {
  Kernel& kernel;
  net::Network& network;
  loader::PluginHost& plugins;
  store::ProfileStore& store;
  const LogRing& logs;
  const Diagnostics& diagnostics;
  const ErrorWatch& errors;
  // Swaps in the plugin directory as a new generation; `done` (may be null) hears the report.
  std::function<void(std::function<void(const loader::SwapReport&)> done)> reload;
  // Writes a debug bundle (debug_bundle.h) and returns its path.
  std::function<Result<std::string>(std::string_view reason)> write_bundle;
  std::function<bool()> closing;  // true once the close began
  // Drains this server (docs/fleet.md): false when it is already closing.
  std::function<bool(double deadline_seconds, const std::string& why)> drain;
  // Builds and deploys (deploy/deploys.h); null: this server takes none (--check).
  deploy::Deploys* deploys = nullptr;
  // The analytics queue (/metrics' molt_analytics_*); null: none.
  const analytics::Analytics* analytics = nullptr;
  // The live values (/api/v1/config, live_routes.h); null: none.
  live::LiveValues* live = nullptr;
  // The fleet (/api/v1/servers) and this server's report to it (the kernel thread); null: none.
  fleet::Fleet* fleet = nullptr;
  std::function<fleet::ServerReport()> self_report = nullptr;
  // Messages between servers and the key-value store (/metrics' molt_messages_*, molt_kv_*);
  // null: none.
  const fleet::Messages* messages = nullptr;
  const fleet::KvStore* kv = nullptr;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_ADMIN_SOURCES_H_
