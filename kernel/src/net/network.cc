// SPDX-License-Identifier: Apache-2.0
// Network: the handshake, the inbound pipeline, outbound frames, housekeeping, audit and fuzz.
#include "kernel/src/net/network.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <random>

#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/net/net_log.h"
#include "kernel/src/net/transport.h"
#include "kernel/src/wire/tls.h"
#include "kernel/src/wire/wire.h"
#include "molt_wire_generated.h"

namespace molt::kernel::net {
namespace {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

constexpr std::size_t kMaxUserId = 64;

std::uint32_t Millis(double seconds) {
  return seconds <= 0 ? 0u : static_cast<std::uint32_t>(std::min(seconds * 1000.0 + 0.5, 4.0e9));
}

std::span<const std::uint8_t> Bytes(const fb::Vector<std::uint8_t>* v) {
  return v == nullptr ? std::span<const std::uint8_t>() : std::span(v->data(), v->size());
}

// A finished size-prefixed envelope: the frame as it goes on the wire.
std::span<const std::uint8_t> Finish(fb::FlatBufferBuilder& b, w::Body type,
                                     fb::Offset<void> body) {
  b.FinishSizePrefixed(w::CreateEnvelope(b, type, body));
  return std::span(b.GetBufferPointer(), b.GetSize());
}

// A Refuse frame: the reason, its text, and a retry-after where waiting helps.
std::span<const std::uint8_t> RefuseFrame(fb::FlatBufferBuilder& b, w::RefuseReason reason,
                                          std::string_view text, double retry_after) {
  auto refuse = w::CreateRefuseDirect(b, reason, std::string(text).c_str(), Millis(retry_after));
  return Finish(b, w::Body::Refuse, refuse.Union());
}

// The channel table as a Welcome or a Channels frame lists it.
std::vector<fb::Offset<w::ChannelInfo>> ChannelInfos(fb::FlatBufferBuilder& b,
                                                     const ChannelRegistry& channels) {
  std::vector<fb::Offset<w::ChannelInfo>> infos;
  for (const Channel* ch : channels.List()) {
    infos.push_back(w::CreateChannelInfoDirect(
        b, ch->id(), ch->name().c_str(), static_cast<w::ChannelKind>(ch->kind()),
        ch->spec().schema.c_str(), static_cast<float>(ch->rate()), static_cast<float>(ch->burst()),
        ch->kind() == ChannelKind::kRequest ? Millis(ch->timeout_seconds()) : 0));
  }
  return infos;
}

// 16 bytes from the operating system's generator: a resume token nobody can guess.
std::vector<std::uint8_t> NewResumeToken() {
  static std::random_device device;
  std::vector<std::uint8_t> token(16);
  for (std::size_t i = 0; i < token.size(); i += 4) {
    const std::uint32_t r = device();
    std::memcpy(token.data() + i, &r, 4);
  }
  return token;
}

bool ValidUserId(std::string_view user) {
  if (user.empty() || user.size() > kMaxUserId) {
    return false;
  }
  for (unsigned char c : user) {
    if (c < 0x20 || c == 0x7f) {
      return false;
    }
  }
  return true;
}

}  // namespace

// An unanswered request.
struct Network::Pending {
  SessionId session;
  std::uint32_t wire_id;
  ChannelId channel;
  TaskHandle timeout;
};

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
      resumed_topic_(kernel.bus().Resolve("Kernel.SessionResumed")) {
  kernel_.OnShutdown(Kernel::ShutdownStage::kFirst, "sessions", [this] {
    Shutdown();
    return Status();
  });
  kernel_.AddStatsSection("net", [this] { return StatsJson(); });
}

Network::~Network() {
  Shutdown();
  inspection_end_.Cancel();
  for (auto& [token, p] : pending_) {
    p->timeout.Cancel();
  }
  kernel_.RemoveShutdownStep("sessions");
  kernel_.RemoveStatsSection("net");
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
  transport_ = std::make_unique<TcpTransport>(*this, kernel_.loop().io(), std::move(tls));
  return transport_->Listen(options_.bind_address, options_.port, options_.descriptor_reserve);
}

std::uint16_t Network::port() const { return transport_ ? transport_->port() : 0; }

void Network::StopAccepting() {
  if (closing_ || shut_down_) {
    return;
  }
  closing_ = true;
  if (transport_) {
    transport_->StopAccepting();
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
  if (transport_) {
    transport_->StopAccepting();
  }
  const std::vector<Peer*> peers = peers_;
  if (!peers.empty()) {
    kNetLog.Info("ending {} connection(s) ({} sessions): the server is shutting down", peers.size(),
                 sessions_.count());
  }
  for (Peer* p : peers) {
    End(*p, ExitReason::kServerShutdown, "the server is shutting down");
  }
  for (SessionId id : std::exchange(detached_, {})) {
    sessions_.End(id, ExitReason::kServerShutdown);
  }
  FlushRefusalLog(/*all=*/true);
  if (housekeeping_ != 0) {
    TaskHandle(&kernel_.scheduler(), housekeeping_).Cancel();
    housekeeping_ = 0;
  }
}

// --- Connections -------------------------------------------------------------------------------

bool Network::Attach(Peer& peer) {
  if (shut_down_) {
    return false;
  }
  ++stats_.connections_accepted;
  const TimePoint now = kernel_.scheduler().Now();
  const double tick = std::max(options_.tick_rate, 1.0);
  peer.bytes_ = TokenBucket(options_.bytes_per_tick * tick,
                            options_.bytes_per_tick * options_.budget_burst_ticks, now);
  peer.messages_ = TokenBucket(options_.messages_per_tick * tick,
                               options_.messages_per_tick * options_.budget_burst_ticks, now);
  peer.attached_at_ = now;
  peer.last_receive_ = now;
  peer.offender_window_start_ = now;
  peers_.push_back(&peer);
  ArmHousekeeping();

  if (handshake_buckets_.size() > 4096) {  // forget addresses whose buckets refilled
    for (auto it = handshake_buckets_.begin(); it != handshake_buckets_.end();) {
      it = it->second.Available(now) >= it->second.burst() ? handshake_buckets_.erase(it)
                                                           : std::next(it);
    }
  }
  auto [it, fresh] = handshake_buckets_.try_emplace(peer.address(), options_.handshakes_per_address,
                                                    options_.handshakes_per_address * 2, now);
  if (!it->second.Take(now)) {
    ++stats_.refused_handshake_rate;
    Refuse(peer, static_cast<std::uint8_t>(w::RefuseReason::RateLimited),
           fmt::format("too many connections from {}; retry later", peer.address()),
           it->second.SecondsUntil(now));
    return true;
  }
  MakeHandshakeRoom(peer.address());
  peer.waiting_ = half_open_.insert(half_open_.end(), &peer);
  peer.in_handshake_ = true;
  ++half_open_by_address_[peer.address()];
  return true;
}

// Slots: a connection that says Hello promptly is never kept out by connections that do not.
// Whoever holds slots without a Hello has them taken back oldest first, so keeping a client out
// means opening more connections than the slots within that client's round trip (docs/network.md).
void Network::MakeHandshakeRoom(const std::string& address) {
  auto evict = [&](Peer& p, w::RefuseReason reason, std::string text) {
    ++stats_.half_open_evicted;
    Refuse(p, static_cast<std::uint8_t>(reason), text, 1);
  };
  const std::size_t per_address = std::max<std::size_t>(options_.max_half_open_per_address, 1);
  if (auto it = half_open_by_address_.find(address);
      it != half_open_by_address_.end() && it->second >= per_address) {
    for (Peer* p : half_open_) {
      if (p->address() == address) {
        evict(*p, w::RefuseReason::RateLimited,
              fmt::format("{} connections from {} are waiting to join "
                          "(net.max_half_open_per_address) and this one waited longest without "
                          "a hello; retry",
                          per_address, address));
        break;
      }
    }
  }
  const std::size_t total = std::max<std::size_t>(options_.max_half_open, 1);
  if (half_open_.size() >= total) {
    evict(*half_open_.front(), w::RefuseReason::ServerFull,
          fmt::format("{} connections are waiting to join (net.max_half_open) and this one "
                      "waited longest without a hello; retry",
                      total));
  }
}

void Network::LeaveHandshake(Peer& peer) {
  if (!peer.in_handshake_) {
    return;
  }
  peer.in_handshake_ = false;
  half_open_.erase(peer.waiting_);
  auto it = half_open_by_address_.find(peer.address());
  if (it != half_open_by_address_.end() && --it->second == 0) {
    half_open_by_address_.erase(it);
  }
}

void Network::LogRefusal(std::string_view reason, const std::string& address,
                         std::string_view text) {
  const TimePoint now = kernel_.scheduler().Now();
  auto it = refusal_log_.find(reason);
  if (it == refusal_log_.end()) {
    it = refusal_log_.emplace(std::string(reason), RefusalWindow()).first;
  }
  RefusalWindow& window = it->second;
  if (window.count == 0 && now >= window.quiet_until) {
    kNetLog.Warn("refused a connection from {} ({}): {}", address, reason, text);
    window.quiet_until = now + Seconds(options_.refusal_log_seconds);
    return;
  }
  ++window.count;
  window.address = address;
  window.text = text;
  ArmHousekeeping();  // it says how many when the interval ends
}

void Network::FlushRefusalLog(bool all) {
  const TimePoint now = kernel_.scheduler().Now();
  for (auto& [reason, window] : refusal_log_) {
    if (window.count > 0 && (all || now >= window.quiet_until)) {
      kNetLog.Warn(
          "refused {} more connection(s) ({}) within {} s (net.refusal_log_seconds); the "
          "latest from {}: {}",
          window.count, reason, options_.refusal_log_seconds, window.address, window.text);
      window.count = 0;
      window.quiet_until = now + Seconds(options_.refusal_log_seconds);
    }
  }
}

std::vector<std::uint8_t> Network::RefuseOverCapacity(const std::string& address,
                                                      std::string_view why) {
  ++stats_.connections_accepted;
  ++stats_.handshakes_refused;
  ++stats_.refused_no_descriptors;
  LogRefusal("OutOfDescriptors", address, why);
  fb::FlatBufferBuilder b(128);
  const std::span<const std::uint8_t> frame =
      RefuseFrame(b, w::RefuseReason::ServerFull, "the server is at capacity; retry", 5);
  stats_.bytes_out += frame.size();
  return {frame.begin(), frame.end()};
}

void Network::Fail(Peer& peer, std::string_view text) {
  End(peer, ExitReason::kTransportError, text);
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
    LeaveHandshake(peer);
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

Session* Network::Resumable(std::span<const std::uint8_t> token, std::string_view user) {
  if (token.empty() || options_.resume_window_seconds <= 0) {
    return nullptr;
  }
  // Detached sessions, and attached ones too: the old link may have died without the server
  // noticing yet (the client then takes its session over).
  for (SessionId id : sessions_.ActiveIds()) {
    Session* s = sessions_.Get(id);
    if (s == nullptr || s->user() != user || s->resume_token_.size() != token.size()) {
      continue;
    }
    unsigned char diff = 0;  // every byte compared: the time says nothing about the token
    for (std::size_t i = 0; i < token.size(); ++i) {
      diff |= static_cast<unsigned char>(s->resume_token_[i] ^ token[i]);
    }
    if (diff == 0) {
      return s;
    }
  }
  return nullptr;
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

void Network::End(Peer& peer, ExitReason reason, std::string_view text) {
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
    peer.Write(Finish(b, w::Body::Bye, bye.Union()));
  }
  if (reason != ExitReason::kClientClosed && reason != ExitReason::kServerShutdown) {
    if (id != 0) {
      kNetLog.Info("session {} ({}) ended: {}{}{}", id, peer.address(), ExitReasonName(reason),
                   text.empty() ? "" : ": ", text);
    } else if (!peer.refused_) {  // a handshake the server ended: rate-limited
      LogRefusal(ExitReasonName(reason), peer.address(), text);
    }
  }
  peer.Close(flush);
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

void Network::Refuse(Peer& peer, std::uint8_t reason, std::string_view text, double retry_after) {
  if (peer.closed_) {
    return;
  }
  ++stats_.handshakes_refused;
  peer.refused_ = true;
  LogRefusal(w::EnumNameRefuseReason(static_cast<w::RefuseReason>(reason)), peer.address(), text);
  fb::FlatBufferBuilder b(128);
  SendFrame(peer, RefuseFrame(b, static_cast<w::RefuseReason>(reason), text, retry_after));
  End(peer, ExitReason::kProtocolError, text);
}

// --- Inbound -----------------------------------------------------------------------------------

void Network::Receive(Peer& peer, std::span<const std::uint8_t> bytes) {
  if (peer.closed_ || bytes.empty()) {
    return;
  }
  const TimePoint started = RealNow();
  const TimePoint now = batch_now_ = kernel_.scheduler().Now();
  Sessions::Hold hold(sessions_);
  ChannelRegistry::Hold channels_hold(channels_);  // a handler may remove its own channel
  stats_.bytes_in += bytes.size();
  peer.last_receive_ = now;
  // 1. The byte budget, charged for what arrived before anything is decoded.
  if (!peer.bytes_.Take(now, static_cast<double>(bytes.size()))) {
    Flood(peer, bytes.size(), options_.bytes_per_tick);
  }
  // A frame's header was read: count it, charge the message budget, check the size cap.
  auto header = [&](std::uint32_t size) {
    ++stats_.frames_in;
    // 1. The message budget.
    if (!peer.messages_.Take(now)) {
      Flood(peer, bytes.size(), options_.bytes_per_tick);
      return false;
    }
    // 2. The frame size cap.
    if (size > options_.max_frame_bytes || size == 0) {
      ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kFrameTooLarge)];
      // A TLS record header (handshake, version 3.x) where a Hello belongs: say what happened.
      const bool tls = peer.session_ == 0 && (size & 0xffff) == 0x0316;
      End(peer, ExitReason::kProtocolError,
          size == 0 ? std::string("an empty frame")
          : tls     ? std::string("the client started a TLS handshake, but this server speaks "
                                      "plain TCP: give moltd --tls-cert and --tls-key, or connect "
                                      "without TLS")
                    : fmt::format("a frame of {} bytes exceeds the {}-byte cap "
                                      "(net.max_frame_bytes)",
                                  size, options_.max_frame_bytes));
      return false;
    }
    peer.frame_size_ = size;
    peer.have_header_ = true;
    return true;
  };
  const std::uint8_t* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0 && !peer.closed_) {
    if (!peer.have_header_) {
      const std::size_t take = std::min<std::size_t>(4 - peer.partial_.size(), left);
      peer.partial_.insert(peer.partial_.end(), p, p + take);
      p += take;
      left -= take;
      if (peer.partial_.size() < 4) {
        break;
      }
      std::uint32_t size = 0;
      std::memcpy(&size, peer.partial_.data(), 4);
      if (!header(size)) {
        break;
      }
    }
    // Frames go to Frame() with their 4-byte header (FlatBuffers' size-prefixed layout).
    const std::size_t whole = 4 + std::size_t{peer.frame_size_};
    if (peer.partial_.size() == 4 && left >= whole - 4 && p - bytes.data() >= 4) {
      peer.partial_.clear();  // zero-copy: the header sits just before p in this read
      peer.have_header_ = false;
      Frame(peer, std::span(p - 4, whole));
      p += whole - 4;
      left -= whole - 4;
      continue;
    }
    const std::size_t take = std::min<std::size_t>(whole - peer.partial_.size(), left);
    peer.partial_.insert(peer.partial_.end(), p, p + take);
    p += take;
    left -= take;
    if (peer.partial_.size() == whole) {
      std::vector<std::uint8_t> frame = std::move(peer.partial_);
      peer.partial_.clear();
      peer.have_header_ = false;
      Frame(peer, frame);
    }
  }
  kernel_.scheduler().ChargeExternal(RealNow() - started);
}

void Network::Flood(Peer& peer, std::size_t bytes, std::size_t budget) {
  if (peer.closed_) {
    return;
  }
  ++stats_.transport_floods;
  stats_.transport_flood_bytes += bytes;
  ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kFlood)];
  Value args[] = {Value::Handle(peer.session_), Value::Int(static_cast<std::int64_t>(bytes)),
                  Value::Int(static_cast<std::int64_t>(peer.partial_.size())),
                  Value::Int(static_cast<std::int64_t>(budget))};
  HookContext ctx{.args = args, .session = peer.session_};
  kernel_.hooks().Fire(flood_point_, ctx);
  kernel_.bus().Publish(flood_topic_, args);
  End(peer, ExitReason::kFlood,
      fmt::format("the transport budget ({} bytes and {} messages per tick) was exceeded",
                  options_.bytes_per_tick, options_.messages_per_tick));
}

