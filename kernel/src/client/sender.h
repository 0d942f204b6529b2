// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/sender.h
//
// Sender: what a client sends (Connection, connection.h). The app's intents and requests are
// checked before they are queued, each refusal naming its reason: the channel must be the
// server's and of that kind, the frame must fit the server's frames, the send queue must have
// room, and the channel's bucket must admit it (what the server would refuse is refused here).
// Every frame, the app's and the connection's own (pings, pongs), goes into the send queue, which
// releases it at the server's pace; the first frame since a step is written at once (a lone
// request is not delayed), the ones after it at the next step, in one write.
//
//   sender.NewStep();                                      // each step of the connection
//   MOLT_RETURN_IF_ERROR(sender.Intent(channel, payload));
//   sender.Queue(ping_frame, std::nullopt);
//
// Thread safety: not thread-safe; REQUIRES one thread at a time (the connection's).
#ifndef MOLT_KERNEL_CLIENT_SENDER_H_
#define MOLT_KERNEL_CLIENT_SENDER_H_

#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "kernel/src/client/channel_table.h"
#include "kernel/src/client/datagram_link.h"
#include "kernel/src/client/link.h"
#include "kernel/src/client/predictions.h"
#include "kernel/src/client/request_table.h"
#include "kernel/src/client/send_queue.h"

namespace molt::kernel::client {

class Sender {
 public:
  // Envelope bytes around a payload: what a frame needs beyond it.
  static constexpr std::size_t kFrameOverhead = 64;

  // `limits` are the server's as its latest Welcome announced them; `max_queue_bytes` bounds what
  // waits to be written. The references outlive the sender.
  Sender(SendQueue& queue, Link& link, ChannelTable& channels, RequestTable& requests,
         Predictions& predictions, DatagramLink& datagram, const SendQueue::ServerLimits& limits,
         std::size_t max_queue_bytes);
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  // A step of the connection begins: the next frame queued is written at once.
  void NewStep() { wrote_since_step_ = false; }
  // Queues an encoded frame (the app's name their channel; control frames go ahead of them).
  void Queue(std::span<const std::uint8_t> frame, std::optional<std::uint16_t> channel);
  // Bytes waiting: in the send queue, and being written.
  std::size_t queued_bytes() const { return queue_.bytes() + link_.unwritten(); }
  std::size_t max_queue_bytes() const { return max_queue_bytes_; }

  // An intent on `channel` (an intent or an unreliable channel: at most its payload cap, with
  // the channel's next seq), checked, then queued.
  Status Intent(std::uint16_t channel, std::span<const std::uint8_t> payload);
  // A predicted intent on `channel`, checked, then added to the predictions (resolved by
  // `timeout` at the latest) and queued; its seq.
  Result<std::uint32_t> Predict(std::uint16_t channel, std::span<const std::uint8_t> payload,
                                Duration timeout);
  // A request on `channel`, checked, then opened (answered by `timeout_seconds`, 0: the channel's
  // timeout and a second) and queued. REQUIRES: `timeout_seconds` finite and >= 0.
  Status Request(std::uint16_t channel, std::span<const std::uint8_t> payload,
                 double timeout_seconds, RequestTable::Done done);

 private:
  // `frame` by the datagram link (its reliable channel when `reliable`) when it is up and the
  // budgets the server applies to both links take it now; false: queue it instead.
  bool SendByDatagram(std::span<const std::uint8_t> frame, std::uint16_t channel, bool reliable);

  // The channel `id` of `kind` when a payload of `size` bytes may be sent on it now.
  Result<ChannelTable::Channel*> Check(std::uint16_t id, std::int32_t kind, std::size_t size);

  SendQueue& queue_;
  Link& link_;
  ChannelTable& channels_;
  RequestTable& requests_;
  Predictions& predictions_;
  DatagramLink& datagram_;
  const SendQueue::ServerLimits& limits_;
  const std::size_t max_queue_bytes_;
  bool wrote_since_step_ = false;  // a frame flushed since the last step: the next ones wait
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_SENDER_H_
