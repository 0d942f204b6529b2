// SPDX-License-Identifier: Apache-2.0
// InboundPipeline (inbound_pipeline.h, steps 1-10): bytes from a connection, cut into frames
// under the transport budgets, each frame verified, routed, rate-limited, validated and handed to
// its channel's handler; every rejection counted per channel and reason, answered when it was a
// request, and charged to the connection's offences.
#include "kernel/src/net/inbound_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>

#include "kernel/src/core/kernel.h"
#include "kernel/src/net/datagram_links.h"
#include "kernel/src/net/front_door.h"
#include "kernel/src/net/link.h"
#include "kernel/src/net/link_table.h"
#include "kernel/src/net/net_governor.h"
#include "kernel/src/net/net_log.h"
#include "kernel/src/net/peer.h"
#include "kernel/src/net/requests.h"
#include "kernel/src/net/wire_tap.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::net {
namespace {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

// The envelope of a frame (aligned, size prefix included), or null when it fails verification.
// FlatBuffers' verifier is a tree of small functions (a table's start, each field, each offset)
// that -O2 leaves as calls; flattened into this one function, the whole pipeline runs a fifth
// fewer instructions per frame (docs/benchmarks.md, "Network").
[[gnu::flatten]] const w::Envelope* VerifiedEnvelope(std::span<const std::uint8_t> frame) {
  fb::Verifier verifier(frame.data(), frame.size(), w::EnvelopeVerifierOptions());
  return w::VerifySizePrefixedEnvelopeBuffer(verifier) ? w::GetSizePrefixedEnvelope(frame.data())
                                                       : nullptr;
}

}  // namespace

InboundPipeline::InboundPipeline(Kernel& kernel, const NetOptions& options, NetStats& stats,
                                 ChannelRegistry& channels, Sessions& sessions, LinkTable& links,
                                 FrontDoor& front_door, PendingRequests& requests, WireTap& tap,
                                 DatagramLinks& datagrams, NetGovernor& governor)
    : kernel_(kernel),
      options_(options),
      stats_(stats),
      channels_(channels),
      sessions_(sessions),
      links_(links),
      front_door_(front_door),
      requests_(requests),
      tap_(tap),
      datagrams_(datagrams),
      governor_(governor),
      rate_limited_point_(kernel.hooks().Define("Net.RateLimited", Hooks::Mode::kFailOpen)),
      flood_point_(kernel.hooks().Define("Net.FloodDetected", Hooks::Mode::kFailOpen)),
      rate_limited_topic_(kernel.bus().Resolve("Net.RateLimited")),
      flood_topic_(kernel.bus().Resolve("Net.FloodDetected")),
      rejected_topic_(kernel.bus().Resolve("Net.IntentRejected")) {}

void InboundPipeline::Open(Link& link, TimePoint now) const {
  const double tick = std::max(options_.tick_rate, 1.0);
  link.bytes = TokenBucket(options_.bytes_per_tick * tick,
                           options_.bytes_per_tick * options_.budget_burst_ticks, now);
  link.messages = TokenBucket(options_.messages_per_tick * tick,
                              options_.messages_per_tick * options_.budget_burst_ticks, now);
  link.offender_window_start = now;
}