void Network::Frame(Peer& peer, std::span<const std::uint8_t> frame) {
  // 3. Envelope verification: bounded, so a hostile nesting cannot run away. FlatBuffers reads
  // fields in place, so the frame (header included) is first put on an 8-byte boundary.
  frame = w::Aligned(frame, frame_scratch_);
  fb::Verifier verifier(frame.data(), frame.size(), w::EnvelopeVerifierOptions());
  const bool handshake = peer.session_ == 0;
  const w::Envelope* env = w::VerifySizePrefixedEnvelopeBuffer(verifier)
                               ? w::GetSizePrefixedEnvelope(frame.data())
                               : nullptr;
  // The verifier accepts a union type without its table: that is no message either.
  if (env == nullptr || env->body() == nullptr || env->body_type() == w::Body::NONE) {
    ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kBadEnvelope)];
    const std::string_view text =
        env == nullptr ? "the envelope failed verification" : "the envelope has no message";
    if (tap_.on()) {
      tap_.Find(Tap(true, "envelope", 0, nullptr, peer.session_, frame,
                    std::string(RejectName(Reject::kBadEnvelope))))
          ->detail = text;
    }
    if (handshake) {
      End(peer, ExitReason::kProtocolError, "the first frame is not a valid hello");
    } else {
      Offence(peer, nullptr, Reject::kBadEnvelope, 0, text, false);
    }
    return;
  }
  const w::Body type = env->body_type();
  if (handshake && type != w::Body::Hello) {
    ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kNoSession)];
    End(peer, ExitReason::kProtocolError, "expected a hello first");
    return;
  }
  switch (type) {
    case w::Body::Hello:
      if (!handshake) {
        ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kBadEnvelope)];
        Offence(peer, nullptr, Reject::kBadEnvelope, 0, "a second hello", false);
        return;
      }
      OnHello(peer, env->body_as_Hello());
      return;
    case w::Body::Intent: {
      const w::Intent* m = env->body_as_Intent();
      OnInbound(peer, false, m->channel(), 0, Bytes(m->payload()));
      return;
    }
    case w::Body::Request: {
      const w::Request* m = env->body_as_Request();
      OnInbound(peer, true, m->channel(), m->id(), Bytes(m->payload()));
      return;
    }
    case w::Body::Ping: {
      const w::Ping* m = env->body_as_Ping();
      fb::FlatBufferBuilder b(64);
      SendFrame(peer, Finish(b, w::Body::Pong, w::CreatePong(b, m->seq(), m->time_ns()).Union()));
      return;
    }
    case w::Body::Pong: {
      const w::Pong* m = env->body_as_Pong();
      const std::int64_t sent = static_cast<std::int64_t>(m->time_ns());
      const std::int64_t now = batch_now_.time_since_epoch().count();
      Session* s = sessions_.Get(peer.session_);
      if (s != nullptr && m->seq() == peer.ping_seq_ && sent > 0 && sent <= now) {
        s->last_rtt_ = Duration(now - sent);
        s->rtt_ = s->rtt_.count() == 0 ? s->last_rtt_ : (s->rtt_ * 7 + s->last_rtt_) / 8;
      }
      return;
    }
    case w::Body::Bye:
      End(peer, ExitReason::kClientClosed, "");
      return;
    default:
      ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kBadEnvelope)];
      Offence(peer, nullptr, Reject::kBadEnvelope, 0, "a server-only message", false);
      return;
  }
}

