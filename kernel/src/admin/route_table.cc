// SPDX-License-Identifier: Apache-2.0
// RouteTable: patterns matched, methods checked, handlers called (route_table.h).
#include "kernel/src/admin/route_table.h"

#include <cassert>
#include <utility>

#include "kernel/src/admin/api_answers.h"

namespace molt::kernel::admin {

const std::string& RouteCall::Param(std::string_view name) const {
  static const std::string kNone;
  auto it = params.find(name);
  return it != params.end() ? it->second : kNone;
}

bool MatchPattern(std::string_view pattern, std::string_view path,
                  std::map<std::string, std::string, std::less<>>* params) {
  while (!pattern.empty()) {
    if (pattern.front() == '{') {
      const std::size_t close = pattern.find('}');
      std::string_view name = pattern.substr(1, close - 1);
      if (name.ends_with("...")) {  // the rest of the path
        name.remove_suffix(3);
        (*params)[std::string(name)] = std::string(path);
        return close + 1 == pattern.size();
      }
      const std::string_view segment = path.substr(0, path.find('/'));
      (*params)[std::string(name)] = std::string(segment);
      path.remove_prefix(segment.size());
      pattern.remove_prefix(close + 1);
      continue;
    }
    if (path.empty() || path.front() != pattern.front()) {
      return false;
    }
    pattern.remove_prefix(1);
    path.remove_prefix(1);
  }
  return path.empty();
}

bool RouteTable::Found::reads_process() const {
  for (const Route* r : routes) {
    if (r->reads_process) {
      return true;
    }
  }
  return false;
}

void RouteTable::Add(Route route) {
  for ([[maybe_unused]] const Route& r : routes_) {
    assert(r.pattern != route.pattern ||
           (r.runs == route.runs && (r.role == Role::kOpen) == (route.role == Role::kOpen)));
  }
  routes_.push_back(std::move(route));
}

RouteTable::Found RouteTable::Find(std::string_view path) const {
  Found found;
  for (const Route& r : routes_) {
    if (!found.empty()) {
      if (r.pattern == found.routes.front()->pattern) {
        found.routes.push_back(&r);
      }
    } else if (std::map<std::string, std::string, std::less<>> params;
               MatchPattern(r.pattern, path, &params)) {
      found.routes.push_back(&r);
      found.params = std::move(params);
    }
  }
  return found;
}

void RouteTable::Dispatch(const Found& found, RouteCall& call) {
  if (const RouteGate& gate = found.routes.front()->gate) {
    if (std::optional<HttpResponse> missing = gate()) {
      call.reply(std::move(*missing));
      return;
    }
  }
  const std::string& method = call.request.method;
  std::string allowed;
  for (const Route* r : found.routes) {
    if (r->method == "*" || r->method == method || (r->method == "GET" && method == "HEAD")) {
      call.params = found.params;
      r->handler(call);
      return;
    }
    allowed += (allowed.empty() ? "" : ", ") + r->method;
  }
  HttpResponse r = Error(405, call.request.path + " takes " + allowed);
  r.headers.emplace_back("Allow", allowed);
  call.reply(std::move(r));
}

}  // namespace molt::kernel::admin
