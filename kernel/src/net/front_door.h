// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/front_door.h
//
// FrontDoor: who becomes a session, decided before any plugin code but Auth.Hello runs
// (docs/network.md, "Handshake slots", "Lost links and resume"). A new connection is admitted
// into a handshake slot: each address has a handshake rate, and a new connection always gets a
// slot, made by refusing the half-open connection of its address, or of anyone, that has waited
// longest. Its Hello then passes, in order: the protocol version; the server's state (closing,
// starting: no generation serves yet); the channel table's hash; the user id; the drain (only a
// resume); the load (an overloaded kernel thread refuses new sessions: load_gauge.h); the
// session cap; Auth.Hello (fail-closed; in "production" mode one is required), which
// may replace the user id with a verified one. A Hello whose resume token names a session of that
// user takes it over, its missed frames delivered after the Welcome; a user who comes back without
// one ends the session their lost link left waiting. Every refusal is a Refuse frame with a reason
// and, where waiting helps, a retry-after, logged at most once per reason per interval.
//
//   door.Admit(peer, now);       // a slot, or a Refuse
//   door.OnHello(peer, hello);   // a Welcome and a session, or a Refuse
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_FRONT_DOOR_H_
#define MOLT_KERNEL_NET_FRONT_DOOR_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/hooks.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/load_gauge.h"
#include "kernel/src/net/net_options.h"
#include "kernel/src/net/net_stats.h"
#include "kernel/src/net/session.h"

namespace molt::wire {
struct Hello;
enum class RefuseReason : std::uint8_t;
}  // namespace molt::wire

namespace molt::kernel {
class Kernel;
}

namespace molt::kernel::net {

class DatagramLinks;
class HandshakeSlots;
class LinkTable;
class Peer;
class Redirection;
class Replicas;

class FrontDoor {
 public:
  FrontDoor(Kernel& kernel, const NetOptions& options, NetStats& stats, ChannelRegistry& channels,
            Sessions& sessions, Replicas& replicas, LinkTable& links, HandshakeSlots& slots,
            Redirection& redirection, DatagramLinks& datagrams);
  FrontDoor(const FrontDoor&) = delete;
  FrontDoor& operator=(const FrontDoor&) = delete;

  // A connection the link table just added: it takes a handshake slot (making room by refusing
  // the longest waiting), or is refused when its address has no handshake left this second.
  void Admit(Peer& peer, TimePoint now);
  // Turns `peer` away: a Refuse frame with `reason`, `text` and `retry_after`, logged
  // (rate-limited), then the link ends.
  void Refuse(Peer& peer, ::molt::wire::RefuseReason reason, std::string_view text,
              double retry_after);
  // A connection the transport cannot keep (no descriptor to spare): counted, logged with `why`;
  // returns the Refuse frame (ServerFull) for the transport to send.
  std::vector<std::uint8_t> RefuseOverCapacity(const std::string& address, std::string_view why);
  // `peer`'s first frame, a verified Hello: a Welcome and a session (new or resumed), or a Refuse.
  void OnHello(Peer& peer, const ::molt::wire::Hello& hello);

  // Whether a plugin validates Auth.Hello (production auth needs one).
  bool authenticates() const;
  // The kernel thread's load, which turns new sessions away while it is overloaded (a reading
  // samples the scheduler's figures: a read, so also for a const door).
  LoadGauge& load() const { return load_; }

  // --- What the door lets in ---
  // Whether a plugin generation serves (true by default): while none does, every Hello gets
  // Refuse Starting with a retry-after.
  void SetServing(bool serving) { serving_ = serving; }
  bool serving() const { return serving_; }
  // The close begins: every Hello gets Refuse ShuttingDown.
  void Close() { closing_ = true; }
  bool closing() const { return closing_; }
  // The drain: a Hello that resumes no session here is refused (ShuttingDown, naming where to go
  // when a redirection is on).
  void Drain() { draining_ = true; }
  bool draining() const { return draining_; }

 private:
  // The Hello's first checks (version, the server's state, the channel table, the user id);
  // false when `peer` was refused.
  bool Acceptable(Peer& peer, const ::molt::wire::Hello& hello, std::string_view user);
  // Room for a new session (one that resumes none): not draining, not overloaded, under
  // net.max_sessions; false when `peer` was refused.
  bool HasRoom(Peer& peer);
  // Turns `peer` away as Overloaded, with a retry-after spread ±25% around
  // net.overload_retry_after_seconds.
  void RefuseOverloaded(Peer& peer);
  // Auth.Hello, when a plugin validates it: false when `peer` was refused; `*user` may be
  // replaced by the verified id.
  bool Authenticate(Peer& peer, const ::molt::wire::Hello& hello, std::string* user);
  // The session that `token` (a Hello's resume token) names for `user`; or nullptr.
  Session* Resumable(std::span<const std::uint8_t> token, std::string_view user);
  // Links `peer` to `s` and sends the Welcome (after it, when resuming, what `s` missed).
  void Welcome(Peer& peer, Session& s, bool resuming);
  // Makes room for one more half-open connection from `address`.
  void MakeHandshakeRoom(const std::string& address);

  Kernel& kernel_;
  const NetOptions& options_;
  NetStats& stats_;
  ChannelRegistry& channels_;
  Sessions& sessions_;
  Replicas& replicas_;
  LinkTable& links_;
  HandshakeSlots& slots_;
  Redirection& redirection_;
  DatagramLinks& datagrams_;
  mutable LoadGauge load_;
  Hooks::Point* auth_point_;
  Bus::Topic* resumed_topic_;
  bool serving_ = true;
  bool closing_ = false;
  bool draining_ = false;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_FRONT_DOOR_H_