void Network::OnHello(Peer& peer, const void* raw) {
  const auto* hello = static_cast<const w::Hello*>(raw);
  auto refuse = [&](w::RefuseReason reason, std::string text, double retry = 0) {
    Refuse(peer, static_cast<std::uint8_t>(reason), text, retry);
  };
  if (hello->protocol_version() != w::kProtocolVersion) {
    return refuse(w::RefuseReason::ProtocolVersion,
                  fmt::format("protocol version {} is not supported: this server speaks {}",
                              hello->protocol_version(), w::kProtocolVersion));
  }
  const std::uint64_t hash = channels_.ProtocolHash();
  if (hello->protocol_hash() != 0 && hello->protocol_hash() != hash) {
    return refuse(w::RefuseReason::ProtocolHash,
                  fmt::format("the client's channel table (hash {:016x}) differs from the "
                              "server's ({:016x}): update the client",
                              hello->protocol_hash(), hash));
  }
  std::string user = hello->user() == nullptr ? std::string() : hello->user()->str();
  if (!ValidUserId(user)) {
    return refuse(w::RefuseReason::BadHello,
                  fmt::format("the user id must be 1..{} printable characters", kMaxUserId));
  }
  if (kernel_.shutting_down() || shut_down_ || closing_) {
    return refuse(w::RefuseReason::ShuttingDown, "the server is shutting down");
  }
  if (!serving_) {
    return refuse(w::RefuseReason::Starting,
                  "the server is starting: no plugin generation serves yet", 1);
  }
  const auto token = Bytes(hello->resume_token());
  Session* resume = Resumable(token, user);
  if (resume == nullptr && sessions_.count() >= options_.max_sessions) {
    return refuse(w::RefuseReason::ServerFull,
                  fmt::format("the server is full ({} sessions)", options_.max_sessions), 5);
  }
  const auto credentials = Bytes(hello->credentials());
  const auto join = Bytes(hello->join_data());
  if (kernel_.hooks().handler_count(auth_point_) > 0) {
    Value args[] = {
        Value::String(user),
        Value::Bytes(credentials.data(), static_cast<std::uint32_t>(credentials.size())),
        Value::Bytes(join.data(), static_cast<std::uint32_t>(join.size())),
        Value::String(peer.address())};
    HookContext ctx{.args = args};
    HookResult r = kernel_.hooks().Fire(auth_point_, ctx);
    if (!r.passed) {
      if (!r.error.empty()) {
        kNetLog.Warn("Auth.Hello threw for {} from {}: {}", user, peer.address(), r.error);
      }
      return refuse(w::RefuseReason::AuthFailed, "authentication failed");
    }
    // A validator may replace the claimed user id with the verified one.
    if (args[0].type == Value::kString && args[0].AsString() != user) {
      std::string verified(args[0].AsString());
      if (!ValidUserId(verified)) {
        return refuse(w::RefuseReason::AuthFailed, "authentication failed");
      }
      user = std::move(verified);
    }
  } else if (options_.auth == AuthMode::kProduction) {
    return refuse(w::RefuseReason::AuthFailed, "no authenticator is installed");
  }
  resume = Resumable(token, user);  // the token is only good for the user it was issued to
  if (resume == nullptr) {
    // The user is back without resuming (a restarted game): the session their lost link left
    // waiting will not be resumed. It ends now, so what it holds (a profile's lease) is free for
    // the new one instead of waiting out net.resume_window_seconds.
    for (SessionId id : std::vector<SessionId>(detached_)) {
      Session* old = sessions_.Get(id);
      if (old != nullptr && old->user() == user) {
        std::erase(detached_, id);
        ++stats_.resumes_superseded;
        sessions_.End(id, old->detach_reason_);
      }
    }
  }

  // A lost link's client comes back: the same session, its bindings and data intact, and what
  // was sent to it meanwhile.
  const bool resuming = resume != nullptr;
  Session& s = resuming ? *resume
                        : sessions_.Create(std::move(user),
                                           std::vector<std::uint8_t>(join.begin(), join.end()),
                                           peer.address(), kernel_.scheduler().Now());
  if (resuming && s.peer_ != nullptr) {  // take the session over from its old link
    Peer* old = s.peer_;
    Unlink(*old, ExitReason::kTransportError, /*resumable=*/true);
    old->Close(/*flush=*/false);
  }
  if (resuming) {
    std::erase(detached_, s.id());
    s.detached_ = false;
    ++stats_.resumes;
  }
  s.resume_token_ = NewResumeToken();
  LeaveHandshake(peer);
  peer.session_ = s.id();
  s.peer_ = &peer;

  fb::FlatBufferBuilder b(1024);
  const std::vector<fb::Offset<w::ChannelInfo>> infos = ChannelInfos(b, channels_);
  auto welcome = w::CreateWelcomeDirect(
      b, s.id(), hash, static_cast<float>(options_.tick_rate), &infos, options_.max_frame_bytes,
      options_.bytes_per_tick, options_.messages_per_tick, Millis(options_.ping_interval_seconds),
      &s.resume_token_, resuming, Millis(options_.resume_window_seconds),
      static_cast<float>(options_.budget_burst_ticks));
  SendFrame(peer, Finish(b, w::Body::Welcome, welcome.Union()));
  if (peer.closed_) {
    return;
  }
  if (resuming) {
    const std::vector<std::uint8_t> missed = std::exchange(s.outbox_, {});
    if (!missed.empty()) {
      SendFrame(peer, missed);
    }
    if (peer.closed_) {
      return;
    }
    replicas_.Resumed(s.id());
    Value args[] = {Value::Handle(s.id())};
    kernel_.bus().Publish(resumed_topic_, args);
    return;
  }
  sessions_.Announce(s);
}

