// SPDX-License-Identifier: Apache-2.0
// PendingRequests (requests.h): a request opened and handed to its handler, and its one answer:
// by the handler, by the timeout, or with its channel's others when the handlers go away.
#include "kernel/src/net/requests.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "kernel/src/net/link_table.h"
#include "kernel/src/net/net_log.h"
#include "kernel/src/net/wire_tap.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::net {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

PendingRequests::PendingRequests(Scheduler& scheduler, const NetOptions& options,
                                 ChannelRegistry& channels, Sessions& sessions, LinkTable& links,
                                 WireTap& tap)
    : scheduler_(scheduler),
      options_(options),
      channels_(channels),
      sessions_(sessions),
      links_(links),
      tap_(tap) {}

PendingRequests::~PendingRequests() {
  for (auto& [token, p] : pending_) {
    p.timeout.Cancel();
  }
}

void PendingRequests::Open(Session& s, Channel& ch, std::uint32_t wire_id, std::span<Value> args) {
  const RequestToken token = next_token_++;
  Pending& p =
      pending_.emplace(token, Pending{s.id(), wire_id, ch.id(), TaskHandle()}).first->second;
  in_flight_.insert({s.id(), wire_id});
  p.timeout = scheduler_.After(
      Seconds(ch.timeout_seconds()), [this, token] { TimedOut(token); }, Priority::kKernel);
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

void PendingRequests::TimedOut(RequestToken token) {
  auto it = pending_.find(token);
  if (it == pending_.end()) {
    return;
  }
  if (Channel* c = channels_.Find(it->second.channel)) {
    ++c->counters().timeouts;
  }
  it->second.timeout = TaskHandle();  // running now: nothing to cancel
  Reply(token, Status::Code::kTimedOut, {});
}

std::optional<PendingRequests::Pending> PendingRequests::Take(RequestToken token) {
  auto it = pending_.find(token);
  if (it == pending_.end()) {
    return std::nullopt;
  }
  Pending p = std::move(it->second);
  pending_.erase(it);
  in_flight_.erase({p.session, p.wire_id});
  p.timeout.Cancel();
  return p;
}

void PendingRequests::Answer(Session& session, ChannelId channel, std::uint32_t id,
                             Status::Code status, std::span<const std::uint8_t> payload,
                             double retry_after) {
  if (tap_.on()) {
    const Channel* ch = channels_.Find(channel);
    tap_.Note(false, "response", channel, ch != nullptr ? std::string_view(ch->name()) : "",
              session.id(), payload, std::string(Status::CodeName(status)));
  }
  fb::FlatBufferBuilder b(64 + payload.size());
  auto bytes = w::PayloadVector(b, payload);
  auto resp =
      w::CreateResponse(b, id, static_cast<std::int32_t>(status), bytes, w::Millis(retry_after));
  links_.SendTo(session, w::FinishFrame(b, w::Body::Response, resp.Union()));
}

Status PendingRequests::Reply(RequestToken token, Status::Code status,
                              std::span<const std::uint8_t> payload) {
  if (pending_.find(token) == pending_.end()) {
    return Status::Stale("the request was already answered or timed out");
  }
  if (payload.size() + 64 > options_.max_frame_bytes) {
    return Status::InvalidArgument(fmt::format(
        "an answer of {} bytes does not fit a frame (net.max_frame_bytes = {}); the request "
        "is still open",
        payload.size(), options_.max_frame_bytes));
  }
  const Pending p = *Take(token);
  Session* s = sessions_.Get(p.session);
  if (s == nullptr) {
    return Status::Stale(fmt::format("session {} left before the answer", p.session));
  }
  Answer(*s, p.channel, p.wire_id, status, payload, 0);
  return Status();
}

std::size_t PendingRequests::RefusePending(ChannelId channel, Status::Code status,
                                           double retry_after) {
  std::vector<RequestToken> tokens;
  for (const auto& [token, p] : pending_) {
    if (p.channel == channel) {
      tokens.push_back(token);
    }
  }
  std::sort(tokens.begin(), tokens.end());  // in the order they came
  std::vector<Pending> refused;             // all taken first: an answer may reach plugin code
  refused.reserve(tokens.size());
  for (RequestToken token : tokens) {
    refused.push_back(*Take(token));
  }
  for (const Pending& p : refused) {
    if (Session* s = sessions_.Get(p.session)) {
      Answer(*s, p.channel, p.wire_id, status, {}, retry_after);
    }
  }
  return refused.size();
}

}  // namespace molt::kernel::net
