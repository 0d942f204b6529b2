// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/session.h
//
// Sessions: one per authenticated connection, created at the handshake and ended when the client
// leaves (spec: Sessions). Everything bound to a session is torn down with it.
//
//   Connection c = sessions.OnSession([](Session& s) {     // also runs for sessions already live
//     s.Bind([id = s.id()] { Log("bye", id); });           // cleanups run in bind order on leave
//     s.BindLast([] { SaveProfile(); });                   // after every Bind cleanup
//   });
//   Session* s = sessions.Get(id);                         // nullptr once the client left
//
// On join, in order: the Session.Start hook (observational), the OnSession handlers, then the
// Kernel.SessionStart(session) topic. On leave: the session stops being Active and Get() returns
// nullptr, then the Session.End hook (context args: session, exit reason name), then
// Kernel.SessionEnd(session, reason), then the Bind cleanups in bind order, then the BindLast
// cleanups in bind order, then the per-visit Data is dropped. Hook and topic handlers can still
// read the session (Find()) and its Data: it is destroyed only after the cleanups.
//
// Ownership: bindings, data slots and OnSession handlers carry an owner (a plugin instance, or
// nullptr for the host). ReleaseOwner() lets go of that owner's bindings at once in every session
// (a binding's release, or its cleanup when it has none) and drops its handlers, so a plugin that
// stops before the session ends leaves nothing behind.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_SESSION_H_
#define MOLT_KERNEL_NET_SESSION_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernel/src/core/bus.h"
#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/hooks.h"
#include "kernel/src/core/signal.h"
#include "kernel/src/core/token_bucket.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/exit_reason.h"
#include "kernel/src/net/link_grade.h"

namespace molt::kernel::net {

class Peer;

class Session {
 public:
  Session(SessionId id, std::string user, std::vector<std::uint8_t> join_data, std::string address,
          TimePoint now);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  SessionId id() const { return id_; }
  const std::string& user() const { return user_; }
  // The handshake's join data, read once at join (untrusted client bytes: validate before use).
  std::span<const std::uint8_t> join_data() const { return join_data_; }
  const std::string& address() const { return address_; }
  TimePoint joined_at() const { return joined_at_; }
  // True from the handshake until the client leaves.
  bool active() const { return active_; }
  // Why it ended; nullopt while active.
  std::optional<ExitReason> exit_reason() const { return exit_reason_; }
  // Round-trip time from the last ping, smoothed (7/8 old + 1/8 new); 0 before the first pong.
  Duration rtt() const { return rtt_; }
  Duration last_rtt() const { return last_rtt_; }
  // The NetGovernor's figures for its link and the tier they earned (net_governor.h).
  const LinkGrade& grade() const { return grade_; }

  // Runs `cleanup` when the session ends, after earlier bindings (spec: bind). A binding made
  // after the end runs at once. `release`, when set, runs once after `cleanup`, or alone when
  // its owner lets go first (ReleaseOwner: released is not left). Returns an id for Unbind.
  std::uint64_t Bind(Callback<void()> cleanup, const void* owner = nullptr,
                     Callback<void()> release = nullptr);
  // Runs `cleanup` after every Bind cleanup (spec: bindLast: the final save goes here).
  std::uint64_t BindLast(Callback<void()> cleanup, const void* owner = nullptr,
                         Callback<void()> release = nullptr);
  // Hands a binding back without running its cleanup (its release runs). NOT_FOUND when it
  // already ran or is unknown.
  Status Unbind(std::uint64_t binding);

  // Per-visit scratch data (spec: Data), keyed by name; `release` runs when the slot is replaced
  // or cleared, or the session ends. Keys are per session, so plugins prefix theirs.
  void SetData(std::string_view key, void* value, Callback<void(void*)> release,
               const void* owner = nullptr);
  // The value under `key`, or nullptr.
  void* GetData(std::string_view key) const;
  bool EraseData(std::string_view key);

  // The per-channel token bucket of this session, (re)created for the channel's epoch. Inline:
  // every accepted frame takes from one.
  TokenBucket& Bucket(const Channel& channel, TimePoint now) {
    if (channel.id() < buckets_.size() && buckets_[channel.id()].epoch == channel.epoch())
        [[likely]] {
      return buckets_[channel.id()].bucket;
    }
    return NewBucket(channel, now);
  }

  // Latest-wins on an unreliable channel: true when `seq` is newer (serial-number order, so it
  // may wrap) than every seq taken on `channel` in this session, and then it is the newest. Call
  // after Bucket() for the same channel.
  bool TakeNewest(const Channel& channel, std::uint32_t seq) {
    std::uint32_t& latest = buckets_[channel.id()].latest;
    if (latest != 0 && static_cast<std::int32_t>(seq - latest) <= 0) {
      return false;
    }
    latest = seq;
    return true;
  }

  Peer* peer() const { return peer_; }
  // True while the link is lost and the session waits for the client to resume it.
  bool detached() const { return detached_; }

