// SPDX-License-Identifier: Apache-2.0
// Connection: what the server sends (connection.h): each frame verified and handled (Welcome,
// Refuse, Bye, events, responses, pings, Error, a changed channel table, replica messages).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernel/src/client/client_kernel.h"
#include "kernel/src/client/connection.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::client {
namespace {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

// A Welcome's or a Channels frame's table as a list (none when absent).
std::vector<const w::ChannelInfo*> List(const fb::Vector<fb::Offset<w::ChannelInfo>>* infos) {
  if (infos == nullptr) {
    return {};
  }
  return {infos->begin(), infos->end()};
}

}  // namespace

void Connection::OnFrame(std::span<const std::uint8_t> frame) {
  frame = w::Aligned(frame, frame_scratch_);
  fb::Verifier v(frame.data(), frame.size(), w::ServerEnvelopeVerifierOptions());
  const w::Envelope* env =
      w::VerifySizePrefixedEnvelopeBuffer(v) ? w::GetSizePrefixedEnvelope(frame.data()) : nullptr;
  if (env == nullptr || env->body() == nullptr) {
    return Closed("the server sent a malformed frame");
  }
  auto bytes = [this](const fb::Vector<std::uint8_t>* p) {
    return p == nullptr ? std::span<const std::uint8_t>()
                        : w::Aligned(std::span(p->data(), p->size()), payload_scratch_);
  };
  switch (env->body_type()) {
    case w::Body::Welcome:
      return OnWelcome(*env->body_as_Welcome());
    case w::Body::Refuse: {
      const w::Refuse* r = env->body_as_Refuse();
      const std::string why = std::string(w::EnumNameRefuseReason(r->reason())) + ": " +
                              (r->text() ? r->text()->str() : "");
      const bool passing = r->reason() == w::RefuseReason::RateLimited ||
                           r->reason() == w::RefuseReason::ServerFull ||
                           r->reason() == w::RefuseReason::ShuttingDown ||
                           r->reason() == w::RefuseReason::Starting;
      if (state_ == MOLT_CLIENT_RECONNECTING && passing) {
        // A busy server is not the end of a session being resumed: try again later.
        backoff_ = std::max(backoff_, r->retry_after_ms() / 1000.0);
        return Lost(why);
      }
      return Closed(why);
    }
    case w::Body::Bye: {
      const w::Bye* m = env->body_as_Bye();
      if (redirect_) {
        return FollowRedirect();
      }
      return Closed((m->reason() ? m->reason()->str() : "Bye") + ": " +
                    (m->text() ? m->text()->str() : ""));
    }
    case w::Body::Redirect:
      return OnRedirect(*env->body_as_Redirect());
    case w::Body::Event: {
      const w::Event* e = env->body_as_Event();
      const std::span<const std::uint8_t> payload = bytes(e->payload());
      auto h = handlers_.find(e->channel());
      const Handler handler = h != handlers_.end() ? h->second : all_channels_;
      const std::uint64_t link = link_;
      if (handler.fn != nullptr) {
        handler.fn(handler.user_data, e->channel(), payload.data(), payload.size());
      }
      if (kernel_ && link == link_) {  // the controllers' Bus
        if (auto ch = channels_.find(e->channel()); ch != channels_.end()) {
          kernel_->Event(e->channel(), ch->second.name, payload);
        }
      }
      return;
    }
    case w::Body::Response: {
      const w::Response* r = env->body_as_Response();
      auto it = pending_.find(r->id());
      if (it == pending_.end()) {
        return;  // answered late, after our own timeout
      }
      Pending p = std::move(it->second);
      pending_.erase(it);
      // Statuses are 0 or negative; a newer server's new error codes pass, a positive number
      // (found by the fuzzer: an app testing `status < 0` took it for success) does not.
      p.done(r->status() > 0 ? MOLT_ERR_INTERNAL : r->status(), bytes(r->payload()));
      return;
    }
    case w::Body::Ping: {
      if (queued_bytes() > max_send_queue_) {
        return;  // a server that pings and never reads does not grow our queue
      }
      const w::Ping* m = env->body_as_Ping();
      fb::FlatBufferBuilder b(64);
      Queue(w::FinishFrame(b, w::Body::Pong, w::CreatePong(b, m->seq(), m->time_ns()).Union()),
            std::nullopt);
      return;
    }
    case w::Body::Pong: {
      const w::Pong* m = env->body_as_Pong();
      const auto now = RealNow().time_since_epoch().count();
      const auto sent = static_cast<std::int64_t>(m->time_ns());
      if (m->seq() == ping_seq_ && sent > 0 && sent <= now) {
        const double sample = static_cast<double>(now - sent) * 1e-9;
        rtt_ = rtt_ == 0 ? sample : (rtt_ * 7 + sample) / 8;
      }
      return;
    }
    case w::Body::Replica:
      return OnReplicaMessage(*env->body_as_Replica());
    case w::Body::Channels:
      return OnChannels(*env->body_as_Channels());
    case w::Body::Error:
      return;  // the server dropped something we sent (counted there); nothing to do here
    case w::Body::Hello:
    case w::Body::Intent:
    case w::Body::Request:
      return Closed("the server sent a client-to-server message");
    default:
      return;  // a body from a newer server: ignored, so appending one never breaks clients
  }
}

