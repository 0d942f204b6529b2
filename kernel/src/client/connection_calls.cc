// SPDX-License-Identifier: Apache-2.0
// Connection: what the app and its controllers call (connection.h): channel lookups, intents and
// requests (checked against the channel, the frame cap, the queue and the rate), the event, state
// and replica listeners, and the controllers' port.
#include <string>
#include <utility>

#include "kernel/src/client/client_kernel.h"
#include "kernel/src/client/connection.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::client {
namespace {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

}  // namespace

Result<std::uint16_t> Connection::ChannelId(std::string_view name) const {
  if (state_ != MOLT_CLIENT_CONNECTED && state_ != MOLT_CLIENT_RECONNECTING) {
    return Status::FailedPrecondition("not connected: channels come with the server's welcome");
  }
  auto it = ids_.find(std::string(name));  // while reconnecting: the last welcome's table
  if (it == ids_.end()) {
    return Status::NotFound("the server has no channel \"" + std::string(name) + "\"");
  }
  return it->second;
}

Result<Connection::Channel*> Connection::CheckSend(std::uint16_t id, std::int32_t kind,
                                                   std::size_t size) {
  if (state_ != MOLT_CLIENT_CONNECTED && state_ != MOLT_CLIENT_RECONNECTING) {
    return Status::FailedPrecondition("not connected");
  }
  auto it = channels_.find(id);
  if (it == channels_.end() || it->second.kind != kind) {
    return Status::NotFound("the server has no " +
                            std::string(kind == static_cast<std::int32_t>(w::ChannelKind::Intent)
                                            ? "intent"
                                            : "request") +
                            " channel with id " + std::to_string(id));
  }
  if (size + kFrameOverhead > limits_.max_frame_bytes) {
    return Status::InvalidArgument("a payload of " + std::to_string(size) +
                                   " bytes does not fit the server's " +
                                   std::to_string(limits_.max_frame_bytes) + "-byte frames");
  }
  if (queued_bytes() + size + kFrameOverhead > max_send_queue_) {
    return Status::FailedPrecondition("the send queue is full (" + std::to_string(queued_bytes()) +
                                      " bytes wait; max_send_queue_bytes is " +
                                      std::to_string(max_send_queue_) +
                                      "): step or wait to let it drain at the server's pace");
  }
  if (!it->second.bucket.Take(RealNow())) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g", it->second.rate);
    return Status::RateLimited("channel \"" + it->second.name + "\" allows " + rate +
                               " per second: the server would refuse this one");
  }
  return &it->second;
}

Status Connection::SendIntent(std::uint16_t channel, std::span<const std::uint8_t> payload) {
  MOLT_RETURN_IF_ERROR(
      CheckSend(channel, static_cast<std::int32_t>(w::ChannelKind::Intent), payload.size())
          .status());
  fb::FlatBufferBuilder b(kFrameOverhead + payload.size());
  auto bytes = w::PayloadVector(b, payload);
  Queue(w::FinishFrame(b, w::Body::Intent, w::CreateIntent(b, channel, bytes).Union()), channel);
  return Status::Ok();
}

Status Connection::SendRequest(std::uint16_t channel, std::span<const std::uint8_t> payload,
                               double timeout_seconds, ResponseFn done) {
  MOLT_ASSIGN_OR_RETURN(
      Channel * ch,
      CheckSend(channel, static_cast<std::int32_t>(w::ChannelKind::Request), payload.size()));
  // The server answers MOLT_ERR_TIMEOUT at the channel's timeout; our own deadline is a second
  // later, for a server that does not answer at all.
  const double timeout = timeout_seconds > 0 ? timeout_seconds : ch->timeout_seconds + 1;
  const std::uint32_t id = next_request_++;
  pending_.emplace(id, Pending{std::move(done), RealNow() + Within(timeout)});
  fb::FlatBufferBuilder b(kFrameOverhead + payload.size());
  auto bytes = w::PayloadVector(b, payload);
  Queue(w::FinishFrame(b, w::Body::Request, w::CreateRequest(b, channel, id, bytes).Union()),
        channel);
  return Status::Ok();
}

void Connection::OnEvent(std::uint16_t channel, molt_client_event_fn fn, void* user_data) {
  if (channel == MOLT_CLIENT_ALL_CHANNELS) {
    all_channels_ = {fn, user_data};
  } else if (fn == nullptr) {
    handlers_.erase(channel);
  } else {
    handlers_[channel] = {fn, user_data};
  }
}

void Connection::OnState(molt_client_state_fn fn, void* user_data) {
  state_fn_ = fn;
  state_user_ = user_data;
}

// --- Replicas ------------------------------------------------------------------------------------

void Connection::OnReplica(std::string name, molt_client_replica_fn fn, void* user_data) {
  const std::string filter = name;
  replicas_.Listen(std::move(name), fn, user_data);
  if (fn == nullptr) {
    return;
  }
  // Replicas that arrived before anyone listened (spec: early packets are buffered).
  for (std::uint32_t id : replicas_.Ids(filter)) {
    if (replicas_.Holds(id)) {
      fn(user_data, id, MOLT_CLIENT_REPLICA_SNAPSHOT, -1);
    }
  }
}

// --- Controllers ---------------------------------------------------------------------------------

Result<ClientKernel*> Connection::Controllers() {
  if (!kernel_) {
    Result<std::unique_ptr<ClientKernel>> k = ClientKernel::Boot(*this);
    if (!k.ok()) {
      // The only way to fail: the process's kernel is already booted, by another client.
      return Status::FailedPrecondition(
          "another client of this process runs the controllers: one client kernel per process");
    }
    kernel_ = std::move(k).value();
  }
  return kernel_.get();
}

Status Connection::Intent(std::string_view channel, std::span<const std::uint8_t> payload) {
  Result<std::uint16_t> id = ChannelId(channel);
  return id.ok() ? SendIntent(*id, payload) : id.status();
}

Status Connection::Request(std::string_view channel, std::span<const std::uint8_t> payload,
                           double timeout_seconds,
                           Callback<void(molt_status_t, std::string_view)> done) {
  MOLT_ASSIGN_OR_RETURN(std::uint16_t id, ChannelId(channel));
  return SendRequest(
      id, payload, timeout_seconds,
      [done = std::move(done)](molt_status_t status, std::span<const std::uint8_t> answer) mutable {
        done(status, std::string_view(reinterpret_cast<const char*>(answer.data()), answer.size()));
      });
}

Status Connection::ReplicaValue(std::string_view replica, std::string_view field, molt_value* out) {
  return replicas_.Value(replica, field, out);
}

}  // namespace molt::kernel::client
