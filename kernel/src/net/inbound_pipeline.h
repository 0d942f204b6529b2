// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/inbound_pipeline.h
//
// InboundPipeline: what a connection's bytes mean. Nothing on the path trusts a client byte.
// Bytes arrive in any cut; each frame passes, in order, and every rejection is counted per channel
// and reason:
//   1. transport budgets: bytes and messages per connection (token buckets refilled per tick),
//      charged from the frame header before anything is decoded; blowing one ends the session
//      (Flood) and fires Net.FloodDetected (hook, fail-open) and the topic
//   2. frame size cap (net.max_frame_bytes): larger ends the connection (ProtocolError)
//   3. envelope verification (FlatBuffers verifier, bounded depth and table count); before the
//      Welcome only a Hello is accepted, and it goes to the front door
//   4. channel lookup: a live channel of the message's kind
//   5. live session; a request whose id is still in flight on the session is refused (never
//      handled twice)
//   6. the channel's token bucket for this session (Net.RateLimited hook and topic)
//   7. payload verification (the channel's verifier) and its declarative rules
//   8. no validator (rules or hook handlers) and not Open: reject (fail-closed, warned once)
//   9. the Intent.<Channel> / Request.<Channel> hook chain, fail-closed
//  10. latest-wins (unreliable channels that ask for it): a message older than the newest taken
//      is dropped (counted stale, no offence); then the handler, on the kernel thread, and the
//      Intent.<Channel> topic (intents); a request is opened in PendingRequests, which hands it
//      to its handler
// A predicted intent is acknowledged: accepted when its handler returned without an error,
// rejected at any step from 4 on (or by its handler's error); the seqs decided during one read of
// the link leave together in one Acks frame at its end.
// Rejected intents are dropped; past net.offender_drop_first rejections in the offender window
// the client gets Error frames (with retry-after for rate limits, at most one per
// net.error_frame_gap); at net.offender_kick_after the session ends (Offender). Rejected
// requests are always answered (REJECTED with the channel's reject payload, or RATE_LIMITED with
// retry-after). Pings are answered, pongs give the session its round-trip time, a Bye ends it.
// While the wire inspector watches, every message is recorded with its verdict and its time.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_INBOUND_PIPELINE_H_
#define MOLT_KERNEL_NET_INBOUND_PIPELINE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/hooks.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/net_options.h"
#include "kernel/src/net/net_stats.h"
#include "kernel/src/net/session.h"

namespace molt::kernel {
class Kernel;
}
namespace molt::wire {
struct Intent;
}

namespace molt::kernel::net {

class DatagramLinks;
class FrontDoor;
class LinkTable;
class NetGovernor;
struct Link;
class PendingRequests;
class Peer;
class WireTap;

class InboundPipeline {
 public:
  InboundPipeline(Kernel& kernel, const NetOptions& options, NetStats& stats,
                  ChannelRegistry& channels, Sessions& sessions, LinkTable& links,
                  FrontDoor& front_door, PendingRequests& requests, WireTap& tap,
                  DatagramLinks& datagrams, NetGovernor& governor);
  InboundPipeline(const InboundPipeline&) = delete;
  InboundPipeline& operator=(const InboundPipeline&) = delete;

  // A new connection's budgets, full at `now`, and its offender window.
  void Open(Link& link, TimePoint now) const;
  // Bytes arrived on `peer`: frames are cut out and passed through the pipeline, each at once.
  void Receive(Peer& peer, std::span<const std::uint8_t> bytes);
  // One whole frame (its length prefix included) that came by the session's datagram link,
  // charged to `peer`'s budgets (the session's reliable link) and passed through steps 2-10;
  // the reliable link's partial frame, if any, is not touched. The acks of its predicted intents
  // wait for SendDatagramAcks.
  void ReceiveFrame(Peer& peer, std::span<const std::uint8_t> frame);
  // The datagrams read together are handled: one Acks frame per session for the predicted
  // intents they carried, by its datagram link (the spec: acks ride, not a message each).
  void SendDatagramAcks();

 private:
  // Steps 3 on: one whole frame, its 4-byte header included.
  void Frame(Peer& peer, std::span<const std::uint8_t> frame);
  // Steps 4-10; while the wire inspector watches, InboundTapped records them.
  void OnInbound(Peer& peer, bool request, ChannelId channel, std::uint32_t request_id,
                 std::span<const std::uint8_t> payload);
  void InboundTapped(Peer& peer, bool request, ChannelId channel, std::uint32_t request_id,
                     std::span<const std::uint8_t> payload);
  void Inbound(Peer& peer, bool request, ChannelId channel, std::uint32_t request_id,
               std::span<const std::uint8_t> payload);
  // Steps 7-8: the payload (aligned in `*payload`) verified and its rules held, and a validator
  // present (`*has_hooks`: one on the channel's hook point) or the channel Open; false when
  // `peer`'s message was rejected.
  bool Validate(Peer& peer, Channel& ch, bool request, std::uint32_t request_id,
                std::span<const std::uint8_t>* payload, bool* has_hooks);
  // Step 10 for an intent.
  void HandleIntent(Session& s, Channel& ch, std::span<Value> args);
  // Step 10 for an unreliable message or a predicted intent (intent_ is its frame): the payload
  // cap, latest-wins, then the handler, then the predicted intent's ack.
  void HandleSequenced(Peer& peer, Session& s, Channel& ch, std::span<Value> args);
  void OnPong(Peer& peer, std::uint32_t seq, std::uint64_t time_ns);
  void RejectMessage(Peer& peer, Channel* channel, Reject reason, bool request,
                     std::uint32_t request_id, double retry_after, std::string_view text);
  void Offence(Peer& peer, Channel* channel, Reject reason, double retry_after,
               std::string_view text, bool answered);
  void Flood(Peer& peer, std::size_t bytes, std::size_t budget);
  // The Acks frame for the predicted intents decided during this read.
  void SendAcks(Peer& peer);

  Kernel& kernel_;
  const NetOptions& options_;
  NetStats& stats_;
  ChannelRegistry& channels_;
  Sessions& sessions_;
  LinkTable& links_;
  FrontDoor& front_door_;
  PendingRequests& requests_;
  WireTap& tap_;
  DatagramLinks& datagrams_;
  NetGovernor& governor_;
  Hooks::Point* rate_limited_point_;
  Hooks::Point* flood_point_;
  Bus::Topic* rate_limited_topic_;
  Bus::Topic* flood_topic_;
  Bus::Topic* rejected_topic_;
  TimePoint batch_now_{};                       // the clock, read once per Receive
  std::vector<std::uint64_t> frame_scratch_;    // an aligned copy of a misaligned frame
  std::vector<std::uint64_t> payload_scratch_;  // ... and of a misaligned payload
  // The last rejection RejectMessage counted, and its text while the tap is on: what
  // InboundTapped records as the message's verdict.
  Reject last_reject_ = Reject::kFlood;
  std::uint64_t rejections_ = 0;
  std::string reject_text_;
  bool acks_due_ = false;                 // a predicted intent was decided during this read
  bool via_datagram_ = false;             // the acks being sent go by the session's datagram link
  std::vector<SessionId> datagram_acks_;  // sessions with acks due from the datagrams read
  // The Intent frame being handled: its seq, read only for channels whose messages carry one.
  const molt::wire::Intent* intent_ = nullptr;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_INBOUND_PIPELINE_H_