void InboundPipeline::Receive(Peer& peer, std::span<const std::uint8_t> bytes) {
  Link& link = peer.link();
  if (link.closed || bytes.empty()) {
    return;
  }
  const TimePoint started = RealNow();
  const TimePoint now = batch_now_ = kernel_.scheduler().Now();
  Sessions::Hold hold(sessions_);
  ChannelRegistry::Hold channels_hold(channels_);  // a handler may remove its own channel
  stats_.bytes_in += bytes.size();
  link.last_receive = now;
  // 1. The byte budget, charged for what arrived before anything is decoded.
  if (!link.bytes.Take(now, static_cast<double>(bytes.size()))) {
    Flood(peer, bytes.size(), options_.bytes_per_tick);
  }
  // A frame's header was read: count it, charge the message budget, check the size cap. Inlined:
  // it runs for every frame.
  auto header = [&](std::uint32_t size) __attribute__((always_inline)) {
    ++stats_.frames_in;
    // 1. The message budget.
    if (!link.messages.Take(now)) {
      Flood(peer, bytes.size(), options_.bytes_per_tick);
      return false;
    }
    // 2. The frame size cap.
    if (size > options_.max_frame_bytes || size == 0) {
      ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kFrameTooLarge)];
      // A TLS record header (handshake, version 3.x) where a Hello belongs: say what happened.
      const bool tls = link.session == 0 && (size & 0xffff) == 0x0316;
      links_.End(peer, ExitReason::kProtocolError,
                 size == 0 ? std::string("an empty frame")
                 : tls     ? std::string("the client started a TLS handshake, but this server "
                                             "speaks plain TCP: give moltd --tls-cert and "
                                             "--tls-key, or connect without TLS")
                           : fmt::format("a frame of {} bytes exceeds the {}-byte cap "
                                             "(net.max_frame_bytes)",
                                         size, options_.max_frame_bytes));
      return false;
    }
    link.frame_size = size;
    link.have_header = true;
    return true;
  };
  const std::uint8_t* p = bytes.data();
  std::size_t left = bytes.size();
  // Frames go to Frame() with their 4-byte header (FlatBuffers' size-prefixed layout).
  while (left > 0 && !link.closed) {
    if (!link.have_header) {
      std::uint32_t size = 0;
      if (link.partial.empty() && left >= 4) {
        // The common case: the header is whole in this read, and often its frame too, which
        // then goes to Frame() in place, copied nowhere.
        std::memcpy(&size, p, 4);
        if (!header(size)) {
          break;
        }
        const std::size_t whole = 4 + std::size_t{size};
        if (left >= whole) {
          link.have_header = false;
          Frame(peer, std::span(p, whole));
          p += whole;
          left -= whole;
          continue;
        }
        link.partial.assign(p, p + 4);  // the rest comes in later reads
        p += 4;
        left -= 4;
      } else {
        const std::size_t take = std::min<std::size_t>(4 - link.partial.size(), left);
        link.partial.insert(link.partial.end(), p, p + take);
        p += take;
        left -= take;
        if (link.partial.size() < 4) {
          break;
        }
        std::memcpy(&size, link.partial.data(), 4);
        if (!header(size)) {
          break;
        }
      }
    }
    const std::size_t whole = 4 + std::size_t{link.frame_size};
    const std::size_t take = std::min<std::size_t>(whole - link.partial.size(), left);
    link.partial.insert(link.partial.end(), p, p + take);
    p += take;
    left -= take;
    if (link.partial.size() == whole) {
      std::vector<std::uint8_t> frame = std::move(link.partial);
      link.partial.clear();
      link.have_header = false;
      Frame(peer, frame);
    }
  }
  if (acks_due_) [[unlikely]] {
    SendAcks(peer);
  }
  kernel_.scheduler().ChargeExternal(RealNow() - started);
}

void InboundPipeline::ReceiveFrame(Peer& peer, std::span<const std::uint8_t> frame) {
  Link& link = peer.link();
  if (link.closed || frame.empty()) {
    return;
  }
  const TimePoint started = RealNow();
  const TimePoint now = batch_now_ = kernel_.scheduler().Now();
  Sessions::Hold hold(sessions_);
  ChannelRegistry::Hold channels_hold(channels_);
  stats_.bytes_in += frame.size();
  ++stats_.frames_in;
  link.last_receive = now;
  // 1. Both budgets of the link, as for a frame that came over it.
  if (!link.bytes.Take(now, static_cast<double>(frame.size())) || !link.messages.Take(now)) {
    Flood(peer, frame.size(), options_.bytes_per_tick);
  } else {
    // 2. One whole frame, its length prefix true: a datagram carries nothing else.
    std::uint32_t size = 0;
    if (frame.size() >= 4) {
      std::memcpy(&size, frame.data(), 4);
    }
    if (frame.size() < 4 || size == 0 || size != frame.size() - 4 ||
        size > options_.max_frame_bytes) {
      ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kBadEnvelope)];
    } else {
      Frame(peer, frame);
      if (acks_due_) {  // sent once the datagrams read with this one are handled too
        acks_due_ = false;
        if (std::find(datagram_acks_.begin(), datagram_acks_.end(), link.session) ==
            datagram_acks_.end()) {
          datagram_acks_.push_back(link.session);
        }
      }
    }
  }
  kernel_.scheduler().ChargeExternal(RealNow() - started);
}