void Network::OnInbound(Peer& peer, bool request, ChannelId id, std::uint32_t request_id,
                        std::span<const std::uint8_t> payload) {
  if (!tap_.on()) {
    Inbound(peer, request, id, request_id, payload);
    return;
  }
  const TimePoint started = RealNow();
  const std::uint64_t rejections = rejections_;
  const Channel* ch = channels_.Find(id);
  const std::uint64_t errors = ch != nullptr ? ch->counters().handler_errors : 0;
  // Recorded first, so it comes before the events and the response it causes.
  const std::uint64_t seq =
      Tap(true, request ? "request" : "intent", id, ch, peer.session_, payload, "");
  Inbound(peer, request, id, request_id, payload);
  WireFrame* done = tap_.Find(seq);
  if (done == nullptr) {
    return;  // pushed out by what the handler sent
  }
  done->took = RealNow() - started;
  if (rejections_ != rejections) {
    done->verdict = RejectName(last_reject_);
    done->detail = std::move(reject_text_);
  } else {
    done->verdict =
        ch != nullptr && ch->counters().handler_errors != errors ? "handler_error" : "accepted";
  }
}

void Network::Inbound(Peer& peer, bool request, ChannelId id, std::uint32_t request_id,
                      std::span<const std::uint8_t> payload) {
  // 4. Channel lookup.
  Channel* ch = channels_.Find(id);
  if (ch == nullptr || ch->kind() != (request ? ChannelKind::kRequest : ChannelKind::kIntent)) {
    return RejectMessage(
        peer, nullptr, Reject::kUnknownChannel, request, request_id, 0,
        fmt::format("no {} channel has id {}", request ? "request" : "intent", id));
  }
  // 5. A live session.
  Session* s = sessions_.Get(peer.session_);
  if (s == nullptr) {
    return RejectMessage(peer, ch, Reject::kNoSession, request, request_id, 0, "no live session");
  }
  // A request id still in flight: the first is being handled; this one is not, nor answered
  // (an answer would carry the same id and settle the client's first request).
  if (request && in_flight_.count({s->id(), request_id}) != 0) {
    return RejectMessage(
        peer, ch, Reject::kDuplicateRequest, request, request_id, 0,
        fmt::format("request id {} is still in flight on this session", request_id));
  }
  // 6. The channel's token bucket for this session.
  const TimePoint now = batch_now_;
  TokenBucket& bucket = s->Bucket(*ch, now);
  if (!bucket.Take(now)) {
    Value args[] = {Value::Handle(s->id()), Value::String(ch->name())};
    HookContext ctx{.args = args, .session = s->id()};
    kernel_.hooks().Fire(rate_limited_point_, ctx);
    kernel_.bus().Publish(rate_limited_topic_, args);
    return RejectMessage(
        peer, ch, Reject::kRateLimited, request, request_id, bucket.SecondsUntil(now),
        fmt::format("channel \"{}\" allows {} per second", ch->name(), ch->rate()));
  }
  // 7. The payload: the schema's verifier, then the declarative rules. Senders align payloads to
  // 8 bytes inside the frame; one that did not is copied, so plugins read aligned tables.
  payload = w::Aligned(payload, payload_scratch_);
  bool verified = false;
  try {
    verified = ch->spec().verify(payload);
  } catch (...) {
    verified = false;
  }
  if (!verified) {
    return RejectMessage(peer, ch, Reject::kBadPayload, request, request_id, 0,
                         fmt::format("the payload is not a valid {}", ch->spec().schema));
  }
  if (Status st = ch->CheckRules(payload); !st.ok()) {
    return RejectMessage(peer, ch, Reject::kRuleViolated, request, request_id, 0, st.message());
  }
  // 8. Fail-closed on absence: no validator and not Open rejects.
  Hooks& hooks = kernel_.hooks();
  const bool has_hooks = hooks.handler_count(ch->point()) > 0;
  if (!has_hooks && ch->spec().rules.empty() && !ch->spec().open) {
    if (ch->FirstUnguardedReject()) {
      kNetLog.Warn(
          "{} \"{}\" rejected a payload: it has no validator and is not Open, so it is "
          "fail-closed; add a validator (a {}.{} hook handler, or rules), or declare it Open",
          ChannelKindName(ch->kind()), ch->name(), request ? "Request" : "Intent", ch->name());
    }
    return RejectMessage(peer, ch, Reject::kUnguarded, request, request_id, 0,
                         "the channel has no validator");
  }
  // 9. The hook chain, fail-closed.
  Value args[] = {Value::Bytes(payload.data(), static_cast<std::uint32_t>(payload.size()))};
  if (has_hooks) {
    HookContext ctx{.args = args, .session = s->id()};
    HookResult r = hooks.Fire(ch->point(), ctx);
    if (!r.passed) {
      return RejectMessage(peer, ch, Reject::kHookRejected, request, request_id, 0,
                           r.error.empty() ? "a validator refused" : "a validator failed");
    }
  }
  // 10. The handler.
  ++ch->counters().accepted;
  if (!request) {
    ++stats_.intents_accepted;
    if (ch->spec().on_intent) {
      try {
        ch->spec().on_intent(*s, args);
      } catch (const std::exception& e) {
        ++ch->counters().handler_errors;
        kNetLog.Error("intent \"{}\" handler threw for session {}: {}", ch->name(), s->id(),
                      e.what());
      } catch (...) {
        ++ch->counters().handler_errors;
        kNetLog.Error("intent \"{}\" handler threw for session {}", ch->name(), s->id());
      }
    }
    Value topic_args[] = {Value::Handle(s->id()), args[0]};
    kernel_.bus().Publish(ch->topic(), topic_args);
    return;
  }
  ++stats_.requests_accepted;
  const RequestToken token = next_token_++;
  auto pending = std::make_unique<Pending>();
  pending->session = s->id();
  pending->wire_id = request_id;
  pending->channel = ch->id();
  pending->timeout = kernel_.scheduler().After(
      Seconds(ch->timeout_seconds()),
      [this, token] {
        auto it = pending_.find(token);
        if (it == pending_.end()) {
          return;
        }
        if (Channel* c = channels_.Find(it->second->channel)) {
          ++c->counters().timeouts;
        }
        it->second->timeout = TaskHandle();
        Reply(token, Status::Code::kTimedOut, {});
      },
      Priority::kKernel);
  in_flight_.emplace(s->id(), request_id);
  pending_.emplace(token, std::move(pending));
  if (!ch->spec().on_request) {
    Reply(token, Status::Code::kUnsupported, {});
    return;
  }
  try {
    ch->spec().on_request(*s, args, token);
  } catch (const std::exception& e) {
    ++ch->counters().handler_errors;
    kNetLog.Error("request \"{}\" handler threw for session {}: {}", ch->name(), s->id(), e.what());
    Reply(token, Status::Code::kInternal, {});
  } catch (...) {
    ++ch->counters().handler_errors;
    kNetLog.Error("request \"{}\" handler threw for session {}", ch->name(), s->id());
    Reply(token, Status::Code::kInternal, {});
  }
}

