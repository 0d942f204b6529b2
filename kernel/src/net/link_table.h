// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/link_table.h
//
// LinkTable: the network's links, from the accept to the end, and the sessions whose link was
// lost. It keeps the attached connections, ends them (a Bye, then the transport's close) or
// unlinks them (the session waits net.resume_window_seconds for its client to resume it), queues
// every outbound frame (to a session's connection, or to its outbox while the link is lost; a
// reader that falls net.max_outbound_bytes behind is cut off), and runs the housekeeping:
// handshake deadlines, idle links, pings, resume windows, the refusal log's counts.
//
//   links.Add(peer, now);                       // a new connection
//   links.SendTo(session, frame);               // to the client, or its outbox while it is away
//   links.End(peer, ExitReason::kKicked, text); // a Bye with the text, then the close
//
// The front door decides who joins, the inbound pipeline what a link's bytes mean; both end links
// through this table, the only place that writes to a transport (Peer::Write).
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_LINK_TABLE_H_
#define MOLT_KERNEL_NET_LINK_TABLE_H_

#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/net/exit_reason.h"
#include "kernel/src/net/handshake_slots.h"
#include "kernel/src/net/net_governor.h"
#include "kernel/src/net/net_options.h"
#include "kernel/src/net/net_stats.h"
#include "kernel/src/net/peer.h"
#include "kernel/src/net/refusal_log.h"
#include "kernel/src/net/session.h"

namespace molt::kernel {
class Scheduler;
}

namespace molt::kernel::net {

class LinkTable {
 public:
  // Counts into `stats`; gives a half-open connection's slot back to `slots` when it ends; logs
  // the handshakes it ends through `refusals`; tells `governor` of each ping and lets it grade
  // the links at its housekeeping.
  LinkTable(Scheduler& scheduler, Sessions& sessions, const NetOptions& options, NetStats& stats,
            HandshakeSlots& slots, RefusalLog& refusals, NetGovernor& governor);
  LinkTable(const LinkTable&) = delete;
  LinkTable& operator=(const LinkTable&) = delete;
  ~LinkTable();

  // A new connection joins the table at `now` (its clocks start; housekeeping runs).
  void Add(Peer& peer, TimePoint now);
  // Ends `peer`'s link and its session with `reason`: a Bye with `text` unless a Refuse said it
  // or the client closed, logged, then the transport's close (after the queued frames unless the
  // reason drops them; `flush`: after them anyway). Idempotent.
  void End(Peer& peer, ExitReason reason, std::string_view text, bool flush = false);
  // Takes `peer` out of the table; its session ends, or waits for a resume when `resumable` (and
  // resume is on, and the table is not shut down). The transport is not closed here. Idempotent.
  void Unlink(Peer& peer, ExitReason reason, bool resumable);
  // Queues `frame` on `peer`; a reader with more than net.max_outbound_bytes queued ends as
  // SlowReader.
  void SendFrame(Peer& peer, std::span<const std::uint8_t> frame);
  // Queues `frame` for `s`: to its connection, or to its outbox while its link is lost (half
  // the outbound cap; past it the session ends as SlowReader).
  void SendTo(Session& s, std::span<const std::uint8_t> frame);
  // Ends `session` with Kicked (its Bye says `text`); NOT_FOUND when it is not active.
  Status Kick(SessionId session, std::string_view text);

  // Links `peer` (welcomed: it leaves its handshake slot) to session `s`. A session resumed
  // stops waiting; one still linked to another connection is taken from it (that link is lost,
  // and closed at once).
  void Bind(Peer& peer, Session& s);
  // Sends `s` (linked) what was queued for it while its link was lost.
  void FlushOutbox(Session& s);

  // --- Sessions whose link is lost ---
  // `user` joined afresh: any session of theirs waiting for a resume ends now (its reason the
  // link's), so what it holds is free for the new one. Returns how many ended.
  std::size_t EndWaitingOf(std::string_view user);
  std::size_t waiting() const { return detached_.size(); }

  // A handshake failed for `reason`: logged through the refusal log (rate-limited), its counts
  // written by the housekeeping.
  void NoteRefusal(std::string_view reason, const std::string& address, std::string_view text);

  // Ends every link with ServerShutdown (the Bye's text from `bye_text`) and every waiting
  // session; no link may wait for a resume afterwards. Idempotent.
  void Shutdown(const std::function<std::string(Peer&)>& bye_text);
  bool shut_down() const { return shut_down_; }

  // The attached connections, oldest first.
  const std::vector<Peer*>& peers() const { return peers_; }

 private:
  void ArmHousekeeping();
  void Housekeep();
  void CancelHousekeeping();
  // A housekeeping pass over one link: its handshake deadline, its silence, its ping.
  void Check(Peer& peer, TimePoint now);

  Scheduler& scheduler_;
  Sessions& sessions_;
  const NetOptions& options_;
  NetGovernor& governor_;
  NetStats& stats_;
  HandshakeSlots& slots_;
  RefusalLog& refusals_;
  std::vector<Peer*> peers_;         // attached and not closed
  std::vector<SessionId> detached_;  // sessions waiting for a resume
  std::uint64_t housekeeping_ = 0;   // the scheduler task id while there is work for it
  bool shut_down_ = false;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_LINK_TABLE_H_
