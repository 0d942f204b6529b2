// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/plugins_routes.h
//
// PluginsRoutes: the plugins and what they hook (docs/generations.md, docs/operations.md), on the
// kernel thread:
//   GET  /api/v1/plugins        the generations: serving, kept, history (PluginHost::StatsObject)
//   GET  /api/v1/hooks          each hook point with its handlers, fires, rejects and timings
//   POST /api/v1/reload?wait=S  the plugin directory (or the branch's head) swapped in: 202 at
//                               once, or the swap report once over (at most S seconds, 1..600)
// Composed by AdminApi (admin_api.h).
//
// Thread safety: the handlers run on the kernel thread.
#ifndef MOLT_KERNEL_ADMIN_PLUGINS_ROUTES_H_
#define MOLT_KERNEL_ADMIN_PLUGINS_ROUTES_H_

#include <boost/json/object.hpp>
#include <functional>

#include "kernel/src/admin/route_table.h"

namespace molt::kernel {
class Kernel;
namespace loader {
class PluginHost;
struct SwapReport;
}  // namespace loader
}  // namespace molt::kernel

namespace molt::kernel::admin {

class PluginsRoutes {
 public:
  // Swaps in the plugins again (AdminSources::reload); `done` (may be null) hears the report.
  using ReloadFn = std::function<void(std::function<void(const loader::SwapReport&)> done)>;
  static constexpr std::uint64_t kMaxWaitSeconds = 600;

  PluginsRoutes(Kernel& kernel, loader::PluginHost& plugins, ReloadFn reload)
      : kernel_(kernel), plugins_(plugins), reload_(std::move(reload)) {}
  void Register(RouteTable& table);

 private:
  boost::json::object HooksJson() const;
  void Reload(const HttpRequest& request, HttpReply reply);

  Kernel& kernel_;
  loader::PluginHost& plugins_;
  const ReloadFn reload_;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_PLUGINS_ROUTES_H_
