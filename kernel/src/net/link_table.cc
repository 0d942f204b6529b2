// SPDX-License-Identifier: Apache-2.0
// LinkTable (link_table.h): links from the accept to the end, lost links' sessions, outbound
// frames, housekeeping.
#include "kernel/src/net/link_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "kernel/src/core/scheduler.h"
#include "kernel/src/net/link.h"
#include "kernel/src/net/net_log.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::net {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

LinkTable::LinkTable(Scheduler& scheduler, Sessions& sessions, const NetOptions& options,
                     NetStats& stats, HandshakeSlots& slots, RefusalLog& refusals,
                     NetGovernor& governor)
    : scheduler_(scheduler),
      sessions_(sessions),
      options_(options),
      governor_(governor),
      stats_(stats),
      slots_(slots),
      refusals_(refusals) {}

LinkTable::~LinkTable() { CancelHousekeeping(); }

void LinkTable::Add(Peer& peer, TimePoint now) {
  Link& link = peer.link();
  link.attached_at = now;
  link.last_receive = now;
  peers_.push_back(&peer);
  ArmHousekeeping();
}

void LinkTable::Unlink(Peer& peer, ExitReason reason, bool resumable) {
  Link& link = peer.link();
  if (link.closed) {
    return;
  }
  link.closed = true;
  std::erase(peers_, &peer);
  if (link.session == 0) {
    slots_.Leave(peer);
    if (!link.refused) {
      ++stats_.handshakes_dropped[static_cast<std::size_t>(reason)];
    }
    return;
  }
  Session* s = sessions_.Get(link.session);
  if (s == nullptr) {
    return;
  }
  s->peer_ = nullptr;
  if (resumable && options_.resume_window_seconds > 0 && !shut_down_) {
    s->detached_ = true;
    s->detached_until_ = scheduler_.Now() + Seconds(options_.resume_window_seconds);
    s->detach_reason_ = reason;
    detached_.push_back(s->id());
    ++stats_.links_lost;
    ArmHousekeeping();
    return;
  }
  sessions_.End(link.session, reason);
}

void LinkTable::End(Peer& peer, ExitReason reason, std::string_view text, bool flush_queued) {
  const Link& link = peer.link();
  if (link.closed) {
    return;
  }
  const SessionId id = link.session;
  Unlink(peer, reason, /*resumable=*/false);  // the session ends first: no more sends to it
  const bool flush = reason != ExitReason::kSlowReader && reason != ExitReason::kTransportError;
  if (flush && reason != ExitReason::kClientClosed && !link.refused) {  // a Refuse said it
    fb::FlatBufferBuilder b(128);
    auto bye = w::CreateByeDirect(b, std::string(ExitReasonName(reason)).c_str(),
                                  std::string(text).c_str());
    peer.Write(w::FinishFrame(b, w::Body::Bye, bye.Union()));
  }
  if (reason != ExitReason::kClientClosed && reason != ExitReason::kServerShutdown) {
    if (id != 0) {
      kNetLog.Info("session {} ({}) ended: {}{}{}", id, peer.address(), ExitReasonName(reason),
                   text.empty() ? "" : ": ", text);
    } else if (!link.refused) {  // a handshake the server ended: rate-limited
      NoteRefusal(ExitReasonName(reason), peer.address(), text);
    }
  }
  peer.Close(flush || flush_queued);
}

void LinkTable::SendFrame(Peer& peer, std::span<const std::uint8_t> frame) {
  if (peer.link().closed) {
    return;
  }
  peer.Write(frame);
  stats_.bytes_out += frame.size();
  if (peer.queued_bytes() > options_.max_outbound_bytes) {
    ++stats_.slow_readers;
    End(peer, ExitReason::kSlowReader,
        fmt::format("more than {} bytes queued (net.max_outbound_bytes)",
                    options_.max_outbound_bytes));
  }
}

void LinkTable::SendTo(Session& s, std::span<const std::uint8_t> frame) {
  if (s.peer_ != nullptr) {
    SendFrame(*s.peer_, frame);
    return;
  }
  if (!s.detached_) {
    return;
  }
  // Half the outbound cap: the flush on resume queues behind the Welcome and must fit.
  if (s.outbox_.size() + frame.size() > options_.max_outbound_bytes / 2) {
    ++stats_.slow_readers;
    std::erase(detached_, s.id());
    sessions_.End(s.id(), ExitReason::kSlowReader);  // it could never catch up
    return;
  }
  s.outbox_.insert(s.outbox_.end(), frame.begin(), frame.end());
}

Status LinkTable::Kick(SessionId session, std::string_view text) {
  Session* s = sessions_.Get(session);
  if (s == nullptr) {
    return Status::NotFound(fmt::format("session {} is not active", session));
  }
  if (s->peer_ == nullptr) {
    std::erase(detached_, session);
    sessions_.End(session, ExitReason::kKicked);
  } else {
    End(*s->peer_, ExitReason::kKicked, text);
  }
  return Status();
}

// --- Sessions and their links ----------------------------------------------------------------