void Connection::OnRedirect(const w::Redirect& message) {
  const std::string address = message.address() ? message.address()->str() : "";
  const std::size_t colon = address.rfind(':');
  if (!welcomed() || colon == std::string::npos || colon == 0) {
    return;  // nothing to follow: the Bye ends the session as it would have
  }
  std::string host = address.substr(0, colon);
  if (host.front() == '[') {  // [::1]:7777
    if (host.size() < 3 || host.back() != ']') {
      return;
    }
    host = host.substr(1, host.size() - 2);
  }
  const std::string port_text = address.substr(colon + 1);
  char* end = nullptr;
  const unsigned long port = std::strtoul(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port == 0 || port > 65535) {
    return;
  }
  redirect_ = Redirection{std::move(host), static_cast<std::uint16_t>(port),
                          message.server() ? message.server()->str() : "",
                          message.reason() ? message.reason()->str() : ""};
}

void Connection::OnWelcome(const w::Welcome& welcome) {
  if (!attempting_) {
    return Closed("the server sent a second welcome");
  }
  attempting_ = false;
  const std::uint64_t link = link_;
  const bool was_reconnecting = state_ == MOLT_CLIENT_RECONNECTING;
  const bool resumed = was_reconnecting && welcome.resumed() && welcome.session_id() == session_;
  if (was_reconnecting && !resumed) {
    // The old session is gone: nobody will answer its requests, and what was queued for it
    // (with its channel ids) is not sent to the new one.
    queue_.DropApp();
    FailPending();
    if (link != link_) {
      return;  // a callback disconnected
    }
  }
  if (!resumed && !replicas_.empty()) {
    DropReplicas();
    if (link != link_) {
      return;
    }
  }
  const TimePoint now = RealNow();
  session_ = welcome.session_id();
  resume_token_.clear();
  if (welcome.resume_token() != nullptr) {
    resume_token_.assign(welcome.resume_token()->begin(), welcome.resume_token()->end());
  }
  backoff_ = kFirstReconnectDelay;
  limits_.tick_rate = welcome.tick_rate();
  limits_.bytes_per_tick = welcome.bytes_per_tick();
  limits_.messages_per_tick = welcome.messages_per_tick();
  limits_.burst_ticks = welcome.budget_burst_ticks() > 0 ? welcome.budget_burst_ticks() : 1;
  limits_.max_frame_bytes = welcome.max_frame_bytes();
  queue_.SetBudget(SendQueue::ForServer(limits_), now);
  ping_period_ = welcome.ping_interval_ms() > 0
                     ? Duration(std::chrono::milliseconds(welcome.ping_interval_ms()))
                     : Duration(std::chrono::seconds(1));
  // Channels. A resumed session keeps the state of its rate limits, as the server does.
  SetChannels(List(welcome.channels()), resumed, now);
  next_ping_ = now + ping_period_;
  SetState(MOLT_CLIENT_CONNECTED, !was_reconnecting ? ""
                                  : resumed
                                      ? "resumed"
                                      : "a new session: the server did not resume the old one");
  if (link == link_) {
    Flush();  // what the app sent while the link was down goes now, after the Welcome
  }
}

