// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/testkit/kit_peer.h
//
// KitPeer: one in-process client of the test kit (test_kit.h). The network writes the client's
// frames to it as it would to a socket (net::Peer::Write); it decodes each as a client does: the
// Welcome gives it its session, a Refuse its refusal (as a Status whose code says how to read
// it), the events, responses, errors and the Bye become KitMessages a test reads in order, the
// replica messages go to a client::ReplicaStore as libmolt_client applies them, and each Ping
// leaves a Pong owed (TakeOwed: the kit sends them once the network returned, never from inside
// its write). Channel ids become names through the lookup it is given: the kit resolves them on
// the server's side.
//
//   KitPeer peer("10.0.0.1", "ada", [&](std::uint16_t id) { return NameOf(id); });
//   network.Attach(peer);                       // then the Hello; the Welcome lands in Write()
//   while (std::optional<KitMessage> m = peer.Next()) { ... }
//
// Only the test kit includes it (and its test). Thread safety: the kernel thread (the network's).
#ifndef MOLT_KERNEL_TESTKIT_KIT_PEER_H_
#define MOLT_KERNEL_TESTKIT_KIT_PEER_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>
#include <molt/testkit.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/client/replica_store.h"
#include "kernel/src/net/network.h"

namespace molt::kernel::testkit {

// One message the server sent a session (or, for session 0, a Bus message the kit watched).
struct KitMessage {
  std::int32_t kind = 0;  // MOLT_TESTKIT_*
  std::string channel;    // the channel's name, or the topic
  std::uint32_t request_id = 0;
  molt_status_t status = MOLT_OK;
  std::vector<std::uint8_t> payload;
  std::string reason;
  std::string text;
  double retry_after = 0;
  std::vector<std::string> arg_bytes;  // what args' strings and bytes point into
  std::vector<molt_value> args;
};

class KitPeer final : public net::Peer {
 public:
  enum class State { kHandshake, kWelcomed, kRefused, kEnded };
  // The name of the server's channel `id` ("" when there is none).
  using ChannelName = std::function<std::string(std::uint16_t id)>;

  KitPeer(std::string address, std::string user, ChannelName channel_name);

  // A frame the network wrote: decoded at once (a frame that does not verify is logged and
  // dropped, as nothing a test could read).
  void Write(std::span<const std::uint8_t> frame) override;
  std::size_t queued_bytes() const override { return 0; }  // a client that reads at once
  // A refused client stays refused (its refusal is what Join reports); any other ends.
  void Close(bool flush) override;

  const std::string& user() const { return user_; }
  State state() const { return state_; }
  // The session the Welcome gave (0 before it).
  molt_session_t id() const { return id_; }
  // Why the server refused the Hello (state kRefused): RateLimited, FailedPrecondition for a
  // server starting or shutting down, Rejected otherwise; the text names the user and reason.
  const Status& refusal() const { return refusal_; }
  // The id of the client's next request (1, 2, ...).
  std::uint32_t NextRequestId() { return ++request_ids_; }

  // The oldest message not read yet, taken out; nullopt when none is left.
  std::optional<KitMessage> Next();
  // The Pongs owed for the Pings written since the last call, oldest first.
  std::vector<std::vector<std::uint8_t>> TakeOwed();
  // A field of the client's copy of replica `replica` (ReplicaStore::Value).
  Status ReplicaValue(std::string_view replica, std::string_view field, molt_value* out) const;

 private:
  const std::string user_;
  const ChannelName channel_name_;
  State state_ = State::kHandshake;
  molt_session_t id_ = 0;
  Status refusal_;
  std::uint32_t request_ids_ = 0;
  std::deque<KitMessage> inbox_;
  std::vector<std::vector<std::uint8_t>> owed_;  // pongs to send once the network returns
  client::ReplicaStore replicas_;
};

}  // namespace molt::kernel::testkit

#endif  // MOLT_KERNEL_TESTKIT_KIT_PEER_H_
