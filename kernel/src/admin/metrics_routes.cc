// SPDX-License-Identifier: Apache-2.0
// MetricsRoutes: every figure the kernel keeps, in the Prometheus text format, from the
// subsystems' snapshots (metrics_routes.h). Read on the kernel thread in one pass; nothing is kept
// for it.
#include "kernel/src/admin/metrics_routes.h"

#include <molt/molt.h>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/admin/error_watch.h"
#include "kernel/src/admin/metrics.h"
#include "kernel/src/analytics/analytics.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/fleet/kv_store.h"
#include "kernel/src/fleet/messages.h"
#include "kernel/src/live/live_values.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/network.h"
#include "kernel/src/store/profile_store.h"
#include "kernel/src/workers/workers_api.h"

namespace molt::kernel::admin {
namespace {

constexpr std::string_view kCounter = "counter";
constexpr std::string_view kGauge = "gauge";

double Num(std::uint64_t v) { return static_cast<double>(v); }

void SchedulerMetrics(MetricsWriter& w, const SchedulerStats& s) {
  w.Family("molt_scheduler_steps_total", kCounter,
           "Scheduler steps (server ticks: its rate is the server's TPS).");
  w.Add(Num(s.steps));
  w.Family("molt_scheduler_tasks_total", kCounter, "Tasks the scheduler ran.");
  w.Add(Num(s.tasks_run));
  w.Family("molt_scheduler_task_errors_total", kCounter, "Tasks that threw.");
  w.Add(Num(s.errors));
  w.Family("molt_scheduler_deferred_tasks", kGauge,
           "Ready tasks the last step's budget left waiting.");
  w.Add(Num(s.tasks_deferred));
  w.Family("molt_scheduler_deferring_steps_total", kCounter,
           "Steps whose budget left ready tasks waiting.");
  w.Add(Num(s.steps_deferring));
  w.Family("molt_scheduler_budget_seconds", kGauge, "The budget of the last step.");
  w.Add(ToSeconds(s.last_budget));
  w.Family("molt_scheduler_step_seconds", "histogram", "Time each scheduler step took.");
  std::array<double, kStepTimeBounds.size()> bounds{};
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    bounds[i] = static_cast<double>(kStepTimeBounds[i]) / 1e9;
  }
  w.AddHistogram(bounds, s.step_times, ToSeconds(s.step_time_total));
}

// The phase schedulers plugins used (task_start): none until one did.
void PhaseMetrics(MetricsWriter& w, const Scheduler& main) {
  std::vector<std::pair<std::string_view, const SchedulerStats*>> phases;
  for (Phase phase : {Phase::kPreTick, Phase::kPostTick}) {
    if (const Scheduler* p = main.FindPhase(phase)) {
      phases.emplace_back(PhaseName(phase), &p->stats());
    }
  }
  if (phases.empty()) {
    return;
  }
  w.Family("molt_scheduler_phase_tasks_total", kCounter, "Tasks a phase scheduler ran.");
  for (const auto& [name, s] : phases) {
    w.Add(Num(s->tasks_run), {{"phase", name}});
  }
  w.Family("molt_scheduler_phase_task_errors_total", kCounter, "Tasks of a phase that threw.");
  for (const auto& [name, s] : phases) {
    w.Add(Num(s->errors), {{"phase", name}});
  }
  w.Family("molt_scheduler_phase_deferred_tasks", kGauge,
           "Ready tasks of a phase its last step's budget left waiting.");
  for (const auto& [name, s] : phases) {
    w.Add(Num(s->tasks_deferred), {{"phase", name}});
  }
  w.Family("molt_scheduler_phase_step_seconds_total", kCounter, "Time a phase's steps took.");
  for (const auto& [name, s] : phases) {
    w.Add(ToSeconds(s->step_time_total), {{"phase", name}});
  }
}

void AnalyticsMetrics(MetricsWriter& w, const analytics::AnalyticsStats& s) {
  w.Family("molt_analytics_events_total", kCounter,
           "Analytics events plugins tracked (queued), and written.");
  w.Add(Num(s.tracked), {{"outcome", "tracked"}});
  w.Add(Num(s.written), {{"outcome", "written"}});
  w.Family("molt_analytics_dropped_total", kCounter, "Analytics events not written, by reason.");
  for (int i = 0; i < analytics::kDropReasonCount; ++i) {
    w.Add(Num(s.dropped[i]),
          {{"reason", analytics::DropReasonName(static_cast<analytics::DropReason>(i))}});
  }
  w.Family("molt_analytics_queued", kGauge, "Analytics events waiting to be written.");
  w.Add(Num(s.queued));
  w.Family("molt_analytics_retries_total", kCounter,
           "Analytics batches sent to the HTTP endpoint again after a failed try.");
  w.Add(Num(s.retries));
}

void WorkersMetrics(MetricsWriter& w, const workers::WorkersStats& s) {
  const workers::PoolStats& p = s.pool;
  w.Family("molt_workers_threads", kGauge, "Worker threads serving the job queue.");
  w.Add(Num(p.threads));
  w.Family("molt_workers_hung", kGauge,
           "Replaced workers whose timed-out job function has not returned yet.");
  w.Add(Num(p.hung));
  w.Family("molt_workers_queued", kGauge, "Worker jobs with chunks waiting for a worker.");
  w.Add(Num(p.queued));
  w.Family("molt_workers_running", kGauge, "Chunks of worker jobs running now.");
  w.Add(Num(p.running));
  w.Family("molt_workers_jobs_total", kCounter, "Worker jobs submitted, and how they ended.");
  w.Add(Num(p.submitted), {{"outcome", "submitted"}});
  w.Add(Num(p.completed), {{"outcome", "completed"}});
  w.Add(Num(p.failed), {{"outcome", "failed"}});
  w.Add(Num(p.timed_out), {{"outcome", "timed_out"}});
  w.Add(Num(p.cancelled), {{"outcome", "cancelled"}});
  w.Add(Num(p.refused), {{"outcome", "refused"}});
  w.Family("molt_workers_results_total", kCounter,
           "Job results handed to a done handler (inherited: by a later generation), or dropped.");
  w.Add(Num(s.delivered), {{"outcome", "delivered"}});
  w.Add(Num(s.inherited), {{"outcome", "inherited"}});
  w.Add(Num(s.dropped), {{"outcome", "dropped"}});
  w.Family("molt_workers_replaced_total", kCounter, "Workers replaced after a job timed out.");
  w.Add(Num(p.replaced));
}

void LiveMetrics(MetricsWriter& w, const live::LiveStats& s) {
  w.Family("molt_live_values", kGauge,
           "Live values: declared by a running plugin, and overridden by an operator.");
  w.Add(Num(s.declared), {{"kind", "declared"}});
  w.Add(Num(s.overrides), {{"kind", "overridden"}});
  w.Family("molt_live_changes_total", kCounter,
           "Live value sets and unsets: stored, refused (type, check, store), expired.");
  w.Add(Num(s.sets), {{"outcome", "stored"}});
  w.Add(Num(s.refused), {{"outcome", "refused"}});
  w.Add(Num(s.expired), {{"outcome", "expired"}});
}

void MessagesMetrics(MetricsWriter& w, const fleet::MessageStats& s) {
  w.Family("molt_messages_total", kCounter,
           "Messages between servers: published here, sent to the fleet, heard by subscribers "
           "here (replayed: held across a swap).");
  w.Add(Num(s.published), {{"outcome", "published"}});
  w.Add(Num(s.sent), {{"outcome", "sent"}});
  w.Add(Num(s.delivered), {{"outcome", "delivered"}});
  w.Add(Num(s.replayed), {{"outcome", "replayed"}});
  w.Family("molt_messages_dropped_total", kCounter,
           "Messages refused or dropped, by reason: the rate, the queue, waited too long unsent, "
           "held with nobody listening.");
  w.Add(Num(s.refused_rate), {{"reason", "rate"}});
  w.Add(Num(s.refused_queue), {{"reason", "queue"}});
  w.Add(Num(s.dropped_old), {{"reason", "old"}});
  w.Add(Num(s.dropped_held), {{"reason", "held"}});
  w.Family("molt_messages_send_failures_total", kCounter,
           "Sends to the fleet's database that failed (tried again).");
  w.Add(Num(s.send_failures));
  w.Family("molt_messages_queued", kGauge, "Messages waiting to be sent.");
  w.Add(Num(s.queued));
}

void KvMetrics(MetricsWriter& w, const fleet::KvStats& s) {
  w.Family("molt_kv_calls_total", kCounter,
           "Key-value calls: made, failed in the store, refused (too many waiting).");
  w.Add(Num(s.calls), {{"outcome", "made"}});
  w.Add(Num(s.failed), {{"outcome", "failed"}});
  w.Add(Num(s.refused), {{"outcome", "refused"}});
  w.Family("molt_kv_pending", kGauge, "Key-value calls waiting for the store.");
  w.Add(Num(s.pending));
}

void NetMetrics(MetricsWriter& w, const net::NetSnapshot& net) {
  const net::NetStats& s = net.counters;
  const net::Sessions::Stats& ss = net.sessions;
  w.Family("molt_sessions", kGauge, "Sessions connected now (links lost and waiting included).");
  w.Add(Num(ss.active));
  w.Family("molt_sessions_linked", kGauge, "Sessions linked now, by transport.");
  w.Add(Num(net.tcp_sessions), {{"transport", "tcp"}});
  w.Add(Num(net.websocket_sessions), {{"transport", "websocket"}});
  w.Family("molt_sessions_datagram_linked", kGauge,
           "Sessions whose datagram link (net.udp) is bound now (each also linked above).");
  w.Add(Num(net.datagram_sessions));
  w.Family("molt_sessions_started_total", kCounter, "Sessions that joined.");
  w.Add(Num(ss.started));
  w.Family("molt_sessions_ended_total", kCounter, "Sessions that ended, by reason.");
  for (std::size_t i = 0; i < net::kExitReasonCount; ++i) {
    w.Add(Num(ss.by_reason[i]), {{"reason", net::ExitReasonName(static_cast<net::ExitReason>(i))}});
  }
  w.Family("molt_sessions_links_lost_total", kCounter,
           "Sessions whose link was lost (they wait for their client to resume).");
  w.Add(Num(s.links_lost));
  w.Family("molt_sessions_resumed_total", kCounter, "Sessions resumed by their client.");
  w.Add(Num(s.resumes));

  w.Family("molt_net_received_bytes_total", kCounter, "Bytes received from clients.");
  w.Add(Num(s.bytes_in));
  w.Family("molt_net_sent_bytes_total", kCounter, "Bytes queued to clients.");
  w.Add(Num(s.bytes_out));
  w.Family("molt_net_received_frames_total", kCounter, "Frames received from clients.");
  w.Add(Num(s.frames_in));
  w.Family("molt_net_connections_accepted_total", kCounter, "Connections accepted.");
  w.Add(Num(s.connections_accepted));
  w.Family("molt_net_half_open_connections", kGauge,
           "Connections accepted and not yet joined (handshake slots in use).");
  w.Add(Num(net.half_open));
  w.Family("molt_net_handshakes_refused_total", kCounter,
           "Connections refused with a Refuse frame (every reason, evictions included).");
  w.Add(Num(s.handshakes_refused));
  w.Family("molt_net_overloaded", kGauge,
           "1 while the kernel thread is overloaded and new sessions are refused (Overloaded).");
  w.Add(Num(net.load.overloaded ? 1 : 0));
  w.Family("molt_net_overloads_total", kCounter,
           "Times the kernel thread turned overloaded (net.overload_seconds).");
  w.Add(Num(net.load.episodes));
  w.Family("molt_net_handshakes_refused_overloaded_total", kCounter,
           "New sessions refused (Overloaded) while the kernel thread was overloaded.");
  w.Add(Num(s.refused_overloaded));
  w.Family("molt_net_handshakes_evicted_total", kCounter,
           "Half-open connections refused to make room for newer ones.");
  w.Add(Num(s.half_open_evicted));
  w.Family("molt_net_handshakes_dropped_total", kCounter,
           "Half-open connections that ended without a Welcome or a Refuse, by reason.");
  for (std::size_t i = 0; i < net::kExitReasonCount; ++i) {
    w.Add(Num(s.handshakes_dropped[i]),
          {{"reason", net::ExitReasonName(static_cast<net::ExitReason>(i))}});
  }
  // The datagram links (net.udp): all zero without them.
  w.Family("molt_net_datagram_peers", kGauge, "ENet peers on the UDP port now, bound or not.");
  w.Add(Num(net.datagram_peers));
  w.Family("molt_net_datagrams_received_total", kCounter,
           "UDP datagrams read from the datagram port (ENet's own included).");
  w.Add(Num(net.udp.received));
  w.Family("molt_net_datagrams_opened_total", kCounter,
           "Sealed datagrams that authenticated under their session's key.");
  w.Add(Num(net.datagrams.opened));
  w.Family("molt_net_datagrams_refused_total", kCounter,
           "Datagrams refused, by reason (stray: no ENet peer's, ignored by ENet).");
  for (std::size_t i = 0; i < net::kDatagramRefusalCount; ++i) {
    w.Add(Num(net.datagrams.refused[i]),
          {{"reason", net::DatagramRefusalName(static_cast<net::DatagramRefusal>(i))}});
  }
  w.Add(Num(net.udp.stray), {{"reason", "stray"}});
  w.Family("molt_net_datagram_moves_total", kCounter,
           "Sessions whose datagram link moved to a new address (a NAT rebinding).");
  w.Add(Num(net.datagrams.moves));
  w.Family("molt_net_datagrams_sent_total", kCounter, "Sealed datagrams queued to clients.");
  w.Add(Num(net.datagrams.sent));
  w.Family("molt_net_datagram_links_full_total", kCounter,
           "Sessions offered no datagram link: all net.udp_max_links were taken.");
  w.Add(Num(net.datagrams.full));
  w.Family("molt_net_floods_total", kCounter, "Connections over their byte or message budget.");
  w.Add(Num(s.transport_floods));
  w.Family("molt_net_slow_readers_total", kCounter,
           "Sessions ended for not reading what they were sent.");
  w.Add(Num(s.slow_readers));

  // Per channel: bounded by the channels declared; the transport's own rejects (frames that
  // name no channel) under channel="".
  w.Family("molt_net_messages_accepted_total", kCounter, "Intents and requests accepted.");
  for (const net::ChannelSnapshot& ch : net.channels) {
    w.Add(Num(ch.counters.accepted), {{"channel", ch.name}});
  }
  w.Family("molt_net_messages_rejected_total", kCounter,
           "Messages rejected, by channel and reason (channel=\"\": before any channel).");
  for (const net::ChannelSnapshot& ch : net.channels) {
    for (std::size_t i = 0; i < net::kRejectCount; ++i) {
      if (const std::uint64_t n = ch.counters.rejected[i]; n != 0) {
        w.Add(Num(n),
              {{"channel", ch.name}, {"reason", net::RejectName(static_cast<net::Reject>(i))}});
      }
    }
  }
  for (std::size_t i = 0; i < net::kRejectCount; ++i) {
    if (s.transport_rejected[i] != 0) {
      w.Add(Num(s.transport_rejected[i]),
            {{"channel", ""}, {"reason", net::RejectName(static_cast<net::Reject>(i))}});
    }
  }
  w.Family("molt_net_handler_errors_total", kCounter, "Channel handlers that threw.");
  for (const net::ChannelSnapshot& ch : net.channels) {
    w.Add(Num(ch.counters.handler_errors), {{"channel", ch.name}});
  }
  w.Family("molt_net_events_sent_total", kCounter, "Events queued, counted per recipient.");
  for (const net::ChannelSnapshot& ch : net.channels) {
    if (ch.kind == net::ChannelKind::kEvent || ch.kind == net::ChannelKind::kUnreliable) {
      w.Add(Num(ch.counters.events_sent), {{"channel", ch.name}});
    }
  }
  w.Family("molt_net_unreliable_stale_total", kCounter,
           "Unreliable messages dropped by latest-wins: older than the newest taken.");
  for (const net::ChannelSnapshot& ch : net.channels) {
    if (ch.kind == net::ChannelKind::kUnreliable) {
      w.Add(Num(ch.counters.stale), {{"channel", ch.name}});
    }
  }
  w.Family("molt_net_unreliable_shed_total", kCounter,
           "Unreliable events not queued to a link whose send queue was backed up (lost > late).");
  for (const net::ChannelSnapshot& ch : net.channels) {
    if (ch.kind == net::ChannelKind::kUnreliable) {
      w.Add(Num(ch.counters.shed), {{"channel", ch.name}});
    }
  }
  w.Family("molt_net_request_timeouts_total", kCounter, "Requests answered MOLT_ERR_TIMEOUT.");
  for (const net::ChannelSnapshot& ch : net.channels) {
    if (ch.kind == net::ChannelKind::kRequest) {
      w.Add(Num(ch.counters.timeouts), {{"channel", ch.name}});
    }
  }

  const net::ReplicaStats& r = net.replicas;
  w.Family("molt_replicas", kGauge, "Replicas live.");
  w.Add(Num(r.live));
  w.Family("molt_replica_snapshots_sent_total", kCounter, "Replica snapshots sent (per session).");
  w.Add(Num(r.snapshots_sent));
  w.Family("molt_replica_deltas_sent_total", kCounter, "Replica deltas sent (per session).");
  w.Add(Num(r.deltas_sent));
  w.Family("molt_replica_sent_bytes_total", kCounter, "Replica bytes sent (frames x recipients).");
  w.Add(Num(r.bytes_sent));
  w.Family("molt_replica_fields_deadbanded_total", kCounter,
           "Field changes not sent to a session: within the field's deadband (per session).");
  w.Add(Num(r.fields_deadbanded));
  w.Family("molt_replica_deltas_deferred_total", kCounter,
           "Deltas a session's pace put off to a later tick (per session).");
  w.Add(Num(r.deltas_deferred));
  w.Family("molt_interest_zones", kGauge, "Interest groups (zones) declared.");
  w.Add(Num(net.zones));
  w.Family("molt_interest_grids", kGauge, "Spatial grids declared.");
  w.Add(Num(net.grids.grids));
  w.Family("molt_interest_grid_passes_total", kCounter, "Interest passes of the grids.");
  w.Add(Num(net.grids.passes));
  w.Family("molt_interest_grid_changes_total", kCounter,
           "Replicas that came into or went out of a session's view on a grid.");
  w.Add(Num(net.grids.enters), {{"change", "enter"}});
  w.Add(Num(net.grids.leaves), {{"change", "leave"}});

  const net::GovernorStats& g = net.governor;
  w.Family("molt_link_tier_sessions", kGauge,
           "Sessions by the tier of their link (the NetGovernor: good, strained, poor).");
  for (int t = 0; t < net::kLinkTiers; ++t) {
    w.Add(Num(g.sessions[t]), {{"tier", net::TierName(static_cast<net::LinkTier>(t))}});
  }
  w.Family("molt_link_tier_changes_total", kCounter, "Links that changed tier, by the tier taken.");
  for (int t = 0; t < net::kLinkTiers; ++t) {
    w.Add(Num(g.changes[t]), {{"tier", net::TierName(static_cast<net::LinkTier>(t))}});
  }
  w.Family("molt_link_shed_total", kCounter,
           "Low unreliable events not sent to a session because its link is poor.");
  w.Add(Num(g.shed));
}

void HookMetrics(MetricsWriter& w, const Hooks& hooks) {
  const std::vector<Hooks::PointInfo> points = hooks.ListPoints();
  w.Family("molt_hook_fires_total", kCounter, "Hook chains run, by hook point.");
  for (const Hooks::PointInfo& p : points) {
    w.Add(Num(p.fired), {{"point", p.name}});
  }
  w.Family("molt_hook_rejects_total", kCounter, "Hook chains that refused, by hook point.");
  for (const Hooks::PointInfo& p : points) {
    w.Add(Num(p.rejected), {{"point", p.name}});
  }
  w.Family("molt_hook_errors_total", kCounter, "Hook handlers that threw, by hook point.");
  for (const Hooks::PointInfo& p : points) {
    w.Add(Num(p.errors), {{"point", p.name}});
  }
}

void PluginMetrics(MetricsWriter& w, const loader::PluginHost& plugins) {
  w.Family("molt_plugin_errors_total", kCounter,
           "Callbacks of a plugin that failed, by plugin and generation (the serving one).");
  for (const loader::PluginHost::Plugin& p : plugins.plugins()) {
    w.Add(Num(p.instance->callback_errors()),
          {{"plugin", p.instance->name()}, {"generation", plugins.generation()}});
  }
  w.Family("molt_generation_info", kGauge, "The generation serving (its name in a label).");
  w.Add(1, {{"generation", plugins.generation()}});
  w.Family("molt_generation_swaps_total", kCounter, "Swaps that left a new generation serving.");
  w.Add(Num(plugins.swaps()));
  w.Family("molt_generation_failed_swaps_total", kCounter,
           "Swaps that failed (the old generation kept serving).");
  w.Add(Num(plugins.failed_swaps()));
  w.Family("molt_generation_rollbacks_total", kCounter, "Health-window rollbacks.");
  w.Add(Num(plugins.rollbacks()));
  w.Family("molt_generation_on_probation", kGauge,
           "1 while the serving generation is in its health window.");
  w.Add(plugins.on_probation() ? 1 : 0);
  w.Family("molt_generations_resident", kGauge, "Generations loaded (serving, kept, mounted).");
  w.Add(Num(plugins.resident_generations()));
}

void StoreMetrics(MetricsWriter& w, const store::StoreStats& s) {
  w.Family("molt_profile_loads_total", kCounter, "Profile loads (lease taken).");
  w.Add(Num(s.loads));
  w.Family("molt_profile_loads_busy_total", kCounter,
           "Profile loads refused: the lease is held elsewhere.");
  w.Add(Num(s.busy));
  w.Family("molt_profile_save_batches_total", kCounter, "Profile write transactions committed.");
  w.Add(Num(s.batches));
  w.Family("molt_profile_saves_total", kCounter, "Profiles written.");
  w.Add(Num(s.writes));
  w.Family("molt_profile_stale_saves_total", kCounter, "Profile writes refused: lease lost.");
  w.Add(Num(s.stale));
  w.Family("molt_profile_store_failures_total", kCounter,
           "Profile loads and batches that failed (disk, corruption).");
  w.Add(Num(s.failures));
  w.Family("molt_profile_store_queue_depth", kGauge, "Operations waiting for the store's thread.");
  w.Add(Num(s.queued));
  w.Family("molt_profile_store_latency_seconds", "histogram",
           "Profile loads and write batches, from the call to the result (queue and transaction).");
  w.AddHistogram(store::kStoreLatencyBounds, s.load_latency.counts, s.load_latency.sum_seconds,
                 {{"op", "load"}});
  w.AddHistogram(store::kStoreLatencyBounds, s.write_latency.counts, s.write_latency.sum_seconds,
                 {{"op", "write"}});
}

}  // namespace