void InboundPipeline::SendDatagramAcks() {
  via_datagram_ = true;
  for (SessionId id : datagram_acks_) {
    if (Session* s = sessions_.Get(id); s != nullptr && s->peer() != nullptr) {
      SendAcks(*s->peer());
    }
  }
  via_datagram_ = false;
  datagram_acks_.clear();
}

void InboundPipeline::SendAcks(Peer& peer) {
  acks_due_ = false;
  Session* s = sessions_.Get(peer.link().session);
  if (s == nullptr || (s->accepted_.empty() && s->rejected_.empty())) {
    return;
  }
  fb::FlatBufferBuilder b(64 + 4 * (s->accepted_.size() + s->rejected_.size()));
  const auto acks = w::CreateAcksDirect(b, &s->accepted_, &s->rejected_);
  const std::span<const std::uint8_t> frame = w::FinishFrame(b, w::Body::Acks, acks.Union());
  // By the link the intents came over: a client whose datagram link broke still hears them.
  if (!via_datagram_ || !datagrams_.Send(s->id(), frame, DatagramTransport::Channel::kReliable)) {
    links_.SendTo(*s, frame);
  }
  s->accepted_.clear();
  s->rejected_.clear();
}

void InboundPipeline::Flood(Peer& peer, std::size_t bytes, std::size_t budget) {
  const Link& link = peer.link();
  if (link.closed) {
    return;
  }
  ++stats_.transport_floods;
  stats_.transport_flood_bytes += bytes;
  ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kFlood)];
  Value args[] = {Value::Handle(link.session), Value::Int(static_cast<std::int64_t>(bytes)),
                  Value::Int(static_cast<std::int64_t>(link.partial.size())),
                  Value::Int(static_cast<std::int64_t>(budget))};
  HookContext ctx{.args = args, .session = link.session};
  kernel_.hooks().Fire(flood_point_, ctx);
  kernel_.bus().Publish(flood_topic_, args);
  links_.End(peer, ExitReason::kFlood,
             fmt::format("the transport budget ({} bytes and {} messages per tick) was exceeded",
                         options_.bytes_per_tick, options_.messages_per_tick));
}

void InboundPipeline::Frame(Peer& peer, std::span<const std::uint8_t> frame) {
  // 3. Envelope verification: bounded, so a hostile nesting cannot run away. FlatBuffers reads
  // fields in place, so the frame (header included) is first put on an 8-byte boundary.
  frame = w::Aligned(frame, frame_scratch_);
  const SessionId session = peer.link().session;
  const bool handshake = session == 0;
  const w::Envelope* env = VerifiedEnvelope(frame);
  // The verifier accepts a union type without its table: that is no message either. The body is
  // read once and cast below (body_as_X would read it again).
  const void* body = env != nullptr ? env->body() : nullptr;
  if (body == nullptr || env->body_type() == w::Body::NONE) {
    ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kBadEnvelope)];
    const std::string_view text =
        env == nullptr ? "the envelope failed verification" : "the envelope has no message";
    if (tap_.on()) {
      tap_.Find(tap_.Note(true, "envelope", 0, "", session, frame,
                          std::string(RejectName(Reject::kBadEnvelope))))
          ->detail = text;
    }
    if (handshake) {
      links_.End(peer, ExitReason::kProtocolError, "the first frame is not a valid hello");
    } else {
      Offence(peer, nullptr, Reject::kBadEnvelope, 0, text, false);
    }
    return;
  }
  const w::Body type = env->body_type();
  if (handshake && type != w::Body::Hello) {
    ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kNoSession)];
    links_.End(peer, ExitReason::kProtocolError, "expected a hello first");
    return;
  }
  switch (type) {
    case w::Body::Hello:
      if (!handshake) {
        ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kBadEnvelope)];
        Offence(peer, nullptr, Reject::kBadEnvelope, 0, "a second hello", false);
        return;
      }
      front_door_.OnHello(peer, *static_cast<const w::Hello*>(body));
      return;
    case w::Body::Intent: {
      const auto* m = static_cast<const w::Intent*>(body);
      intent_ = m;  // its seq is read only on a channel whose messages carry one
      OnInbound(peer, false, m->channel(), 0, w::BytesOf(m->payload()));
      return;
    }
    case w::Body::Request: {
      const auto* m = static_cast<const w::Request*>(body);
      OnInbound(peer, true, m->channel(), m->id(), w::BytesOf(m->payload()));
      return;
    }
    case w::Body::Ping: {
      const auto* m = static_cast<const w::Ping*>(body);
      fb::FlatBufferBuilder b(64);
      links_.SendFrame(
          peer, w::FinishFrame(b, w::Body::Pong, w::CreatePong(b, m->seq(), m->time_ns()).Union()));
      return;
    }
    case w::Body::Pong: {
      const auto* m = static_cast<const w::Pong*>(body);
      OnPong(peer, m->seq(), m->time_ns());
      return;
    }
    case w::Body::Device:  // the client's device quality changed (2.7)
      if (Session* s = sessions_.Get(peer.link().session)) {
        s->grade_.SayDevice(static_cast<const w::Device*>(body)->quality());
      }
      return;
    case w::Body::Bye:
      links_.End(peer, ExitReason::kClientClosed, "");
      return;
    default:
      ++stats_.transport_rejected[static_cast<std::size_t>(Reject::kBadEnvelope)];
      Offence(peer, nullptr, Reject::kBadEnvelope, 0, "a server-only message", false);
      return;
  }
}

