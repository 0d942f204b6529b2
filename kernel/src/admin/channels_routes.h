// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/channels_routes.h
//
// ChannelsRoutes: the channels plugins declared and the frames on them (docs/operations.md), on
// the kernel thread:
//   GET /api/v1/channels        each channel with its counters (stats_json.h, ChannelsJson)
//   GET /api/v1/wire?since=N    the wire inspector's frames after N; each read keeps it
//                               recording for kInspectLease (net::Network::Inspect)
// Composed by AdminApi (admin_api.h).
//
// Thread safety: the handlers run on the kernel thread.
#ifndef MOLT_KERNEL_ADMIN_CHANNELS_ROUTES_H_
#define MOLT_KERNEL_ADMIN_CHANNELS_ROUTES_H_

#include <boost/json/object.hpp>

#include "kernel/src/admin/route_table.h"
#include "kernel/src/core/clock.h"

namespace molt::kernel::net {
class Network;
}  // namespace molt::kernel::net

namespace molt::kernel::admin {

class ChannelsRoutes {
 public:
  // How long the wire inspector records after each read of /api/v1/wire.
  static constexpr Duration kInspectLease = std::chrono::seconds(10);

  explicit ChannelsRoutes(net::Network& network) : network_(network) {}
  void Register(RouteTable& table);

 private:
  boost::json::object WireJson(const HttpRequest& request);

  net::Network& network_;
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_CHANNELS_ROUTES_H_