void LinkTable::Bind(Peer& peer, Session& s) {
  if (s.peer_ != nullptr && s.peer_ != &peer) {  // take the session over from its old link
    Peer* old = s.peer_;
    Unlink(*old, ExitReason::kTransportError, /*resumable=*/true);
    old->Close(/*flush=*/false);
  }
  if (s.detached_) {
    std::erase(detached_, s.id());
    s.detached_ = false;
  }
  slots_.Leave(peer);
  peer.link().session = s.id();
  s.peer_ = &peer;
}

void LinkTable::FlushOutbox(Session& s) {
  const std::vector<std::uint8_t> missed = std::exchange(s.outbox_, {});
  if (!missed.empty() && s.peer_ != nullptr) {
    SendFrame(*s.peer_, missed);
  }
}

std::size_t LinkTable::EndWaitingOf(std::string_view user) {
  std::size_t ended = 0;
  for (SessionId id : std::vector<SessionId>(detached_)) {
    Session* old = sessions_.Get(id);
    if (old != nullptr && old->user() == user) {
      std::erase(detached_, id);
      ++ended;
      sessions_.End(id, old->detach_reason_);
    }
  }
  return ended;
}

void LinkTable::NoteRefusal(std::string_view reason, const std::string& address,
                            std::string_view text) {
  if (refusals_.Note(reason, address, text, scheduler_.Now())) {
    ArmHousekeeping();  // it says how many when the interval ends
  }
}

void LinkTable::Shutdown(const std::function<std::string(Peer&)>& bye_text) {
  if (shut_down_) {
    return;
  }
  shut_down_ = true;
  const std::vector<Peer*> peers = peers_;
  if (!peers.empty()) {
    kNetLog.Info("ending {} connection(s) ({} sessions): the server is shutting down", peers.size(),
                 sessions_.count());
  }
  for (Peer* p : peers) {
    End(*p, ExitReason::kServerShutdown, bye_text(*p));
  }
  for (SessionId id : std::exchange(detached_, {})) {
    sessions_.End(id, ExitReason::kServerShutdown);
  }
  refusals_.Flush(/*all=*/true, scheduler_.Now());
  CancelHousekeeping();
}

// --- Housekeeping ------------------------------------------------------------------------------

void LinkTable::ArmHousekeeping() {
  if (housekeeping_ != 0) {
    return;
  }
  // Often enough for the shortest of the timers it serves, at most 4 times a second.
  const double period =
      std::clamp(std::min({options_.ping_interval_seconds, options_.handshake_timeout_seconds / 4,
                           options_.idle_timeout_seconds / 4}),
                 0.01, 0.25);
  housekeeping_ = scheduler_
                      .Every(
                          Seconds(period), [this] { Housekeep(); }, Priority::kKernel)
                      .id();
}

void LinkTable::CancelHousekeeping() {
  if (housekeeping_ != 0) {
    TaskHandle(&scheduler_, housekeeping_).Cancel();
    housekeeping_ = 0;
  }
}

void LinkTable::Housekeep() {
  const TimePoint now = scheduler_.Now();
  const std::vector<Peer*> peers = peers_;
  for (Peer* p : peers) {
    if (!p->link().closed) {
      Check(*p, now);
    }
  }
  // Sessions whose link was lost and whose client did not come back in time end now.
  const std::vector<SessionId> waiting = detached_;
  for (SessionId id : waiting) {
    Session* s = sessions_.Get(id);
    if (s == nullptr) {
      std::erase(detached_, id);
    } else if (now >= s->detached_until_) {
      std::erase(detached_, id);
      ++stats_.resumes_expired;
      sessions_.End(id, s->detach_reason_);
    }
  }
  refusals_.Flush(/*all=*/false, now);
  governor_.Pass(now);
  if (peers_.empty() && detached_.empty() && !refusals_.waiting()) {
    CancelHousekeeping();
  }
}

void LinkTable::Check(Peer& peer, TimePoint now) {
  Link& link = peer.link();
  if (link.session == 0) {
    if (now - link.attached_at > Seconds(options_.handshake_timeout_seconds)) {
      ++stats_.handshake_timeouts;
      End(peer, ExitReason::kTimedOut,
          fmt::format("the handshake did not finish within {} s "
                      "(net.handshake_timeout_seconds)",
                      options_.handshake_timeout_seconds));
    }
    return;
  }
  if (now - link.last_receive > Seconds(options_.idle_timeout_seconds)) {
    // A silent link is a lost link: the session waits for a resume like any other.
    Unlink(peer, ExitReason::kTimedOut, /*resumable=*/true);
    peer.Close(/*flush=*/false);
    return;
  }
  if (options_.ping_interval_seconds <= 0) {
    return;  // pings are off
  }
  const std::int64_t ticks = (now - link.attached_at) / Seconds(options_.ping_interval_seconds);
  if (ticks > static_cast<std::int64_t>(link.ping_seq)) {
    link.ping_seq = static_cast<std::uint32_t>(ticks);
    if (Session* s = sessions_.Get(link.session)) {
      governor_.Probed(*s);
    }
    fb::FlatBufferBuilder b(64);
    auto ping =
        w::CreatePing(b, link.ping_seq, static_cast<std::uint64_t>(now.time_since_epoch().count()));
    SendFrame(peer, w::FinishFrame(b, w::Body::Ping, ping.Union()));
  }
}

}  // namespace molt::kernel::net
