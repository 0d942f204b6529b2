// SPDX-License-Identifier: Apache-2.0
// Requests: the pending table (requests.h), a request opened and handed to its handler, and the
// answers, by the handler (Reply), by the timeout, or all at once when the handlers of a channel
// go away (RefusePending).
#include "kernel/src/net/requests.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "kernel/src/core/kernel.h"
#include "kernel/src/net/net_log.h"
#include "kernel/src/net/network.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::net {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

// --- PendingRequests ---------------------------------------------------------------------------

RequestToken PendingRequests::Open(SessionId session, std::uint32_t wire_id, ChannelId channel) {
  const RequestToken token = next_token_++;
  pending_.emplace(token, PendingRequest{session, wire_id, channel, TaskHandle()});
  in_flight_.insert({session, wire_id});
  return token;
}

PendingRequest* PendingRequests::Find(RequestToken token) {
  auto it = pending_.find(token);
  return it == pending_.end() ? nullptr : &it->second;
}

std::optional<PendingRequest> PendingRequests::Take(RequestToken token) {
  auto it = pending_.find(token);
  if (it == pending_.end()) {
    return std::nullopt;
  }
  PendingRequest p = std::move(it->second);
  pending_.erase(it);
  in_flight_.erase({p.session, p.wire_id});
  p.timeout.Cancel();
  return p;
}

std::vector<PendingRequest> PendingRequests::TakeChannel(ChannelId channel) {
  std::vector<RequestToken> tokens;
  for (const auto& [token, p] : pending_) {
    if (p.channel == channel) {
      tokens.push_back(token);
    }
  }
  std::sort(tokens.begin(), tokens.end());  // in the order they came
  std::vector<PendingRequest> taken;
  taken.reserve(tokens.size());
  for (RequestToken token : tokens) {
    taken.push_back(*Take(token));
  }
  return taken;
}

void PendingRequests::CancelAll() {
  for (auto& [token, p] : pending_) {
    p.timeout.Cancel();
  }
}

// --- The network's requests --------------------------------------------------------------------

void Network::OpenRequest(Session& s, Channel& ch, std::uint32_t request_id,
                          std::span<Value> args) {
  const RequestToken token = requests_.Open(s.id(), request_id, ch.id());
  requests_.Find(token)->timeout = kernel_.scheduler().After(
      Seconds(ch.timeout_seconds()),
      [this, token] {
        PendingRequest* p = requests_.Find(token);
        if (p == nullptr) {
          return;
        }
        if (Channel* c = channels_.Find(p->channel)) {
          ++c->counters().timeouts;
        }
        p->timeout = TaskHandle();  // running now: nothing to cancel
        Reply(token, Status::Code::kTimedOut, {});
      },
      Priority::kKernel);
  if (!ch.spec().on_request) {
    Reply(token, Status::Code::kUnsupported, {});
    return;
  }
  try {
    ch.spec().on_request(s, args, token);
  } catch (const std::exception& e) {
    ++ch.counters().handler_errors;
    kNetLog.Error("request \"{}\" handler threw for session {}: {}", ch.name(), s.id(), e.what());
    Reply(token, Status::Code::kInternal, {});
  } catch (...) {
    ++ch.counters().handler_errors;
    kNetLog.Error("request \"{}\" handler threw for session {}", ch.name(), s.id());
    Reply(token, Status::Code::kInternal, {});
  }
}

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
      w::CreateResponse(b, id, static_cast<std::int32_t>(status), bytes, w::Millis(retry_after));
  SendTo(session, w::FinishFrame(b, w::Body::Response, resp.Union()));
}

Status Network::Reply(RequestToken token, Status::Code status,
                      std::span<const std::uint8_t> payload) {
  if (requests_.Find(token) == nullptr) {
    return Status::Stale("the request was already answered or timed out");
  }
  if (payload.size() + 64 > options_.max_frame_bytes) {
    return Status::InvalidArgument(fmt::format(
        "an answer of {} bytes does not fit a frame (net.max_frame_bytes = {}); the request "
        "is still open",
        payload.size(), options_.max_frame_bytes));
  }
  const PendingRequest p = *requests_.Take(token);
  Session* s = sessions_.Get(p.session);
  if (s == nullptr) {
    return Status::Stale(fmt::format("session {} left before the answer", p.session));
  }
  SendResponse(*s, p.channel, p.wire_id, status, payload, 0);
  return Status();
}

std::size_t Network::RefusePending(ChannelId channel, Status::Code status, double retry_after) {
  const std::vector<PendingRequest> refused = requests_.TakeChannel(channel);
  for (const PendingRequest& p : refused) {
    if (Session* s = sessions_.Get(p.session)) {
      SendResponse(*s, p.channel, p.wire_id, status, {}, retry_after);
    }
  }
  return refused.size();
}

}  // namespace molt::kernel::net
