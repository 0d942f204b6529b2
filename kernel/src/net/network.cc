// SPDX-License-Identifier: Apache-2.0
// Network, the composition (network.h): its parts wired together, listening, the server's close
// and drain, outbound events, the wire inspector's lease and the snapshot admin/ renders.
#include "kernel/src/net/network.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernel/src/core/host_port.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/net/frames.h"
#include "kernel/src/net/link.h"
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
      governor_(sessions_, kernel.bus(), options_),
      slots_(options_.handshakes_per_address),
      refusals_(options_.refusal_log_seconds),
      links_(kernel.scheduler(), sessions_, options_, stats_, slots_, refusals_, governor_),
      replicas_(sessions_, links_, kernel.scheduler(), options_.max_frame_bytes),
      zones_(sessions_, replicas_),
      grids_(sessions_, replicas_, kernel.scheduler()),
      redirection_(sessions_, links_),
      requests_(kernel.scheduler(), options_, channels_, sessions_, links_, tap_),
      datagrams_(sessions_),
      front_door_(kernel, options_, stats_, channels_, sessions_, replicas_, links_, slots_,
                  redirection_, datagrams_),
      pipeline_(kernel, options_, stats_, channels_, sessions_, links_, front_door_, requests_,
                tap_, datagrams_, governor_) {
  replicas_.SetPace(&governor_);
  kernel_.OnShutdown(Kernel::ShutdownStage::kFirst, "sessions", [this] {
    Shutdown();
    return Status();
  });
}

Network::~Network() {
  Shutdown();
  inspection_end_.Cancel();
  kernel_.RemoveShutdownStep("sessions");
}