 private:
  friend class Sessions;
  // The network's parts keep the session's link: its connection and the frames queued while it
  // is lost (link_table.h), its resume token (front_door.h), its round-trip time
  // (inbound_pipeline.h), its link's grade (net_governor.h).
  friend class LinkTable;
  friend class FrontDoor;
  friend class InboundPipeline;
  friend class NetGovernor;
  struct Binding {
    std::uint64_t id;
    const void* owner;
    Callback<void()> cleanup;
    Callback<void()> release;
  };
  struct DataSlot {
    void* value;
    Callback<void(void*)> release;
    const void* owner;
  };
  struct ChannelBucket {
    std::uint32_t epoch = 0;
    std::uint32_t latest = 0;  // latest-wins: the newest seq taken, 0 before the first
    TokenBucket bucket{0, 1, TimePoint()};
  };

  // Bucket()'s rare path: the channel is new to this session, or was declared again.
  TokenBucket& NewBucket(const Channel& channel, TimePoint now);
  std::uint64_t Add(std::vector<Binding>& list, Callback<void()> cleanup, const void* owner,
                    Callback<void()> release);
  void RunEnd(Binding& b);
  void RunCleanups();
  void ReleaseOwner(const void* owner);
  void ClearData();

  SessionId id_;
  std::string user_;
  std::vector<std::uint8_t> join_data_;
  std::string address_;
  TimePoint joined_at_;
  bool active_ = true;
  bool cleaned_ = false;
  std::optional<ExitReason> exit_reason_;
  Duration rtt_{};
  Duration last_rtt_{};
  LinkGrade grade_;
  std::uint64_t next_binding_ = 1;
  std::vector<Binding> binds_;
  std::vector<Binding> last_binds_;
  std::map<std::string, DataSlot, std::less<>> data_;
  std::vector<ChannelBucket> buckets_;  // index = channel id
  Peer* peer_ = nullptr;                // the connection; nullptr once closed
  // Resume (front_door.h): the token the client must present, and while detached the deadline,
  // why the link was lost, and the frames queued for the client meanwhile.
  std::vector<std::uint8_t> resume_token_;
  bool detached_ = false;
  TimePoint detached_until_{};
  ExitReason detach_reason_ = ExitReason::kTransportError;
  std::vector<std::uint8_t> outbox_;
  // Predicted intents decided during the current read of the link, acknowledged together at its
  // end (inbound_pipeline.h): the seqs accepted and rejected.
  std::vector<std::uint32_t> accepted_;
  std::vector<std::uint32_t> rejected_;
};

class Sessions {
 public:
  struct Stats {
    std::size_t active = 0;
    std::uint64_t started = 0;
    std::uint64_t ended = 0;
    std::uint64_t by_reason[kExitReasonCount] = {};  // ended, per ExitReason
  };

  // Keeps ended sessions alive while it exists (a dispatch holding a Session& across handlers).
  class Hold {
   public:
    explicit Hold(Sessions& sessions);
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold();

   private:
    Sessions& sessions_;
  };

  Sessions(Hooks& hooks, Bus& bus);
  Sessions(const Sessions&) = delete;
  Sessions& operator=(const Sessions&) = delete;
  ~Sessions();

  // Creates a session and announces it (see the order at the top of this file); returns its id
  // (a handler may already have ended it).
  SessionId Start(std::string user, std::vector<std::uint8_t> join_data, std::string address,
                  TimePoint now);
  // Start() in two halves, so the network can welcome the client between them (events sent by
  // OnSession handlers then reach a client that knows its session).
  Session& Create(std::string user, std::vector<std::uint8_t> join_data, std::string address,
                  TimePoint now);
  void Announce(Session& session);
  // Ends `id` with `reason` (see the order at the top). Idempotent: the first reason wins.
  void End(SessionId id, ExitReason reason);

  // Runs `fn` for every active session now, then for every future one (spec: onSession).
  Connection OnSession(Callback<void(Session&)> fn, const void* owner = nullptr);
  // The active session `id`, or nullptr once it left (spec: getSession). Inline, as Find():
  // every frame looks its session up.
  Session* Get(SessionId id) const {
    Session* s = Find(id);
    return s != nullptr && s->active_ ? s : nullptr;
  }
  // Like Get(), but also a session that is ending (for End hooks and topics).
  Session* Find(SessionId id) const {
    auto it = sessions_.find(id);
    return it == sessions_.end() ? nullptr : it->second.get();
  }
  std::vector<SessionId> ActiveIds() const;
  std::size_t count() const { return active_; }

  // Runs `owner`'s bindings and data releases in every session now and drops its OnSession
  // handlers (the plugin instance stops).
  void ReleaseOwner(const void* owner);

  Stats stats() const;

 private:
  Hooks& hooks_;
  Bus& bus_;
  Hooks::Point* start_point_;
  Hooks::Point* end_point_;
  Bus::Topic* start_topic_;
  Bus::Topic* end_topic_;
  Signal<Session&> on_session_;
  std::vector<std::pair<const void*, Connection>> owned_handlers_;
  std::unordered_map<SessionId, std::unique_ptr<Session>> sessions_;
  std::vector<std::unique_ptr<Session>> graveyard_;  // ended, destroyed when no Hold is left
  int holds_ = 0;
  SessionId next_id_ = 1;
  std::size_t active_ = 0;
  Stats stats_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_SESSION_H_
