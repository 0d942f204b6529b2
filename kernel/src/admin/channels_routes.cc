// SPDX-License-Identifier: Apache-2.0
// ChannelsRoutes: the channels and the wire inspector (channels_routes.h).
#include "kernel/src/admin/channels_routes.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "kernel/src/admin/api_answers.h"
#include "kernel/src/admin/stats_json.h"
#include "kernel/src/net/network.h"

namespace molt::kernel::admin {

void ChannelsRoutes::Register(RouteTable& table) {
  table.Add(
      {"GET", "/api/v1/channels", Role::kViewer, Runs::kKernelThread, [this](RouteCall& call) {
         call.reply(
             Json(200, boost::json::object{{"channels", ChannelsJson(network_.Snapshot())}}));
       }});
  table.Add({"GET", "/api/v1/wire", Role::kViewer, Runs::kKernelThread,
             [this](RouteCall& call) { call.reply(Json(200, WireJson(call.request))); }});
}

boost::json::object ChannelsRoutes::WireJson(const HttpRequest& req) {
  network_.Inspect(kInspectLease);
  const std::optional<std::uint64_t> since = Number(QueryValue(req.query, "since"));
  const net::WireTap::Page page = network_.tap().Since(since.value_or(0));
  boost::json::array frames;
  for (const net::WireFrame& f : page.items) {
    std::string hex;
    hex.reserve(f.head.size() * 2);
    for (std::uint8_t b : f.head) {
      hex += fmt::format("{:02x}", b);
    }
    frames.push_back({{"seq", f.seq},
                      {"time", IsoTime(f.time)},
                      {"direction", f.inbound ? "in" : "out"},
                      {"kind", f.kind},
                      {"channel", f.channel},
                      {"channel_name", f.channel_name},
                      {"session", f.session},
                      {"recipients", f.recipients},
                      {"bytes", f.bytes},
                      {"head_hex", std::move(hex)},
                      {"verdict", f.verdict},
                      {"detail", f.detail},
                      {"took_us", ToSeconds(f.took) * 1e6}});
  }
  return {{"capturing", network_.tap().on()},
          {"lease_seconds", ToSeconds(kInspectLease)},
          {"next", page.next},
          {"lost", page.lost},
          {"frames", std::move(frames)}};
}

}  // namespace molt::kernel::admin