void Connection::SetChannels(const std::vector<const w::ChannelInfo*>& infos, bool same_session,
                             TimePoint now) {
  std::unordered_map<std::uint16_t, Channel> old = std::move(channels_);
  channels_.clear();
  ids_.clear();
  if (!same_session) {
    queue_.ClearChannelRates();
  }
  for (const w::ChannelInfo* info : infos) {
    if (info->name() == nullptr) {
      continue;
    }
    Channel c;
    c.name = info->name()->str();
    c.kind = static_cast<std::int32_t>(info->kind());
    c.timeout_seconds = info->timeout_ms() / 1000.0;
    c.rate = info->rate();
    // The app may queue the server's burst, refilled at the send queue's pace: what waits stays
    // bounded, and the queue lets it out with the margin jitter takes (send_queue.h).
    c.bucket = TokenBucket(SendQueue::kRateShare * info->rate(), info->burst(), now);
    auto kept = old.find(info->id());
    const bool same = same_session && kept != old.end() && kept->second.name == c.name &&
                      kept->second.bucket.rate() == c.bucket.rate() &&
                      kept->second.bucket.burst() == c.bucket.burst();
    if (same) {
      c.bucket = kept->second.bucket;
    } else {
      queue_.SetChannelRate(info->id(), info->rate(), info->burst(), now);
    }
    ids_[c.name] = info->id();
    channels_[info->id()] = std::move(c);
  }
}

void Connection::OnChannels(const w::Channels& message) {
  if (state_ != MOLT_CLIENT_CONNECTED) {
    return;  // not welcomed yet: the Welcome brings the table
  }
  SetChannels(List(message.channels()), /*same_session=*/true, RealNow());
}

void Connection::OnReplicaMessage(const w::Replica& message) {
  std::vector<ReplicaStore::Update> updates;
  if (Status s = replicas_.Apply(message, &updates); !s.ok()) {
    return Closed(s.message());
  }
  Deliver(updates);
}

void Connection::Deliver(const std::vector<ReplicaStore::Update>& updates) {
  const std::uint64_t link = link_;
  for (const ReplicaStore::Update& u : updates) {
    if (link != link_ || !replicas_.Holds(u.id)) {
      return;  // a callback disconnected, or removed what follows
    }
    for (const ReplicaStore::Listener& l : replicas_.ListenersOf(u.id)) {
      if (link != link_ || !replicas_.Holds(u.id)) {
        break;
      }
      l.fn(l.user_data, u.id, u.what, u.field);
    }
    if (kernel_ && link == link_) {  // the controllers' Bus
      if (const ReplicaStore::Replica* r = replicas_.Find(u.id)) {
        kernel_->ReplicaUpdate(r->name, u.id, u.what, u.field);
      }
    }
    if (u.what == MOLT_CLIENT_REPLICA_REMOVED) {
      replicas_.Erase(u.id);  // gone once the callbacks returned
    }
  }
}

void Connection::DropReplicas() {
  for (std::uint32_t id : replicas_.Ids()) {
    if (replicas_.Holds(id)) {
      Deliver({{id, MOLT_CLIENT_REPLICA_REMOVED, -1}});
      replicas_.Erase(id);  // even when a callback disconnected: the old session's are gone
    }
  }
}

}  // namespace molt::kernel::client
