// SPDX-License-Identifier: Apache-2.0
// HealthRoutes: /healthz and /readyz (health_routes.h).
#include "kernel/src/admin/health_routes.h"

#include <string>
#include <vector>

#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/network.h"
#include "kernel/src/store/profile_store.h"

namespace molt::kernel::admin {
namespace {

constexpr std::string_view kPlainText = "text/plain; charset=utf-8";

}  // namespace

void HealthRoutes::Register(RouteTable& table) {
  table.Add({"*", "/healthz", Role::kOpen, Runs::kKernelThread,
             [this](RouteCall& call) { call.reply(Healthz()); }});
  table.Add({"*", "/readyz", Role::kOpen, Runs::kKernelThread,
             [this](RouteCall& call) { Ready(std::move(call.reply)); }});
}

HttpResponse HealthRoutes::Healthz() const {
  // Answered from the kernel thread (a watchdog: no answer, no health). A plugin callback
  // abandoned at its deadline leaves the server serving, degraded: each one is a line.
  std::string body = "ok\n";
  if (const std::vector<std::string>& stuck = plugins_.stuck_callbacks(); !stuck.empty()) {
    body = "degraded: " + std::to_string(stuck.size()) +
           " plugin callback(s) abandoned at their deadline, still mapped (fix the plugin; "
           "docs/generations.md, \"Deadlines\")\n";
    for (const std::string& line : stuck) {
      body += "  " + line + "\n";
    }
  }
  return {200, std::string(kPlainText), std::move(body), {}};
}

void HealthRoutes::Ready(HttpReply reply) {
  std::vector<std::string> not_ready;
  if (closing_()) {
    not_ready.emplace_back("the server is closing");
  }
  if (!network_.serving() || plugins_.generation().empty()) {
    not_ready.emplace_back("no plugin generation serves");
  }
  if (network_.port() == 0) {
    not_ready.emplace_back("clients are not accepted (not listening)");
  }
  // The store answers a read of a key nobody has on its own thread: reachable, and not stuck.
  store_.Read("molt.readyz", [reply = std::move(reply),
                              not_ready = std::move(not_ready)](Result<store::Record> r) mutable {
    if (!r.ok() && r.status().code() != Status::Code::kNotFound) {
      not_ready.push_back("the profile store failed a read: " + r.status().message());
    }
    if (not_ready.empty()) {
      reply({200, std::string(kPlainText), "ready\n", {}});
      return;
    }
    std::string text = "not ready:";
    for (const std::string& why : not_ready) {
      text += " " + why + ";";
    }
    text.back() = '\n';
    reply({503, std::string(kPlainText), std::move(text), {}});
  });
}

}  // namespace molt::kernel::admin