void Network::RejectMessage(Peer& peer, Channel* ch, Reject reason, bool request,
                            std::uint32_t request_id, double retry_after, std::string_view text) {
  const auto r = static_cast<std::size_t>(reason);
  last_reject_ = reason;
  ++rejections_;
  if (tap_.on()) {
    reject_text_ = text;
  }
  if (ch != nullptr) {
    ++ch->counters().rejected[r];
  } else {
    ++stats_.transport_rejected[r];
  }
  if (request) {
    ++stats_.requests_rejected;
  } else {
    ++stats_.intents_rejected;
    stats_.intents_rate_limited += reason == Reject::kRateLimited;
  }
  if (peer.session_ != 0) {
    Value args[] = {Value::Handle(peer.session_),
                    Value::String(ch != nullptr ? std::string_view(ch->name()) : ""),
                    Value::String(RejectName(reason))};
    kernel_.bus().Publish(rejected_topic_, args);
  }
  if (request && reason != Reject::kDuplicateRequest) {
    if (Session* s = sessions_.Get(peer.session_)) {
      const Status::Code code = reason == Reject::kRateLimited      ? Status::Code::kRateLimited
                                : reason == Reject::kUnknownChannel ? Status::Code::kNotFound
                                                                    : Status::Code::kRejected;
      std::span<const std::uint8_t> payload;
      if (ch != nullptr) {
        payload = ch->spec().reject_payload;
      }
      SendResponse(*s, ch != nullptr ? ch->id() : 0, request_id, code, payload, retry_after);
    }
  }
  Offence(peer, ch, reason, retry_after, text, request);
}

