// SPDX-License-Identifier: Apache-2.0
// Redirection (redirection.h): a draining server's sessions told where to go.
#include "kernel/src/net/redirection.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernel/src/net/link_table.h"
#include "kernel/src/net/peer.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::net {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

Redirection::Redirection(Sessions& sessions, LinkTable& links)
    : sessions_(sessions), links_(links) {}

const std::vector<RedirectTarget>& Redirection::Begin(std::vector<RedirectTarget> targets,
                                                      std::string reason) {
  active_ = true;
  targets_ = std::move(targets);
  reason_ = std::move(reason);
  chosen_.clear();
  Sessions::Hold hold(sessions_);
  for (SessionId id : sessions_.ActiveIds()) {
    if (Session* s = sessions_.Get(id); s != nullptr && s->peer() != nullptr) {
      Send(*s);
    }
  }
  return targets_;
}

std::pair<const RedirectTarget*, const std::string*> Redirection::TargetOf(Session& s) {
  const bool websocket = s.peer()->websocket();
  auto address = [websocket](const RedirectTarget& t) -> const std::string& {
    return websocket ? t.websocket_address : t.address;
  };
  auto it = chosen_.find(s.id());
  if (it == chosen_.end()) {
    std::size_t best = targets_.size();
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      if (!address(targets_[i]).empty() &&
          (best == targets_.size() || targets_[i].sessions < targets_[best].sessions)) {
        best = i;
      }
    }
    if (best == targets_.size()) {
      return {nullptr, nullptr};
    }
    ++targets_[best].sessions;
    it = chosen_.emplace(s.id(), best).first;
  }
  const RedirectTarget& t = targets_[it->second];
  return {&t, &address(t)};
}

bool Redirection::Send(Session& s) {
  if (!active_) {
    return false;
  }
  const auto [target, address] = TargetOf(s);
  if (target == nullptr) {
    return false;
  }
  fb::FlatBufferBuilder b(256);
  links_.SendTo(s, w::FinishFrame(b, w::Body::Redirect,
                                  w::CreateRedirectDirect(b, address->c_str(),
                                                          target->server.c_str(), reason_.c_str())
                                      .Union()));
  return true;
}

std::string Redirection::ByeText(Peer& peer, std::string_view why) {
  Session* s = active_ && peer.session() != 0 ? sessions_.Get(peer.session()) : nullptr;
  if (s != nullptr && s->peer() == &peer) {
    if (const auto [target, address] = TargetOf(*s); target != nullptr) {
      return fmt::format("{}: go to server {} at {}", reason_, target->server, *address);
    }
  }
  return why.empty() ? std::string("the server is shutting down")
                     : fmt::format("the server is shutting down ({})", why);
}

std::string Redirection::RefusalText() const {
  if (!active_ || targets_.empty()) {
    return "the server is draining";
  }
  const auto least = std::min_element(
      targets_.begin(), targets_.end(),
      [](const RedirectTarget& a, const RedirectTarget& b) { return a.sessions < b.sessions; });
  return fmt::format("{}: go to server {} at {}", reason_, least->server, least->address);
}

}  // namespace molt::kernel::net
