// SPDX-License-Identifier: Apache-2.0
// PluginsRoutes: the generations, the hook points, a reload (plugins_routes.h).
#include "kernel/src/admin/plugins_routes.h"

#include <boost/json.hpp>
#include <memory>
#include <utility>

#include "kernel/src/admin/api_answers.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/loader/plugin_host.h"

namespace molt::kernel::admin {

void PluginsRoutes::Register(RouteTable& table) {
  table.Add({"GET", "/api/v1/plugins", Role::kViewer, Runs::kKernelThread,
             [this](RouteCall& call) { call.reply(Json(200, plugins_.StatsObject())); }});
  table.Add({"GET", "/api/v1/hooks", Role::kViewer, Runs::kKernelThread,
             [this](RouteCall& call) { call.reply(Json(200, HooksJson())); }});
  table.Add({"POST", "/api/v1/reload", Role::kOperator, Runs::kKernelThread,
             [this](RouteCall& call) { Reload(call.request, std::move(call.reply)); }});
}

boost::json::object PluginsRoutes::HooksJson() const {
  boost::json::array list;
  const kernel::Hooks& hooks = kernel_.hooks();
  for (const kernel::Hooks::PointInfo& p : hooks.ListPoints()) {
    list.push_back(
        {{"name", p.name},
         {"fail_open", p.fail_open},
         {"handlers", p.handlers},
         {"fired", p.fired},
         {"rejected", p.rejected},
         {"errors", p.errors},
         {"timed", p.timed},
         {"average_chain_us",
          p.timed == 0 ? 0.0 : ToSeconds(p.time_total) * 1e6 / static_cast<double>(p.timed)},
         {"max_chain_us", ToSeconds(p.time_max) * 1e6}});
  }
  return {{"timing", hooks.timing()}, {"hooks", std::move(list)}};
}

void PluginsRoutes::Reload(const HttpRequest& req, HttpReply reply) {
  namespace json = boost::json;
  // ?wait=S: the answer is the swap's report, once the swap is over (at most S seconds,
  // 1..600); without it, 202 at once.
  const std::string wait_text = QueryValue(req.query, "wait");
  const std::optional<std::uint64_t> wait =
      wait_text.empty() ? std::optional<std::uint64_t>(0) : Number(wait_text);
  if (!wait || *wait > kMaxWaitSeconds) {
    reply(Error(400, "wait is a number of seconds, 1 to 600 (or leave it out: 202 at once)"));
    return;
  }
  if (*wait == 0) {
    reload_(nullptr);
    reply(Json(202, json::object{{"accepted", true},
                                 {"note",
                                  "the swap runs on the next steps; its report is logged and "
                                  "GET /api/v1/plugins shows the generation serving (or POST "
                                  "with ?wait=SECONDS for the report)"}}));
    return;
  }
  // One answer: the report, or at the deadline a 202 saying it is still running.
  struct Waiting {
    HttpReply reply;
    TaskHandle deadline;
    bool answered = false;
  };
  auto waiting = std::make_shared<Waiting>();
  waiting->reply = std::move(reply);
  waiting->deadline = kernel_.scheduler().After(
      Seconds(static_cast<double>(*wait)),
      [waiting] {
        if (!std::exchange(waiting->answered, true)) {
          waiting->reply(Json(202, json::object{{"accepted", true},
                                                {"note",
                                                 "the swap did not finish in time; its report "
                                                 "will be logged"}}));
        }
      },
      Priority::kKernel, TaskOrigin::Named("admin reload wait"));
  reload_([waiting](const loader::SwapReport& r) {
    if (!std::exchange(waiting->answered, true)) {
      waiting->deadline.Cancel();
      waiting->reply(Json(200, json::object{{"report", r.ToJson()}}));
    }
  });
}

}  // namespace molt::kernel::admin