void Network::Offence(Peer& peer, Channel* ch, Reject reason, double retry_after,
                      std::string_view text, bool answered) {
  if (peer.closed_) {
    return;
  }
  const TimePoint now = batch_now_;
  if (now - peer.offender_window_start_ > Seconds(options_.offender_window_seconds)) {
    peer.offender_window_start_ = now;
    peer.offences_ = 0;
  }
  ++peer.offences_;
  if (peer.offences_ >= options_.offender_kick_after) {
    End(peer, ExitReason::kOffender,
        fmt::format("{} refused messages within {} s", peer.offences_,
                    options_.offender_window_seconds));
    return;
  }
  if (answered || peer.offences_ <= options_.offender_drop_first ||
      now - peer.last_error_frame_ < Seconds(options_.error_frame_gap_seconds)) {
    return;  // dropped
  }
  peer.last_error_frame_ = now;
  ++stats_.error_frames;
  fb::FlatBufferBuilder b(128);
  auto err =
      w::CreateErrorDirect(b, static_cast<w::RejectReason>(reason), ch != nullptr ? ch->id() : 0,
                           Millis(retry_after), std::string(text).c_str());
  SendFrame(peer, Finish(b, w::Body::Error, err.Union()));
}

// --- Outbound ----------------------------------------------------------------------------------

