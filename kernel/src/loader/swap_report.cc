// SPDX-License-Identifier: Apache-2.0
// SwapReport as JSON: the swap's log line and its entry in the swap history.
#include "kernel/src/loader/swap_report.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <cmath>

namespace molt::kernel::loader {
namespace {

boost::json::array Strings(const std::vector<std::string>& items) {
  return boost::json::array(items.begin(), items.end());
}

// Milliseconds to the microsecond: what a report's reader needs of a duration.
double Ms(double ms) { return std::round(ms * 1000) / 1000; }

}  // namespace

boost::json::object SwapReport::ToJson() const {
  return {{"swap", ok ? "ok" : "failed"},
          {"reason", reason},
          {"build", build},
          {"generation", generation},
          {"previous", previous},
          {"serving", serving},
          {"ok", ok},
          {"stage", stage},
          {"load_ms", Ms(load_ms)},
          {"staged_ms", Ms(staged_ms)},
          {"init_ms", Ms(init_ms)},
          {"stop_ms", Ms(stop_ms)},
          {"hard_stopped", Strings(hard_stopped)},
          {"swap_ms", Ms(swap_ms)},
          {"hold_ms", Ms(hold_ms)},
          {"error", error},
          {"restored", restored},
          {"rollback", rollback},
          {"retired", Strings(retired)},
          {"held", Strings(held)},
          {"handed", [this] {
             boost::json::array a;
             for (const Handed& h : handed) {
               a.push_back(
                   {{"plugin", h.plugin}, {"state_version", h.state_version}, {"bytes", h.bytes}});
             }
             return a;
           }()}};
}

std::string SwapReport::Json() const { return boost::json::serialize(ToJson()); }

}  // namespace molt::kernel::loader
