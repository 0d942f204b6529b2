// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/stats_json.h
//
// The server's stats model as JSON (boost::json): one function per subsystem snapshot, each the
// only place its figures become JSON: the stats' "net" section (Kernel::StatsObject, the
// stats_json slot, the admin API's status), the admin API's channels and profiles, the debug
// bundle. The same snapshots become Prometheus text in admin_metrics.cc. (The kernel's own and
// the generations' sections are rendered in core and loader: libmolt_client has them too.)
//
// Thread safety: pure functions of their arguments.
#ifndef MOLT_KERNEL_ADMIN_STATS_JSON_H_
#define MOLT_KERNEL_ADMIN_STATS_JSON_H_

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "kernel/src/analytics/analytics.h"
#include "kernel/src/fleet/kv_store.h"
#include "kernel/src/fleet/messages.h"
#include "kernel/src/live/live_values.h"
#include "kernel/src/net/network.h"
#include "kernel/src/store/profile_store.h"
#include "kernel/src/workers/workers_api.h"

namespace molt::kernel::admin {

// The "net" section: connections, handshakes, transport budgets, sessions waiting to resume,
// message totals, replicas, rejections before any channel, and every channel's counters.
boost::json::object NetJson(const net::NetSnapshot& net);

// The channels as /api/v1/channels lists them: each declaration, whether it is guarded, and its
// counters with the rejections by reason.
boost::json::array ChannelsJson(const net::NetSnapshot& net);

// The profile store's counters (/api/v1/profiles).
boost::json::object StoreJson(const store::StoreStats& store);

// The "analytics" section: events tracked, written, waiting, and dropped by reason.
boost::json::object AnalyticsJson(const analytics::AnalyticsStats& stats);

// The "workers" section: the pool's threads, queue and job outcomes, and the results handed over.
boost::json::object WorkersJson(const workers::WorkersStats& stats);

// The "live" section: live values declared and overridden, sets stored, refused and expired.
boost::json::object LiveJson(const live::LiveStats& stats);

// The "messages" section (docs/fleet.md, "Messages").
boost::json::object MessagesJson(const fleet::MessageStats& stats);

// The "kv" section (docs/fleet.md, "Key-value store").
boost::json::object KvJson(const fleet::KvStats& stats);

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_STATS_JSON_H_
