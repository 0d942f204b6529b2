// SPDX-License-Identifier: Apache-2.0
// The server's snapshots as JSON (stats_json.h).
#include "kernel/src/admin/stats_json.h"

#include <array>
#include <cstdint>

namespace molt::kernel::admin {
namespace {

namespace json = boost::json;

// The reasons with a count, by name.
json::object RejectCounts(const std::array<std::uint64_t, net::kRejectCount>& counts) {
  json::object o;
  for (std::size_t i = 0; i < net::kRejectCount; ++i) {
    if (counts[i] != 0) {
      o[net::RejectName(static_cast<net::Reject>(i))] = counts[i];
    }
  }
  return o;
}

}  // namespace

json::object NetJson(const net::NetSnapshot& net) {
  const net::NetStats& s = net.counters;
  json::object root;
  root["port"] = net.port;
  root["sessions"] = net.sessions.active;
  root["half_open"] = net.half_open;
  root["connections_accepted"] = s.connections_accepted;
  root["half_open_evicted"] = s.half_open_evicted;
  root["refused_handshake_rate"] = s.refused_handshake_rate;
  root["handshake_timeouts"] = s.handshake_timeouts;
  root["handshakes_refused"] = s.handshakes_refused;
  root["refused_no_descriptors"] = s.refused_no_descriptors;
  root["refused_overloaded"] = s.refused_overloaded;
  root["load"] = {{"overloaded", net.load.overloaded},
                  {"episodes", net.load.episodes},
                  {"deferring", net.load.deferring},
                  {"busy", net.load.busy}};
  root["transport_floods"] = s.transport_floods;
  root["transport_flood_bytes"] = s.transport_flood_bytes;
  root["slow_readers"] = s.slow_readers;
  root["bytes_in"] = s.bytes_in;
  root["bytes_out"] = s.bytes_out;
  root["frames_in"] = s.frames_in;
  root["error_frames"] = s.error_frames;
  root["sessions_waiting_resume"] = net.waiting_resume;
  root["websocket_port"] = net.websocket_port;
  root["sessions_tcp"] = net.tcp_sessions;
  root["sessions_websocket"] = net.websocket_sessions;
  root["sessions_datagram"] = net.datagram_sessions;
  root["links_lost"] = s.links_lost;
  root["resumes"] = s.resumes;
  root["resumes_expired"] = s.resumes_expired;
  root["resumes_superseded"] = s.resumes_superseded;
  root["intents_accepted"] = s.intents_accepted;
  root["intents_rejected"] = s.intents_rejected;
  root["intents_rate_limited"] = s.intents_rate_limited;
  root["requests_accepted"] = s.requests_accepted;
  root["requests_rejected"] = s.requests_rejected;
  root["replicas"] = {{"live", net.replicas.live},
                      {"snapshots_sent", net.replicas.snapshots_sent},
                      {"deltas_sent", net.replicas.deltas_sent},
                      {"removes_sent", net.replicas.removes_sent},
                      {"bytes_sent", net.replicas.bytes_sent},
                      {"fields_deadbanded", net.replicas.fields_deadbanded},
                      {"deltas_deferred", net.replicas.deltas_deferred}};
  root["interest"] = {{"zones", net.zones},
                      {"grids", net.grids.grids},
                      {"grid_passes", net.grids.passes},
                      {"grid_enters", net.grids.enters},
                      {"grid_leaves", net.grids.leaves}};
  json::object tiers, changes;
  for (int t = 0; t < net::kLinkTiers; ++t) {
    const char* name = net::TierName(static_cast<net::LinkTier>(t));
    tiers[name] = net.governor.sessions[t];
    changes[name] = net.governor.changes[t];
  }
  root["links"] = {{"tiers", std::move(tiers)},
                   {"tier_changes", std::move(changes)},
                   {"shed", net.governor.shed},
                   {"gradings", net.governor.gradings}};
  root["udp_port"] = net.udp_port;
  json::object refused;  // datagrams refused, by reason; "stray": ENet ignored them
  for (std::size_t i = 0; i < net::kDatagramRefusalCount; ++i) {
    if (net.datagrams.refused[i] != 0) {
      refused[net::DatagramRefusalName(static_cast<net::DatagramRefusal>(i))] =
          net.datagrams.refused[i];
    }
  }
  if (net.udp.stray != 0) {
    refused["stray"] = net.udp.stray;
  }
  root["datagrams"] = {{"peers", net.datagram_peers},
                       {"received", net.udp.received},
                       {"opened", net.datagrams.opened},
                       {"refused", net.datagrams.refused_total() + net.udp.stray},
                       {"refused_by_reason", std::move(refused)},
                       {"no_link", net.datagrams.no_link},
                       {"moves", net.datagrams.moves},
                       {"sent", net.datagrams.sent},
                       {"full", net.datagrams.full},
                       {"peers_unbound_dropped", net.udp.unbound_dropped}};
  root["transport_rejected"] = RejectCounts(s.transport_rejected);
  json::object dropped;  // handshakes that ended without a Welcome or a Refuse
  for (std::size_t i = 0; i < net::kExitReasonCount; ++i) {
    if (s.handshakes_dropped[i] != 0) {
      dropped[net::ExitReasonName(static_cast<net::ExitReason>(i))] = s.handshakes_dropped[i];
    }
  }
  root["handshakes_dropped"] = std::move(dropped);
  json::object channels;
  for (const net::ChannelSnapshot& ch : net.channels) {
    const net::ChannelCounters& c = ch.counters;
    channels[ch.name] = {
        {"id", ch.id},
        {"kind", net::ChannelKindName(ch.kind)},
        {"accepted", c.accepted},
        {"rejected", c.rejected_total()},
        {"rate_limited", c.rejected[static_cast<std::size_t>(net::Reject::kRateLimited)]},
        {"rejected_by_reason", RejectCounts(c.rejected)},
        {"handler_errors", c.handler_errors},
        {"events_sent", c.events_sent},
        {"timeouts", c.timeouts}};
  }
  root["channels"] = std::move(channels);
  return root;
}

json::array ChannelsJson(const net::NetSnapshot& net) {
  json::array list;
  for (const net::ChannelSnapshot& ch : net.channels) {
    const net::ChannelCounters& c = ch.counters;
    list.push_back({{"id", ch.id},
                    {"name", ch.name},
                    {"kind", net::ChannelKindName(ch.kind)},
                    {"rate", ch.rate},
                    {"burst", ch.burst},
                    {"guarded", ch.guarded},
                    {"accepted", c.accepted},
                    {"rejected", RejectCounts(c.rejected)},
                    {"handler_errors", c.handler_errors},
                    {"events_sent", c.events_sent},
                    {"timeouts", c.timeouts}});
  }
  return list;
}

json::object StoreJson(const store::StoreStats& s) {
  return {{"loads", s.loads},   {"busy", s.busy},   {"batches", s.batches},
          {"writes", s.writes}, {"stale", s.stale}, {"failures", s.failures},
          {"queued", s.queued}};
}

boost::json::object AnalyticsJson(const analytics::AnalyticsStats& s) {
  boost::json::object o;
  o["tracked"] = s.tracked;
  o["written"] = s.written;
  o["queued"] = s.queued;
  o["batches"] = s.batches;
  o["rotations"] = s.rotations;
  o["retries"] = s.retries;
  boost::json::object dropped;
  for (int i = 0; i < analytics::kDropReasonCount; ++i) {
    dropped[analytics::DropReasonName(static_cast<analytics::DropReason>(i))] = s.dropped[i];
  }
  o["dropped"] = std::move(dropped);
  if (!s.last_error.empty()) {
    o["last_error"] = s.last_error;
  }
  return o;
}

boost::json::object WorkersJson(const workers::WorkersStats& s) {
  const workers::PoolStats& p = s.pool;
  return {{"threads", p.threads},     {"hung", p.hung},           {"queued", p.queued},
          {"running", p.running},     {"submitted", p.submitted}, {"completed", p.completed},
          {"failed", p.failed},       {"timed_out", p.timed_out}, {"cancelled", p.cancelled},
          {"refused", p.refused},     {"replaced", p.replaced},   {"handlers", s.handlers},
          {"jobs", s.jobs},           {"detached", s.detached},   {"delivered", s.delivered},
          {"inherited", s.inherited}, {"dropped", s.dropped}};
}

boost::json::object MessagesJson(const fleet::MessageStats& s) {
  return {{"shared", s.shared},
          {"published", s.published},
          {"sent", s.sent},
          {"delivered", s.delivered},
          {"replayed", s.replayed},
          {"refused_rate", s.refused_rate},
          {"refused_queue", s.refused_queue},
          {"dropped_old", s.dropped_old},
          {"dropped_held", s.dropped_held},
          {"send_failures", s.send_failures},
          {"queued", s.queued},
          {"topics", s.topics}};
}

boost::json::object KvJson(const fleet::KvStats& s) {
  return {{"shared", s.shared},
          {"calls", s.calls},
          {"failed", s.failed},
          {"refused", s.refused},
          {"pending", s.pending}};
}

boost::json::object LiveJson(const live::LiveStats& s) {
  return {{"open", s.open}, {"declared", s.declared}, {"overrides", s.overrides},
          {"sets", s.sets}, {"refused", s.refused},   {"expired", s.expired}};
}

}  // namespace molt::kernel::admin
