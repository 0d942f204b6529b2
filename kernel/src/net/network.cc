// SPDX-License-Identifier: Apache-2.0
// Network, the composition (network.h): listening, a link's end or loss, outbound frames,
// housekeeping (handshake deadlines, idle links, pings, resume windows), the wire inspector and
// the snapshot admin/ renders. Admission and the Hello are in front_door.cc, the inbound pipeline
// in inbound.cc, requests in requests.cc.
#include "kernel/src/net/network.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernel/src/core/host_port.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/net/frames.h"
#include "kernel/src/net/net_log.h"
#include "kernel/src/net/transport.h"
#include "kernel/src/wire/tls.h"

namespace molt::kernel::net {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

Network::Network(Kernel& kernel, NetOptions options)
    : kernel_(kernel),
      options_(std::move(options)),
      channels_(kernel.hooks(), kernel.bus()),
      sessions_(kernel.hooks(), kernel.bus()),
      replicas_(*this),
      auth_point_(kernel.hooks().Define("Auth.Hello", Hooks::Mode::kFailClosed)),
      rate_limited_point_(kernel.hooks().Define("Net.RateLimited", Hooks::Mode::kFailOpen)),
      flood_point_(kernel.hooks().Define("Net.FloodDetected", Hooks::Mode::kFailOpen)),
      rate_limited_topic_(kernel.bus().Resolve("Net.RateLimited")),
      flood_topic_(kernel.bus().Resolve("Net.FloodDetected")),
      rejected_topic_(kernel.bus().Resolve("Net.IntentRejected")),
      resumed_topic_(kernel.bus().Resolve("Kernel.SessionResumed")),
      slots_(options_.handshakes_per_address),
      refusals_(options_.refusal_log_seconds) {
  kernel_.OnShutdown(Kernel::ShutdownStage::kFirst, "sessions", [this] {
    Shutdown();
    return Status();
  });
}

Network::~Network() {
  Shutdown();
  inspection_end_.Cancel();
  requests_.CancelAll();
  kernel_.RemoveShutdownStep("sessions");
}

Status Network::Listen() {
  if (shut_down_) {
    return Status::FailedPrecondition("the network is shut down");
  }
  if (options_.auth == AuthMode::kProduction && kernel_.hooks().handler_count(auth_point_) == 0) {
    return Status::FailedPrecondition(
        "net.auth is \"production\" but no plugin validates Auth.Hello: load an "
        "authentication plugin, or set net.auth = \"dev\" for development");
  }
  std::shared_ptr<wire::TlsContext> tls;
  if (options_.tls_cert_file.empty() != options_.tls_key_file.empty()) {
    return Status::InvalidArgument(
        "TLS needs both a certificate and its private key: give --tls-cert and --tls-key "
        "(net.tls_cert, net.tls_key), or neither");
  }
  if (!options_.tls_cert_file.empty()) {
    auto context = wire::TlsContext::Server(options_.tls_cert_file, options_.tls_key_file);
    if (!context.ok()) {
      return context.status();
    }
    tls = std::move(context).value();
  }
  transport_ = std::make_unique<TcpTransport>(*this, kernel_.loop().io(), tls);
  MOLT_RETURN_IF_ERROR(
      transport_->Listen(options_.bind_address, options_.port, options_.descriptor_reserve));
  if (options_.websocket.empty()) {
    return Status::Ok();
  }
  std::string address;
  std::uint16_t ws_port = 0;
  if (!SplitHostPort(options_.websocket, &address, &ws_port)) {
    return Status::InvalidArgument("net.websocket \"" + options_.websocket +
                                   "\" is not ADDRESS:PORT (for example 127.0.0.1:7780, or "
                                   "0.0.0.0:0 for any free port)");
  }
  wire::WebSocketOptions ws;
  ws.origins = options_.websocket_origins;
  websocket_ =
      std::make_unique<TcpTransport>(*this, kernel_.loop().io(), std::move(tls), std::move(ws));
  // The descriptor reserve is the TCP listener's to keep: both share one process limit.
  return websocket_->Listen(address, ws_port, options_.descriptor_reserve);
}

std::uint16_t Network::port() const { return transport_ ? transport_->port() : 0; }

std::uint16_t Network::websocket_port() const { return websocket_ ? websocket_->port() : 0; }

void Network::StopAccepting() {
  if (closing_ || shut_down_) {
    return;
  }
  closing_ = true;
  for (TcpTransport* t : {transport_.get(), websocket_.get()}) {
    if (t != nullptr) {
      t->StopAccepting();
    }
  }
  kNetLog.Info(
      "no new connections: the server is closing ({} sessions stay until the services "
      "stopped)",
      sessions_.count());
}

void Network::Shutdown() {
  if (shut_down_) {
    return;
  }
  shut_down_ = true;
  for (TcpTransport* t : {transport_.get(), websocket_.get()}) {
    if (t != nullptr) {
      t->StopAccepting();
    }
  }
  const std::vector<Peer*> peers = peers_;
  if (!peers.empty()) {
    kNetLog.Info("ending {} connection(s) ({} sessions): the server is shutting down", peers.size(),
                 sessions_.count());
  }
  for (Peer* p : peers) {
    End(*p, ExitReason::kServerShutdown, ShutdownText(*p));
  }
  for (SessionId id : std::exchange(detached_, {})) {
    sessions_.End(id, ExitReason::kServerShutdown);
  }
  refusals_.Flush(/*all=*/true, kernel_.scheduler().Now());
  if (housekeeping_ != 0) {
    TaskHandle(&kernel_.scheduler(), housekeeping_).Cancel();
    housekeeping_ = 0;
  }
}

// --- Links -------------------------------------------------------------------------------------

void Network::Fail(Peer& peer, std::string_view text, bool flush) {
  End(peer, ExitReason::kTransportError, text, flush);
}

void Network::Detach(Peer& peer, ExitReason reason) {
  // The link failed under the session (EOF without a Bye, a socket error): it may come back.
  Unlink(peer, reason, /*resumable=*/true);
}

void Network::Unlink(Peer& peer, ExitReason reason, bool resumable) {
  if (peer.closed_) {
    return;
  }
  peer.closed_ = true;
  std::erase(peers_, &peer);
  if (peer.session_ == 0) {
    slots_.Leave(peer);
    if (!peer.refused_) {
      ++stats_.handshakes_dropped[static_cast<std::size_t>(reason)];
    }
    return;
  }
  Session* s = sessions_.Get(peer.session_);
  if (s == nullptr) {
    return;
  }
  s->peer_ = nullptr;
  if (resumable && options_.resume_window_seconds > 0 && !shut_down_) {
    s->detached_ = true;
    s->detached_until_ = kernel_.scheduler().Now() + Seconds(options_.resume_window_seconds);
    s->detach_reason_ = reason;
    detached_.push_back(s->id());
    ++stats_.links_lost;
    ArmHousekeeping();
    return;
  }
  sessions_.End(peer.session_, reason);
}

void Network::SendTo(Session& s, std::span<const std::uint8_t> frame) {
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

void Network::End(Peer& peer, ExitReason reason, std::string_view text, bool flush_queued) {
  if (peer.closed_) {
    return;
  }
  const SessionId id = peer.session_;
  Unlink(peer, reason, /*resumable=*/false);  // the session ends first: no more sends to it
  const bool flush = reason != ExitReason::kSlowReader && reason != ExitReason::kTransportError;
  if (flush && reason != ExitReason::kClientClosed && !peer.refused_) {  // a Refuse said it
    fb::FlatBufferBuilder b(128);
    auto bye = w::CreateByeDirect(b, std::string(ExitReasonName(reason)).c_str(),
                                  std::string(text).c_str());
    peer.Write(w::FinishFrame(b, w::Body::Bye, bye.Union()));
  }
  if (reason != ExitReason::kClientClosed && reason != ExitReason::kServerShutdown) {
    if (id != 0) {
      kNetLog.Info("session {} ({}) ended: {}{}{}", id, peer.address(), ExitReasonName(reason),
                   text.empty() ? "" : ": ", text);
    } else if (!peer.refused_) {  // a handshake the server ended: rate-limited
      LogRefusal(ExitReasonName(reason), peer.address(), text);
    }
  }
  peer.Close(flush || flush_queued);
}

void Network::SendFrame(Peer& peer, std::span<const std::uint8_t> frame) {
  if (peer.closed_) {
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

// --- Outbound ----------------------------------------------------------------------------------

Status Network::Send(ChannelId channel, SessionId session, std::span<const std::uint8_t> payload) {
  return SendList(channel, std::span(&session, 1), payload);
}

Status Network::SendList(ChannelId channel, std::span<const SessionId> sessions,
                         std::span<const std::uint8_t> payload) {
  Channel* ch = channels_.Find(channel);
  if (ch == nullptr || ch->kind() != ChannelKind::kEvent) {
    return Status::NotFound(fmt::format("channel id {} is not a declared event channel", channel));
  }
  if (payload.size() + 64 > options_.max_frame_bytes) {
    return Status::InvalidArgument(fmt::format(
        "event \"{}\": a payload of {} bytes does not fit a frame (net.max_frame_bytes = {})",
        ch->name(), payload.size(), options_.max_frame_bytes));
  }
  fb::FlatBufferBuilder b(64 + payload.size());
  auto bytes = w::PayloadVector(b, payload);
  auto frame = w::FinishFrame(b, w::Body::Event, w::CreateEvent(b, channel, bytes).Union());
  ChannelRegistry::Hold hold(channels_);  // an ending session's hooks may remove the channel
  Sessions::Hold sessions_hold(sessions_);
  std::uint32_t sent = 0;
  for (SessionId id : sessions) {
    if (Session* s = sessions_.Get(id)) {
      ++ch->counters().events_sent;
      ++sent;
      SendTo(*s, frame);  // a session whose link is lost gets it when it resumes
    }
  }
  if (tap_.on()) {
    tap_.Find(Tap(false, "event", channel, ch, sessions.size() == 1 ? sessions[0] : 0, payload,
                  "sent"))
        ->recipients = sent;
  }
  return Status();
}

void Network::Drain() {
  if (draining_ || closing_ || shut_down_) {
    return;
  }
  draining_ = true;
  kNetLog.Info(
      "draining: new players are refused; the {} sessions here stay, and a lost link "
      "may still resume its session until the close",
      sessions_.count());
}

const std::vector<Network::RedirectTarget>& Network::Redirect(std::vector<RedirectTarget> targets,
                                                              std::string reason) {
  Drain();
  redirect_ = Redirection{std::move(targets), std::move(reason), {}};
  Sessions::Hold hold(sessions_);
  for (SessionId id : sessions_.ActiveIds()) {
    if (Session* s = sessions_.Get(id); s != nullptr && s->peer_ != nullptr) {
      SendRedirect(*s);
    }
  }
  return redirect_->targets;
}

const std::pair<const Network::RedirectTarget*, const std::string*> Network::TargetOf(Session& s) {
  const bool websocket = s.peer_->websocket();
  auto address = [websocket](const RedirectTarget& t) -> const std::string& {
    return websocket ? t.websocket_address : t.address;
  };
  std::vector<RedirectTarget>& targets = redirect_->targets;
  auto it = redirect_->chosen.find(s.id());
  if (it == redirect_->chosen.end()) {
    std::size_t best = targets.size();
    for (std::size_t i = 0; i < targets.size(); ++i) {
      if (!address(targets[i]).empty() &&
          (best == targets.size() || targets[i].sessions < targets[best].sessions)) {
        best = i;
      }
    }
    if (best == targets.size()) {
      return {nullptr, nullptr};
    }
    ++targets[best].sessions;
    it = redirect_->chosen.emplace(s.id(), best).first;
  }
  const RedirectTarget& t = targets[it->second];
  return {&t, &address(t)};
}

bool Network::SendRedirect(Session& s) {
  const auto [target, address] = TargetOf(s);
  if (target == nullptr) {
    return false;
  }
  fb::FlatBufferBuilder b(256);
  SendTo(s, w::FinishFrame(b, w::Body::Redirect,
                           w::CreateRedirectDirect(b, address->c_str(), target->server.c_str(),
                                                   redirect_->reason.c_str())
                               .Union()));
  return true;
}

std::string Network::ShutdownText(Peer& peer) {
  Session* s = redirect_ && peer.session_ != 0 ? sessions_.Get(peer.session_) : nullptr;
  if (s != nullptr && s->peer_ == &peer) {
    if (const auto [target, address] = TargetOf(*s); target != nullptr) {
      return fmt::format("{}: go to server {} at {}", redirect_->reason, target->server, *address);
    }
  }
  return "the server is shutting down";
}

std::size_t Network::AnnounceChannels() {
  fb::FlatBufferBuilder b(1024);
  const std::vector<fb::Offset<w::ChannelInfo>> infos = ChannelInfos(b, channels_);
  const auto frame = w::FinishFrame(
      b, w::Body::Channels, w::CreateChannelsDirect(b, channels_.ProtocolHash(), &infos).Union());
  Sessions::Hold hold(sessions_);
  std::size_t told = 0;
  for (SessionId id : sessions_.ActiveIds()) {
    // A session whose link is lost learns the table from the Welcome that resumes it.
    if (Session* s = sessions_.Get(id); s != nullptr && s->peer_ != nullptr) {
      SendTo(*s, frame);
      ++told;
    }
  }
  return told;
}

Status Network::Broadcast(ChannelId channel, std::span<const std::uint8_t> payload) {
  const std::vector<SessionId> ids = sessions_.ActiveIds();
  return SendList(channel, ids, payload);
}

Status Network::Kick(SessionId session, std::string_view text) {
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

// --- Housekeeping ------------------------------------------------------------------------------

void Network::ArmHousekeeping() {
  if (housekeeping_ != 0) {
    return;
  }
  // Often enough for the shortest of the timers it serves, at most 4 times a second.
  const double period =
      std::clamp(std::min({options_.ping_interval_seconds, options_.handshake_timeout_seconds / 4,
                           options_.idle_timeout_seconds / 4}),
                 0.01, 0.25);
  housekeeping_ = kernel_.scheduler()
                      .Every(
                          Seconds(period), [this] { Housekeep(); }, Priority::kKernel)
                      .id();
}

std::uint64_t Network::Tap(bool inbound, std::string_view kind, ChannelId id, const Channel* ch,
                           SessionId session, std::span<const std::uint8_t> payload,
                           std::string verdict) {
  WireFrame f;
  f.inbound = inbound;
  f.kind = kind;
  f.channel = id;
  f.channel_name = ch != nullptr ? ch->name() : "";
  f.session = session;
  f.bytes = static_cast<std::uint32_t>(payload.size());
  f.verdict = std::move(verdict);
  return tap_.Record(std::move(f), payload);
}

void Network::Inspect(Duration lease) {
  const TimePoint now = kernel_.scheduler().Now();
  if (tap_.Lease(now, lease)) {
    kernel_.hooks().SetTiming(true);
    kNetLog.Info("wire inspector on: recording messages and timing hook chains while it is read");
  }
  ArmInspectionEnd(now);
}

void Network::ArmInspectionEnd(TimePoint now) {
  inspection_end_.Cancel();
  inspection_end_ = kernel_.scheduler().After(
      tap_.until() - now,
      [this] {
        const TimePoint at = kernel_.scheduler().Now();
        if (tap_.Expire(at)) {
          kernel_.hooks().SetTiming(false);
          kNetLog.Info("wire inspector off: nobody read it for its lease");
        } else if (tap_.on()) {
          ArmInspectionEnd(at);
        }
      },
      Priority::kKernel);
}

void Network::Housekeep() {
  const TimePoint now = kernel_.scheduler().Now();
  const std::vector<Peer*> peers = peers_;
  for (Peer* p : peers) {
    if (p->closed_) {
      continue;
    }
    if (p->session_ == 0) {
      if (now - p->attached_at_ > Seconds(options_.handshake_timeout_seconds)) {
        ++stats_.handshake_timeouts;
        End(*p, ExitReason::kTimedOut,
            fmt::format("the handshake did not finish within {} s "
                        "(net.handshake_timeout_seconds)",
                        options_.handshake_timeout_seconds));
      }
      continue;
    }
    if (now - p->last_receive_ > Seconds(options_.idle_timeout_seconds)) {
      // A silent link is a lost link: the session waits for a resume like any other.
      Unlink(*p, ExitReason::kTimedOut, /*resumable=*/true);
      p->Close(/*flush=*/false);
      continue;
    }
    if (options_.ping_interval_seconds <= 0) {
      continue;  // pings are off
    }
    const std::int64_t ticks = (now - p->attached_at_) / Seconds(options_.ping_interval_seconds);
    if (ticks > static_cast<std::int64_t>(p->ping_seq_)) {
      p->ping_seq_ = static_cast<std::uint32_t>(ticks);
      fb::FlatBufferBuilder b(64);
      auto ping = w::CreatePing(b, p->ping_seq_,
                                static_cast<std::uint64_t>(now.time_since_epoch().count()));
      SendFrame(*p, w::FinishFrame(b, w::Body::Ping, ping.Union()));
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
  if (peers_.empty() && detached_.empty() && !refusals_.waiting() && housekeeping_ != 0) {
    TaskHandle(&kernel_.scheduler(), housekeeping_).Cancel();
    housekeeping_ = 0;
  }
}

// --- The snapshot ------------------------------------------------------------------------------

NetSnapshot Network::Snapshot() const {
  NetSnapshot snap;
  snap.port = port();
  snap.half_open = slots_.size();
  snap.waiting_resume = detached_.size();
  snap.websocket_port = websocket_port();
  for (const Peer* p : peers_) {
    if (p->session() != 0) {
      ++(p->websocket() ? snap.websocket_sessions : snap.tcp_sessions);
    }
  }
  snap.counters = stats_;
  snap.sessions = sessions_.stats();
  snap.replicas = replicas_.stats();
  const std::vector<const Channel*> channels = channels_.List();
  snap.channels.reserve(channels.size());
  for (const Channel* ch : channels) {
    snap.channels.push_back({ch->id(), ch->name(), ch->kind(), ch->rate(), ch->burst(),
                             ch->guarded(kernel_.hooks()), ch->counters()});
  }
  return snap;
}

}  // namespace molt::kernel::net
