// SPDX-License-Identifier: Apache-2.0
// Sender: the app's sends checked, and every frame queued for the link (sender.h).
#include "kernel/src/client/sender.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "kernel/src/wire/envelope.h"

namespace molt::kernel::client {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

Sender::Sender(SendQueue& queue, Link& link, ChannelTable& channels, RequestTable& requests,
               Predictions& predictions, DatagramLink& datagram,
               const SendQueue::ServerLimits& limits, std::size_t max_queue_bytes)
    : queue_(queue),
      link_(link),
      channels_(channels),
      requests_(requests),
      predictions_(predictions),
      datagram_(datagram),
      limits_(limits),
      max_queue_bytes_(max_queue_bytes) {}

void Sender::Queue(std::span<const std::uint8_t> frame, std::optional<std::uint16_t> channel) {
  queue_.Push(frame, channel);
  // The first frame since the last step leaves at once (a lone request is not delayed); what
  // follows it before the next step leaves in one write there.
  if (!wrote_since_step_) {
    wrote_since_step_ = true;
    link_.Flush();
  }
}

Result<ChannelTable::Channel*> Sender::Check(std::uint16_t id, std::int32_t kind,
                                             std::size_t size) {
  ChannelTable::Channel* ch = channels_.Find(id);
  const auto intent = static_cast<std::int32_t>(w::ChannelKind::Intent);
  const auto unreliable = static_cast<std::int32_t>(w::ChannelKind::Unreliable);
  if (ch == nullptr || (ch->kind != kind && !(kind == intent && ch->kind == unreliable))) {
    const bool predicted = kind == static_cast<std::int32_t>(w::ChannelKind::PredictedIntent);
    return Status::NotFound(
        "the server has no " +
        std::string(kind == intent ? "intent or unreliable"
                    : predicted    ? "predicted intent"
                                   : "request") +
        " channel with id " + std::to_string(id) +
        (ch != nullptr ? " (channel \"" + ch->name + "\" is of kind " +
                             w::EnumNameChannelKind(static_cast<w::ChannelKind>(ch->kind)) + ")"
                       : ""));
  }
  if (ch->max_payload != 0 && size > ch->max_payload) {
    return Status::InvalidArgument("a payload of " + std::to_string(size) + " bytes exceeds the " +
                                   std::to_string(ch->max_payload) + "-byte cap of channel \"" +
                                   ch->name + "\" (unreliable payloads fit one datagram)");
  }
  if (size + kFrameOverhead > limits_.max_frame_bytes) {
    return Status::InvalidArgument("a payload of " + std::to_string(size) +
                                   " bytes does not fit the server's " +
                                   std::to_string(limits_.max_frame_bytes) + "-byte frames");
  }
  if (queued_bytes() + size + kFrameOverhead > max_queue_bytes_) {
    return Status::FailedPrecondition("the send queue is full (" + std::to_string(queued_bytes()) +
                                      " bytes wait; max_send_queue_bytes is " +
                                      std::to_string(max_queue_bytes_) +
                                      "): step or wait to let it drain at the server's pace");
  }
  if (!ch->bucket.Take(RealNow())) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g", ch->rate);
    return Status::RateLimited("channel \"" + ch->name + "\" allows " + rate +
                               " per second: the server would refuse this one");
  }
  return ch;
}

bool Sender::SendByDatagram(std::span<const std::uint8_t> frame, std::uint16_t channel,
                            bool reliable) {
  // The server charges a datagram's frame to the same budgets as the reliable link's: one the
  // budgets cannot take now waits in the queue with the others (late, never a flood).
  return datagram_.up() && queue_.TakeNow(frame.size(), channel, RealNow()) &&
         datagram_.Send(frame, reliable);
}

Status Sender::Intent(std::uint16_t channel, std::span<const std::uint8_t> payload) {
  MOLT_ASSIGN_OR_RETURN(
      ChannelTable::Channel * ch,
      Check(channel, static_cast<std::int32_t>(w::ChannelKind::Intent), payload.size()));
  const bool unreliable = ch->kind == static_cast<std::int32_t>(w::ChannelKind::Unreliable);
  fb::FlatBufferBuilder b(kFrameOverhead + payload.size());
  auto bytes = w::PayloadVector(b, payload);
  const std::span<const std::uint8_t> frame =
      w::FinishFrame(b, w::Body::Intent,
                     w::CreateIntent(b, channel, bytes, unreliable ? ch->NextSeq() : 0).Union());
  // Unreliable: by the datagram link when it is up, never behind the reliable link's queue.
  if (!unreliable || !SendByDatagram(frame, channel, false)) {
    Queue(frame, channel);
  }
  return Status::Ok();
}

Result<std::uint32_t> Sender::Predict(std::uint16_t channel, std::span<const std::uint8_t> payload,
                                      Duration timeout) {
  MOLT_RETURN_IF_ERROR(
      Check(channel, static_cast<std::int32_t>(w::ChannelKind::PredictedIntent), payload.size())
          .status());
  const std::uint32_t seq = predictions_.Add(channel, payload, RealNow() + timeout);
  fb::FlatBufferBuilder b(kFrameOverhead + payload.size());
  auto bytes = w::PayloadVector(b, payload);
  const std::span<const std::uint8_t> frame =
      w::FinishFrame(b, w::Body::Intent, w::CreateIntent(b, channel, bytes, seq).Union());
  // By the datagram link's reliable channel when it is up: no head-of-line blocking behind the
  // reliable link; its ack comes back the same way.
  if (!SendByDatagram(frame, channel, true)) {
    Queue(frame, channel);
  }
  return seq;
}

Status Sender::Request(std::uint16_t channel, std::span<const std::uint8_t> payload,
                       double timeout_seconds, RequestTable::Done done) {
  MOLT_ASSIGN_OR_RETURN(
      ChannelTable::Channel * ch,
      Check(channel, static_cast<std::int32_t>(w::ChannelKind::Request), payload.size()));
  // The server answers MOLT_ERR_TIMEOUT at the channel's timeout; our own deadline is a second
  // later, for a server that does not answer at all.
  const double timeout = timeout_seconds > 0 ? timeout_seconds : ch->timeout_seconds + 1;
  const std::uint32_t id =
      requests_.Open(std::move(done), RealNow() + Seconds(std::clamp(timeout, 0.0, 1e6)));
  fb::FlatBufferBuilder b(kFrameOverhead + payload.size());
  auto bytes = w::PayloadVector(b, payload);
  Queue(w::FinishFrame(b, w::Body::Request, w::CreateRequest(b, channel, id, bytes).Union()),
        channel);
  return Status::Ok();
}

}  // namespace molt::kernel::client