void MetricsRoutes::Register(RouteTable& table) {
  table.Add(
      {"*", "/metrics", Role::kOpen, Runs::kKernelThread,
       [this](RouteCall& call) {
         MetricsWriter w;
         WriteProcessMetrics(w, call.process);
         call.reply({200, "text/plain; version=0.0.4; charset=utf-8", w.Take() + Metrics(), {}});
       },
       nullptr, /*reads_process=*/true});
}

std::string MetricsRoutes::Metrics() const {
  MetricsWriter w;
  w.Family("molt_build_info", kGauge, "moltd's version and plugin ABI, in labels.");
  const std::string abi =
      std::to_string(MOLT_ABI_VERSION_MAJOR) + "." + std::to_string(MOLT_ABI_VERSION_MINOR);
  w.Add(1, {{"version", Kernel::Version()}, {"abi", abi}});
  SchedulerMetrics(w, sources_.kernel.scheduler().stats());
  PhaseMetrics(w, sources_.kernel.scheduler());
  NetMetrics(w, sources_.network.Snapshot());
  HookMetrics(w, sources_.kernel.hooks());
  PluginMetrics(w, sources_.plugins);
  StoreMetrics(w, sources_.store.stats());
  if (sources_.analytics != nullptr) {
    AnalyticsMetrics(w, sources_.analytics->stats());
  }
  if (sources_.live != nullptr) {
    LiveMetrics(w, sources_.live->stats());
  }
  if (sources_.messages != nullptr) {
    MessagesMetrics(w, sources_.messages->stats());
  }
  if (sources_.kv != nullptr) {
    KvMetrics(w, sources_.kv->stats());
  }
  if (const workers::Workers* jobs = sources_.plugins.shared().Layer<workers::Workers>();
      jobs != nullptr) {
    WorkersMetrics(w, jobs->stats());
  }
  const ErrorWatch::Counts logged = sources_.errors.counts();
  w.Family("molt_log_messages_total", kCounter, "Warnings and errors logged, repeats included.");
  w.Add(Num(logged.warnings), {{"level", "warn"}});
  w.Add(Num(logged.errors), {{"level", "error"}});
  w.Family("molt_log_merged_total", kCounter,
           "Repeated warnings and errors merged into a per-window count (ErrorWatch).");
  w.Add(Num(logged.merged));
  return w.Take();
}

}  // namespace molt::kernel::admin