void Network::SendResponse(Session& session, ChannelId channel, std::uint32_t id,
                           Status::Code status, std::span<const std::uint8_t> payload,
                           double retry_after) {
  if (tap_.on()) {
    Tap(false, "response", channel, channels_.Find(channel), session.id(), payload,
        std::string(Status::CodeName(status)));
  }
  fb::FlatBufferBuilder b(64 + payload.size());
  auto bytes = w::PayloadVector(b, payload);
  auto resp =
      w::CreateResponse(b, id, static_cast<std::int32_t>(status), bytes, Millis(retry_after));
  SendTo(session, Finish(b, w::Body::Response, resp.Union()));
}

std::unique_ptr<Network::Pending> Network::TakePending(PendingMap::iterator it) {
  std::unique_ptr<Pending> p = std::move(it->second);
  pending_.erase(it);
  in_flight_.erase({p->session, p->wire_id});
  p->timeout.Cancel();
  return p;
}

Status Network::Reply(RequestToken token, Status::Code status,
                      std::span<const std::uint8_t> payload) {
  auto it = pending_.find(token);
  if (it == pending_.end()) {
    return Status::Stale("the request was already answered or timed out");
  }
  if (payload.size() + 64 > options_.max_frame_bytes) {
    return Status::InvalidArgument(fmt::format(
        "an answer of {} bytes does not fit a frame (net.max_frame_bytes = {}); the request "
        "is still open",
        payload.size(), options_.max_frame_bytes));
  }
  std::unique_ptr<Pending> p = TakePending(it);
  Session* s = sessions_.Get(p->session);
  if (s == nullptr) {
    return Status::Stale(fmt::format("session {} left before the answer", p->session));
  }
  SendResponse(*s, p->channel, p->wire_id, status, payload, 0);
  return Status();
}

