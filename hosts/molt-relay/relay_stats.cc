// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/relay_stats.cc
//
// RelayStats: the JSON line (numbers only, so written directly).
#include "hosts/molt-relay/relay_stats.h"

namespace molt::relay {
namespace {

std::string DirectionJson(const DirectionStats& s) {
  return "{\"in\":" + std::to_string(s.in) + ",\"out\":" + std::to_string(s.out) +
         ",\"dropped\":" + std::to_string(s.dropped) +
         ",\"duplicated\":" + std::to_string(s.duplicated) +
         ",\"reordered\":" + std::to_string(s.reordered) +
         ",\"send_errors\":" + std::to_string(s.send_errors) +
         ",\"pending\":" + std::to_string(s.pending) +
         ",\"bytes_in\":" + std::to_string(s.bytes_in) +
         ",\"bytes_out\":" + std::to_string(s.bytes_out) + "}";
}

}  // namespace

std::string RelayStats::ToJson() const {
  return "{\"to_server\":" + DirectionJson(to_server) +
         ",\"to_client\":" + DirectionJson(to_client) + ",\"clients\":" + std::to_string(clients) +
         ",\"rebinds\":" + std::to_string(rebinds) + "}";
}

}  // namespace molt::relay
