// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/route_table.h
//
// RouteTable: the admin endpoint's routes, one row each (docs/operations.md lists them): a
// method, a path pattern, the role the caller needs, the thread that answers, and the handler.
// Each resource's routes class (sessions_routes.h, deploy_routes.h, ...) adds its rows; AdminApi
// finds the row of a request, checks its access, and dispatches it on its thread.
//
//   table.Add({"GET", "/api/v1/sessions/{id}", Role::kViewer, Runs::kKernelThread,
//              [this](RouteCall& call) { call.reply(SessionJson(call.Param("id"))); }});
//
// Patterns: literal text, "{name}" (one path segment, possibly empty: no '/') and "{name...}"
// (the rest of the path, '/' included; last). The first pattern that matches a path names its
// resource; every row of that pattern is one of its methods. Dispatch answers, in order: the
// resource's gate (a resource this server does not have: 503 for every method), 405 naming the
// methods the pattern takes (an "Allow" header too), or the row's handler. "GET" rows take HEAD
// too; "*" takes any method (the handler decides).
//
// Roles (DESIGN.md §9): today one admin token holds every role; the table says which one each
// route needs, so that named operators are checked in one place when they come. kOpen routes
// take no token.
//
// Thread safety: Add while building (one thread); Find and Dispatch from any thread after.
#ifndef MOLT_KERNEL_ADMIN_ROUTE_TABLE_H_
#define MOLT_KERNEL_ADMIN_ROUTE_TABLE_H_

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/admin/http_message.h"
#include "kernel/src/admin/metrics.h"

namespace molt::kernel::admin {

// Who may call a route (viewer < deployer < operator).
enum class Role { kOpen, kViewer, kDeployer, kOperator };
// Where a route is answered: on the HTTP thread (what must answer while the kernel thread is
// busy: the dashboard page, the deploy calls, answered from the deploy thread), or posted to the
// kernel thread (everything that reads the kernel's state).
enum class Runs { kHttpThread, kKernelThread };

// One request on its way to its handler.
struct RouteCall {
  HttpRequest& request;
  HttpReply reply;
  // What the pattern's {name} parts matched.
  std::map<std::string, std::string, std::less<>> params = {};
  // Read on the HTTP thread for the routes that ask (Route::reads_process).
  ProcessFigures process = {};

  // The value of {name} ("" when the pattern has none).
  const std::string& Param(std::string_view name) const;
};

using RouteHandler = std::function<void(RouteCall& call)>;
// An answer for every method of a resource this server does not have now; nullopt: it has it.
using RouteGate = std::function<std::optional<HttpResponse>()>;

struct Route {
  std::string method;   // "GET" (HEAD too), "POST", "*" (any)
  std::string pattern;  // "/api/v1/sessions/{id}/kick"
  Role role = Role::kViewer;
  Runs runs = Runs::kKernelThread;
  RouteHandler handler;
  RouteGate gate = nullptr;    // the pattern's first row's applies
  bool reads_process = false;  // the handler reads RouteCall::process (/proc, on the HTTP thread)
};

class RouteTable {
 public:
  // REQUIRES: every row of one pattern has the same Runs, and kOpen on one row means on all.
  void Add(Route route);

  // The rows of the first pattern that matches `path`, with what its {name} parts matched.
  struct Found {
    std::vector<const Route*> routes;  // empty: no pattern matches
    std::map<std::string, std::string, std::less<>> params;

    bool empty() const { return routes.empty(); }
    bool open() const { return !empty() && routes.front()->role == Role::kOpen; }
    Runs runs() const { return routes.front()->runs; }
    bool reads_process() const;
  };
  Found Find(std::string_view path) const;

  // Answers `call` through `found`'s gate, its 405, or the handler of its row for the method.
  // REQUIRES: !found.empty(); on the thread found.runs() names.
  static void Dispatch(const Found& found, RouteCall& call);

  // Every row, in the order added.
  const std::deque<Route>& routes() const { return routes_; }

 private:
  std::deque<Route> routes_;  // a deque: Found points into it
};

// Whether `path` matches `pattern`; `params` gets what its {name} parts matched.
bool MatchPattern(std::string_view pattern, std::string_view path,
                  std::map<std::string, std::string, std::less<>>* params);

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_ROUTE_TABLE_H_