std::size_t Network::RefusePending(ChannelId channel, Status::Code status, double retry_after) {
  std::vector<RequestToken> tokens;
  for (const auto& [token, p] : pending_) {
    if (p->channel == channel) {
      tokens.push_back(token);
    }
  }
  std::sort(tokens.begin(), tokens.end());  // in the order they came
  for (RequestToken token : tokens) {
    std::unique_ptr<Pending> p = TakePending(pending_.find(token));
    if (Session* s = sessions_.Get(p->session)) {
      SendResponse(*s, p->channel, p->wire_id, status, {}, retry_after);
    }
  }
  return tokens.size();
}

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
  auto frame = Finish(b, w::Body::Event, w::CreateEvent(b, channel, bytes).Union());
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

std::size_t Network::AnnounceChannels() {
  fb::FlatBufferBuilder b(1024);
  const std::vector<fb::Offset<w::ChannelInfo>> infos = ChannelInfos(b, channels_);
  const auto frame = Finish(b, w::Body::Channels,
                            w::CreateChannelsDirect(b, channels_.ProtocolHash(), &infos).Union());
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
      SendFrame(*p, Finish(b, w::Body::Ping, ping.Union()));
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
  FlushRefusalLog(/*all=*/false);
  const bool logging = std::any_of(refusal_log_.begin(), refusal_log_.end(),
                                   [](const auto& r) { return r.second.count > 0; });
  if (peers_.empty() && detached_.empty() && !logging && housekeeping_ != 0) {
    TaskHandle(&kernel_.scheduler(), housekeeping_).Cancel();
    housekeeping_ = 0;
  }
}

// --- Stats -------------------------------------------------------------------------------------

std::string Network::StatsJson() const {
  boost::json::object root;
  const NetStats& s = stats_;
  root["port"] = port();
  root["sessions"] = sessions_.count();
  root["half_open"] = half_open_.size();
  root["connections_accepted"] = s.connections_accepted;
  root["half_open_evicted"] = s.half_open_evicted;
  root["refused_handshake_rate"] = s.refused_handshake_rate;
  root["handshake_timeouts"] = s.handshake_timeouts;
  root["handshakes_refused"] = s.handshakes_refused;
  root["refused_no_descriptors"] = s.refused_no_descriptors;
  root["transport_floods"] = s.transport_floods;
  root["transport_flood_bytes"] = s.transport_flood_bytes;
  root["slow_readers"] = s.slow_readers;
  root["bytes_in"] = s.bytes_in;
  root["bytes_out"] = s.bytes_out;
  root["frames_in"] = s.frames_in;
  root["error_frames"] = s.error_frames;
  root["sessions_waiting_resume"] = detached_.size();
  root["links_lost"] = s.links_lost;
  root["resumes"] = s.resumes;
  root["resumes_expired"] = s.resumes_expired;
  root["resumes_superseded"] = s.resumes_superseded;
  root["intents_accepted"] = s.intents_accepted;
  root["intents_rejected"] = s.intents_rejected;
  root["intents_rate_limited"] = s.intents_rate_limited;
  root["requests_accepted"] = s.requests_accepted;
  root["requests_rejected"] = s.requests_rejected;
  const ReplicaStats r = replicas_.stats();
  root["replicas"] = {{"live", r.live},
                      {"snapshots_sent", r.snapshots_sent},
                      {"deltas_sent", r.deltas_sent},
                      {"removes_sent", r.removes_sent},
                      {"bytes_sent", r.bytes_sent}};
  auto reasons = [](const std::array<std::uint64_t, kRejectCount>& counts) {
    boost::json::object o;
    for (std::size_t i = 0; i < kRejectCount; ++i) {
      if (counts[i] != 0) {
        o[RejectName(static_cast<Reject>(i))] = counts[i];
      }
    }
    return o;
  };
  root["transport_rejected"] = reasons(s.transport_rejected);
  boost::json::object dropped;  // handshakes that ended without a Welcome or a Refuse
  for (std::size_t i = 0; i < kExitReasonCount; ++i) {
    if (s.handshakes_dropped[i] != 0) {
      dropped[ExitReasonName(static_cast<ExitReason>(i))] = s.handshakes_dropped[i];
    }
  }
  root["handshakes_dropped"] = std::move(dropped);
  boost::json::object channels;
  for (const Channel* ch : channels_.List()) {
    const ChannelCounters& c = ch->counters();
    boost::json::object o;
    o["id"] = ch->id();
    o["kind"] = ChannelKindName(ch->kind());
    o["accepted"] = c.accepted;
    o["rejected"] = c.rejected_total();
    o["rate_limited"] = c.rejected[static_cast<std::size_t>(Reject::kRateLimited)];
    o["rejected_by_reason"] = reasons(c.rejected);
    o["handler_errors"] = c.handler_errors;
    o["events_sent"] = c.events_sent;
    o["timeouts"] = c.timeouts;
    channels[ch->name()] = std::move(o);
  }
  root["channels"] = std::move(channels);
  return boost::json::serialize(root);
}

}  // namespace molt::kernel::net