void InboundPipeline::OnPong(Peer& peer, std::uint32_t seq, std::uint64_t time_ns) {
  const std::int64_t sent = static_cast<std::int64_t>(time_ns);
  const std::int64_t now = batch_now_.time_since_epoch().count();
  Session* s = sessions_.Get(peer.link().session);
  if (s != nullptr && seq == peer.link().ping_seq && sent > 0 && sent <= now) {
    s->last_rtt_ = Duration(now - sent);
    s->rtt_ = s->rtt_.count() == 0 ? s->last_rtt_ : (s->rtt_ * 7 + s->last_rtt_) / 8;
    governor_.Answered(*s, s->last_rtt_);
  }
}

void InboundPipeline::OnInbound(Peer& peer, bool request, ChannelId channel,
                                std::uint32_t request_id, std::span<const std::uint8_t> payload) {
  if (tap_.on()) {
    InboundTapped(peer, request, channel, request_id, payload);
  } else {
    Inbound(peer, request, channel, request_id, payload);
  }
}

void InboundPipeline::InboundTapped(Peer& peer, bool request, ChannelId id,
                                    std::uint32_t request_id,
                                    std::span<const std::uint8_t> payload) {
  const TimePoint started = RealNow();
  const std::uint64_t rejections = rejections_;
  const Channel* ch = channels_.Find(id);
  const std::uint64_t errors = ch != nullptr ? ch->counters().handler_errors : 0;
  const std::uint64_t stale = ch != nullptr ? ch->counters().stale : 0;
  // Recorded first, so it comes before the events and the response it causes.
  const std::uint64_t seq = tap_.Note(true, request ? "request" : "intent", id,
                                      ch != nullptr ? std::string_view(ch->name()) : "",
                                      peer.link().session, payload, "");
  Inbound(peer, request, id, request_id, payload);
  WireFrame* done = tap_.Find(seq);
  if (done == nullptr) {
    return;  // pushed out by what the handler sent
  }
  done->took = RealNow() - started;
  if (rejections_ != rejections) {
    done->verdict = RejectName(last_reject_);
    done->detail = std::move(reject_text_);
  } else if (ch != nullptr && ch->counters().stale != stale) {
    done->verdict = "stale";  // latest-wins: older than the newest taken
  } else {
    done->verdict =
        ch != nullptr && ch->counters().handler_errors != errors ? "handler_error" : "accepted";
  }
}

