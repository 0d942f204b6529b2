// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/redirection.h
//
// Redirection: where a draining server's sessions go next (docs/fleet.md, "Draining a server").
// Given the other servers of the branch, each connected session is told one of them — the one
// with the fewest sessions so far (those it serves plus those sent to it; ties: the first), among
// those with an address for the session's transport — in a Redirect frame; a session resumed later
// is told after its Welcome; the Bye that ends it at the close names the same server, and a Hello
// refused during the drain names the least loaded.
//
//   redirection.Begin(targets, "the server is draining");   // tells every linked session
//   redirection.Send(session);                              // a resumed one, later
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_REDIRECTION_H_
#define MOLT_KERNEL_NET_REDIRECTION_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernel/src/net/session.h"

namespace molt::kernel::net {

class LinkTable;
class Peer;

// A server the sessions may go to.
struct RedirectTarget {
  std::string server;
  std::string address;            // for TCP clients; empty: none
  std::string websocket_address;  // for WebSocket clients; empty: none
  std::uint64_t sessions = 0;     // what it serves already (grows as sessions are sent there)
};

class Redirection {
 public:
  Redirection(Sessions& sessions, LinkTable& links);
  Redirection(const Redirection&) = delete;
  Redirection& operator=(const Redirection&) = delete;

  // From now on sessions go to `targets` (at least one), told `reason`: every session linked now
  // gets its Redirect frame. Returns the targets, each one's `sessions` grown by those sent to it.
  const std::vector<RedirectTarget>& Begin(std::vector<RedirectTarget> targets, std::string reason);
  bool active() const { return active_; }
  // Sends `s` (linked) its target in a Redirect frame; false when none has an address for its
  // transport (or no redirection is active).
  bool Send(Session& s);
  // The Bye's text for `peer` at the close: where its session goes, when one was chosen; else
  // "the server is shutting down", with the close's reason `why` in parentheses when given.
  std::string ByeText(Peer& peer, std::string_view why = {});
  // The refusal's text for a new player during the drain: the least loaded target, by its TCP
  // address.
  std::string RefusalText() const;

 private:
  // The target of `s` (linked), chosen at its first call; null when no target has an address
  // for its link's transport.
  std::pair<const RedirectTarget*, const std::string*> TargetOf(Session& s);

  Sessions& sessions_;
  LinkTable& links_;
  bool active_ = false;
  std::vector<RedirectTarget> targets_;
  std::string reason_;
  std::unordered_map<SessionId, std::size_t> chosen_;  // session -> targets_ index
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_REDIRECTION_H_