Status Network::Listen() {
  if (links_.shut_down()) {
    return Status::FailedPrecondition("the network is shut down");
  }
  MOLT_RETURN_IF_ERROR(NetGovernor::Check(options_));
  if (options_.auth == AuthMode::kProduction && !front_door_.authenticates()) {
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
  if (!options_.udp.empty()) {
    std::string address;
    std::uint16_t udp_port = 0;
    if (!SplitHostPort(options_.udp, &address, &udp_port)) {
      return Status::InvalidArgument("net.udp \"" + options_.udp +
                                     "\" is not ADDRESS:PORT (for example 127.0.0.1:7777, or "
                                     "0.0.0.0:0 for any free port)");
    }
    udp_ = std::make_unique<DatagramTransport>(datagrams_, kernel_.loop().io());
    MOLT_RETURN_IF_ERROR(udp_->Listen(address, udp_port, options_.udp_max_links));
    datagrams_.Attach(
        udp_.get(),
        [this](Peer& peer, std::span<const std::uint8_t> frame) {
          pipeline_.ReceiveFrame(peer, frame);
        },
        [this] { pipeline_.SendDatagramAcks(); });
  }
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

void Network::StopTransports() {
  for (TcpTransport* t : {transport_.get(), websocket_.get()}) {
    if (t != nullptr) {
      t->StopAccepting();
    }
  }
}

void Network::StopAccepting() {
  if (front_door_.closing() || links_.shut_down()) {
    return;
  }
  front_door_.Close();
  StopTransports();
  kNetLog.Info(
      "no new connections: the server is closing ({} sessions stay until the services "
      "stopped)",
      sessions_.count());
}

void Network::Shutdown(std::string_view why) {
  if (links_.shut_down()) {
    return;
  }
  StopTransports();
  links_.Shutdown([this, why](Peer& p) { return redirection_.ByeText(p, why); });
}

void Network::Drain() {
  if (front_door_.draining() || front_door_.closing() || links_.shut_down()) {
    return;
  }
  front_door_.Drain();
  kNetLog.Info(
      "draining: new players are refused; the {} sessions here stay, and a lost link "
      "may still resume its session until the close",
      sessions_.count());
}

const std::vector<Network::RedirectTarget>& Network::Redirect(std::vector<RedirectTarget> targets,
                                                              std::string reason) {
  Drain();
  return redirection_.Begin(std::move(targets), std::move(reason));
}

// --- PeerSink ----------------------------------------------------------------------------------

bool Network::Attach(Peer& peer) {
  if (links_.shut_down()) {
    return false;
  }
  const TimePoint now = kernel_.scheduler().Now();
  pipeline_.Open(peer.link(), now);
  links_.Add(peer, now);
  front_door_.Admit(peer, now);
  return true;
}

void Network::Detach(Peer& peer, ExitReason reason) {
  // The link failed under the session (EOF without a Bye, a socket error): it may come back.
  links_.Unlink(peer, reason, /*resumable=*/true);
}

void Network::Fail(Peer& peer, std::string_view text, bool flush) {
  links_.End(peer, ExitReason::kTransportError, text, flush);
}

std::vector<std::uint8_t> Network::RefuseOverCapacity(const std::string& address,
                                                      std::string_view why) {
  return front_door_.RefuseOverCapacity(address, why);
}

// --- Outbound ----------------------------------------------------------------------------------

Status Network::Send(ChannelId channel, SessionId session, std::span<const std::uint8_t> payload) {
  return SendList(channel, std::span(&session, 1), payload);
}

Status Network::SendList(ChannelId channel, std::span<const SessionId> sessions,
                         std::span<const std::uint8_t> payload) {
  Channel* ch = channels_.Find(channel);
  if (ch == nullptr ||
      (ch->kind() != ChannelKind::kEvent && ch->kind() != ChannelKind::kUnreliable)) {
    return Status::NotFound(
        fmt::format("channel id {} is not a declared event or unreliable channel", channel));
  }
  const bool unreliable = ch->kind() == ChannelKind::kUnreliable;
  if (unreliable && payload.size() > kMaxUnreliablePayload) {
    return Status::InvalidArgument(
        fmt::format("unreliable \"{}\": a payload of {} bytes exceeds the {}-byte cap (send it on "
                    "an event channel)",
                    ch->name(), payload.size(), kMaxUnreliablePayload));
  }
  if (payload.size() + 64 > options_.max_frame_bytes) {
    return Status::InvalidArgument(fmt::format(
        "event \"{}\": a payload of {} bytes does not fit a frame (net.max_frame_bytes = {})",
        ch->name(), payload.size(), options_.max_frame_bytes));
  }
  fb::FlatBufferBuilder b(64 + payload.size());
  auto bytes = w::PayloadVector(b, payload);
  auto frame = w::FinishFrame(
      b, w::Body::Event, w::CreateEvent(b, channel, bytes, unreliable ? ch->NextSeq() : 0).Union());
  // Lost > late: over a reliable link an unreliable event is not queued behind a backlog (Low:
  // more than a tick's byte budget waiting; High: half the slow-reader limit), nor kept for a
  // session whose link is lost.
  const std::size_t shed_above = ch->spec().priority == UnreliablePriority::kHigh
                                     ? options_.max_outbound_bytes / 2
                                     : options_.bytes_per_tick;
  ChannelRegistry::Hold hold(channels_);  // an ending session's hooks may remove the channel
  Sessions::Hold sessions_hold(sessions_);
  std::uint32_t sent = 0;
  for (SessionId id : sessions) {
    if (Session* s = sessions_.Get(id)) {
      if (unreliable) {
        if (governor_.Sheds(*s, ch->spec().priority)) {  // Low, to a Poor link
          ++ch->counters().shed;
          continue;
        }
        // By the session's datagram link when it has one: unordered, never behind a backlog.
        if (datagrams_.Send(id, frame, DatagramTransport::Channel::kUnreliable)) {
          ++ch->counters().events_sent;
          ++sent;
          continue;
        }
        if (s->peer() == nullptr || s->peer()->queued_bytes() > shed_above) {
          ++ch->counters().shed;
          continue;
        }
      }
      ++ch->counters().events_sent;
      ++sent;
      links_.SendTo(*s, frame);  // a session whose link is lost gets it when it resumes
    }
  }
  if (tap_.on()) {
    tap_.Find(tap_.Note(false, unreliable ? "unreliable" : "event", channel, ch->name(),
                        sessions.size() == 1 ? sessions[0] : 0, payload, "sent"))
        ->recipients = sent;
  }
  return Status();
}

Status Network::Broadcast(ChannelId channel, std::span<const std::uint8_t> payload) {
  const std::vector<SessionId> ids = sessions_.ActiveIds();
  return SendList(channel, ids, payload);
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
    if (Session* s = sessions_.Get(id); s != nullptr && s->peer() != nullptr) {
      links_.SendTo(*s, frame);
      ++told;
    }
  }
  return told;
}

// --- The wire inspector ------------------------------------------------------------------------

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

// --- The snapshot ------------------------------------------------------------------------------

NetSnapshot Network::Snapshot() const {
  NetSnapshot snap;
  snap.port = port();
  snap.half_open = slots_.size();
  snap.waiting_resume = links_.waiting();
  snap.websocket_port = websocket_port();
  for (const Peer* p : links_.peers()) {
    if (p->session() != 0) {
      ++(p->websocket() ? snap.websocket_sessions : snap.tcp_sessions);
    }
  }
  snap.udp_port = udp_port();
  snap.datagram_sessions = datagrams_.bound();
  snap.datagram_peers = udp_ != nullptr ? udp_->peers() : 0;
  snap.datagrams = datagrams_.counts();
  snap.udp = udp_ != nullptr ? udp_->counts() : DatagramTransport::Counts{};
  snap.counters = stats_;
  snap.sessions = sessions_.stats();
  snap.replicas = replicas_.stats();
  snap.zones = zones_.count();
  snap.grids = grids_.stats();
  snap.governor = governor_.stats();
  (void)front_door_.load().Overloaded();  // a fresh sample, when one is due
  snap.load = front_door_.load().figures();
  const std::vector<const Channel*> channels = channels_.List();
  snap.channels.reserve(channels.size());
  for (const Channel* ch : channels) {
    snap.channels.push_back({ch->id(), ch->name(), ch->kind(), ch->rate(), ch->burst(),
                             ch->guarded(kernel_.hooks()), ch->counters()});
  }
  return snap;
}

}  // namespace molt::kernel::net