void InboundPipeline::Inbound(Peer& peer, bool request, ChannelId id, std::uint32_t request_id,
                              std::span<const std::uint8_t> payload) {
  // 4. Channel lookup.
  Channel* ch = channels_.Find(id);
  if (ch == nullptr || (request ? ch->kind() != ChannelKind::kRequest : !ch->takes_intents()))
      [[unlikely]] {
    return RejectMessage(
        peer, nullptr, Reject::kUnknownChannel, request, request_id, 0,
        fmt::format("no {} channel has id {}", request ? "request" : "intent", id));
  }
  // 5. A live session.
  Session* s = sessions_.Get(peer.link().session);
  if (s == nullptr) {
    return RejectMessage(peer, ch, Reject::kNoSession, request, request_id, 0, "no live session");
  }
  // A request id still in flight: the first is being handled; this one is not, nor answered
  // (an answer would carry the same id and settle the client's first request).
  if (request && requests_.InFlight(s->id(), request_id)) {
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
  bool has_hooks = false;
  if (!Validate(peer, *ch, request, request_id, &payload, &has_hooks)) {
    return;
  }
  // 9. The hook chain, fail-closed. Its handlers see (and may change) what the handler gets.
  Value args[] = {Value::Bytes(payload.data(), static_cast<std::uint32_t>(payload.size()))};
  if (has_hooks) {
    HookContext ctx{.args = args, .session = s->id()};
    HookResult r = kernel_.hooks().Fire(ch->point(), ctx);
    if (!r.passed) {
      return RejectMessage(peer, ch, Reject::kHookRejected, request, request_id, 0,
                           r.error.empty() ? "a validator refused" : "a validator failed");
    }
  }
  // 10. The handler.
  if (ch->sequenced()) [[unlikely]] {
    return HandleSequenced(peer, *s, *ch, args);
  }
  ++ch->counters().accepted;
  if (!request) {
    ++stats_.intents_accepted;
    HandleIntent(*s, *ch, args);
    return;
  }
  ++stats_.requests_accepted;
  requests_.Open(*s, *ch, request_id, args);
}

// Validate() and HandleIntent() are steps of Inbound(), named apart for the reader: inlined into
// it, so the pipeline runs the instructions it ran as one function (docs/benchmarks.md, "Network").
[[gnu::always_inline]] inline bool InboundPipeline::Validate(Peer& peer, Channel& ch, bool request,
                                                             std::uint32_t request_id,
                                                             std::span<const std::uint8_t>* payload,
                                                             bool* has_hooks) {
  // 7. The payload: the schema's verifier, then the declarative rules. Senders align payloads to
  // 8 bytes inside the frame; one that did not is copied, so plugins read aligned tables.
  *payload = w::Aligned(*payload, payload_scratch_);
  bool verified = false;
  try {
    verified = ch.spec().verify(*payload);
  } catch (...) {
    verified = false;
  }
  if (!verified) {
    RejectMessage(peer, &ch, Reject::kBadPayload, request, request_id, 0,
                  fmt::format("the payload is not a valid {}", ch.spec().schema));
    return false;
  }
  if (!ch.RulesHold(*payload)) [[unlikely]] {
    RejectMessage(peer, &ch, Reject::kRuleViolated, request, request_id, 0,
                  ch.CheckRules(*payload).message());
    return false;
  }
  // 8. Fail-closed on absence: no validator and not Open rejects.
  *has_hooks = kernel_.hooks().handler_count(ch.point()) > 0;
  if (!*has_hooks && ch.spec().rules.empty() && !ch.spec().open) {
    if (ch.FirstUnguardedReject()) {
      kNetLog.Warn(
          "{} \"{}\" rejected a payload: it has no validator and is not Open, so it is "
          "fail-closed; add a validator (a {}.{} hook handler, or rules), or declare it Open",
          ChannelKindName(ch.kind()), ch.name(), request ? "Request" : "Intent", ch.name());
    }
    RejectMessage(peer, &ch, Reject::kUnguarded, request, request_id, 0,
                  "the channel has no validator");
    return false;
  }
  return true;
}

[[gnu::always_inline]] inline void InboundPipeline::HandleIntent(Session& s, Channel& ch,
                                                                 std::span<Value> args) {
  if (ch.spec().on_intent) {
    try {
      ch.spec().on_intent(s, args);
    } catch (const std::exception& e) {
      ++ch.counters().handler_errors;
      kNetLog.Error("intent \"{}\" handler threw for session {}: {}", ch.name(), s.id(), e.what());
    } catch (...) {
      ++ch.counters().handler_errors;
      kNetLog.Error("intent \"{}\" handler threw for session {}", ch.name(), s.id());
    }
  }
  Value topic_args[] = {Value::Handle(s.id()), args[0]};
  kernel_.bus().Publish(ch.topic(), topic_args);
}

void InboundPipeline::HandleSequenced(Peer& peer, Session& s, Channel& ch, std::span<Value> args) {
  const std::uint32_t seq = intent_->seq();
  if (ch.kind() == ChannelKind::kUnreliable && args[0].size > kMaxUnreliablePayload) {
    return RejectMessage(peer, &ch, Reject::kBadPayload, false, 0, 0,
                         fmt::format("an unreliable payload of {} bytes exceeds the {}-byte cap",
                                     args[0].size, kMaxUnreliablePayload));
  }
  // Latest-wins drops what is older than the newest taken: no offence, the network reordered it.
  if (ch.spec().latest_wins && ch.kind() == ChannelKind::kUnreliable && !s.TakeNewest(ch, seq)) {
    ++ch.counters().stale;
    return;
  }
  if (ch.kind() != ChannelKind::kPredicted) {
    ++ch.counters().accepted;
    ++stats_.intents_accepted;
    return HandleIntent(s, ch, args);
  }
  // A predicted intent is taken when its handler returns without an error. A handler that
  // refuses it (a game rule) rejects it as a validator would: not a handler error.
  bool taken = true;
  if (ch.spec().on_intent) {
    try {
      ch.spec().on_intent(s, args);
    } catch (const HandlerRefused& r) {
      return RejectMessage(peer, &ch, Reject::kRefused, false, 0, 0, r.reason);
    } catch (const std::exception& e) {
      taken = false;
      ++ch.counters().handler_errors;
      kNetLog.Error("intent \"{}\" handler threw for session {}: {}", ch.name(), s.id(), e.what());
    } catch (...) {
      taken = false;
      ++ch.counters().handler_errors;
      kNetLog.Error("intent \"{}\" handler threw for session {}", ch.name(), s.id());
    }
  }
  ++ch.counters().accepted;
  ++stats_.intents_accepted;
  (taken ? s.accepted_ : s.rejected_).push_back(seq);
  acks_due_ = true;
  if (taken) {
    Value topic_args[] = {Value::Handle(s.id()), args[0]};
    kernel_.bus().Publish(ch.topic(), topic_args);
  }
}

void InboundPipeline::RejectMessage(Peer& peer, Channel* ch, Reject reason, bool request,
                                    std::uint32_t request_id, double retry_after,
                                    std::string_view text) {
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
  const SessionId session = peer.link().session;
  if (session != 0) {
    Value args[] = {Value::Handle(session),
                    Value::String(ch != nullptr ? std::string_view(ch->name()) : ""),
                    Value::String(RejectName(reason))};
    kernel_.bus().Publish(rejected_topic_, args);
  }
  if (ch != nullptr && ch->kind() == ChannelKind::kPredicted && !request) {
    if (Session* s = sessions_.Get(session)) {
      s->rejected_.push_back(intent_->seq());  // the client rolls it back
      acks_due_ = true;
    }
  }
  if (request && reason != Reject::kDuplicateRequest) {
    if (Session* s = sessions_.Get(peer.link().session)) {
      const Status::Code code = reason == Reject::kRateLimited      ? Status::Code::kRateLimited
                                : reason == Reject::kUnknownChannel ? Status::Code::kNotFound
                                                                    : Status::Code::kRejected;
      std::span<const std::uint8_t> payload;
      if (ch != nullptr) {
        payload = ch->spec().reject_payload;
      }
      requests_.Answer(*s, ch != nullptr ? ch->id() : 0, request_id, code, payload, retry_after);
    }
  }
  Offence(peer, ch, reason, retry_after, text, request);
}

void InboundPipeline::Offence(Peer& peer, Channel* ch, Reject reason, double retry_after,
                              std::string_view text, bool answered) {
  Link& link = peer.link();
  if (link.closed) {
    return;
  }
  const TimePoint now = batch_now_;
  if (now - link.offender_window_start > Seconds(options_.offender_window_seconds)) {
    link.offender_window_start = now;
    link.offences = 0;
  }
  ++link.offences;
  if (link.offences >= options_.offender_kick_after) {
    links_.End(peer, ExitReason::kOffender,
               fmt::format("{} refused messages within {} s", link.offences,
                           options_.offender_window_seconds));
    return;
  }
  if (answered || link.offences <= options_.offender_drop_first ||
      now - link.last_error_frame < Seconds(options_.error_frame_gap_seconds)) {
    return;  // dropped
  }
  link.last_error_frame = now;
  ++stats_.error_frames;
  fb::FlatBufferBuilder b(128);
  auto err =
      w::CreateErrorDirect(b, static_cast<w::RejectReason>(reason), ch != nullptr ? ch->id() : 0,
                           w::Millis(retry_after), std::string(text).c_str());
  links_.SendFrame(peer, w::FinishFrame(b, w::Body::Error, err.Union()));
}

}  // namespace molt::kernel::net
