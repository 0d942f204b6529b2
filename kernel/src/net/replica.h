// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/replica.h
//
// Replicas: server-owned state objects replicated to sessions (spec: ReplicaService). A replica
// has a fixed list of typed fields; writes mark fields dirty, and delivery coalesces at the
// replica's next scheduler deadline (1 / tick_rate after the previous one, default 10 Hz): a
// session that has not seen the replica gets a Snapshot (every field), the others a Delta of the
// fields written since they were last sent one (each distinct set encoded once: ReplicaFrames).
// Leaving the audience, or Destroy(), sends a Remove.
//
//   ReplicaSpec spec;
//   spec.name = "score";
//   spec.fields = {{"red", ReplicaFieldType::kInt}, {"blue", ReplicaFieldType::kInt}};
//   Result<ReplicaId> id = replicas.Create(std::move(spec), owner);   // audience: everyone
//   replicas.SetInt(*id, 0, 3);     // red = 3, delivered at the next deadline
//
// The audience is everyone (every session, joining ones included: late joiners get a snapshot)
// or a list (AddSession / RemoveSession: one session, or several). A session whose link is lost
// is skipped while it waits for its client, and gets a fresh snapshot when it resumes, so a long
// outage never fills its outbox with stale deltas.
//
// Per session, a replica keeps the fields it is owed and, for fields with a deadband
// (ReplicaField::quantize), the value it was last sent: a change smaller than the threshold
// from that value is not sent (the session's copy never drifts by the threshold or more), and
// a session the pace (ReplicaPace: the NetGovernor's tiers) skips at a tick is owed what it
// missed, merged into its next send.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_REPLICA_H_
#define MOLT_KERNEL_NET_REPLICA_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/core/signal.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/interest_sources.h"
#include "kernel/src/net/replica_types.h"

namespace molt::kernel::net {

class LinkTable;
class ReplicaPace;
class Sessions;
class Session;

struct ReplicaSpec {
  std::string name;
  std::vector<ReplicaField> fields;  // 1 to 64, names unique
  double tick_rate = 10;             // deliveries per second at most (spec: TickRate = 10)
  Audience audience = Audience::kAll;
};

struct ReplicaStats {
  std::size_t live = 0;
  std::uint64_t snapshots_sent = 0;  // per session
  std::uint64_t deltas_sent = 0;     // per session
  std::uint64_t removes_sent = 0;
  std::uint64_t bytes_sent = 0;         // frames x recipients
  std::uint64_t fields_deadbanded = 0;  // per session: a change within the field's deadband
  std::uint64_t deltas_deferred = 0;    // per session: owed, but not its tick (the pace)
};

class Replicas {
 public:
  // Frames go out through `links` (a session whose link is lost gets them when it resumes);
  // deliveries run on `scheduler`; a replica's fields must fit `max_frame_bytes`.
  Replicas(Sessions& sessions, LinkTable& links, Scheduler& scheduler,
           std::uint32_t max_frame_bytes);
  Replicas(const Replicas&) = delete;
  Replicas& operator=(const Replicas&) = delete;
  ~Replicas();

  // Creates a replica owned by `owner` (released by ReleaseOwner). Every field starts at 0 / 0.0
  // / empty. Errors name the replica and the fix (field count, duplicate or empty field names,
  // a tick rate out of (0, 1000], a deadband on a bytes field or not a finite number >= 0,
  // fields that could not fit one frame).
  Result<ReplicaId> Create(ReplicaSpec spec, const void* owner);
  // Sends a Remove to every session that has it, then forgets it.
  Status Destroy(ReplicaId id);

  // Writes a field; the new value reaches the audience at the next deadline. A write of the
  // value already there marks nothing.
  Status SetInt(ReplicaId id, std::uint32_t field, std::int64_t value);
  Status SetFloat(ReplicaId id, std::uint32_t field, double value);
  Status SetBytes(ReplicaId id, std::uint32_t field, std::span<const std::uint8_t> value);

  // Audience::kList replicas: a session joins (snapshot at the next deadline) or leaves (Remove).
  // The list is one source of interest (InterestSources): leaving it removes a session no zone or
  // grid still holds.
  Status AddSession(ReplicaId id, SessionId session);
  Status RemoveSession(ReplicaId id, SessionId session);
  // The same for any source (Zones, the grid): a session becomes a candidate with its first
  // source and stops being one with its last. Idempotent per list or grid source; zones count.
  Status Enter(ReplicaId id, SessionId session, InterestSource source);
  Status Leave(ReplicaId id, SessionId session, InterestSource source);

  // Interest (spec: Interest = function(player) -> bool): of the candidates (everyone, or the
  // list audience's sources), only those `interest` says yes to see the replica; null: all of
  // them. Set, it is asked for every candidate now (a session it turns away that had the replica
  // gets a Remove), then for each new candidate; RefreshInterest asks again (`session`, or 0:
  // every candidate) when what it reads changed. It runs on the kernel thread and must not
  // write this replica's audience.
  Status SetInterest(ReplicaId id, std::function<bool(SessionId)> interest);
  Status RefreshInterest(ReplicaId id, SessionId session);
  // A swap: the predicate goes with its generation, and until the next one sets its own, who sees
  // the replica does not change (no candidate comes in, none is turned away). ThawInterest ends
  // that for every replica no predicate was set on since (the swap ended): its candidates are
  // asked again, with no predicate.
  Status FreezeInterest(ReplicaId id);
  void ThawInterest();

  // The session's link came back: it gets a snapshot of everything it subscribes to.
  void Resumed(SessionId session);
  // Destroys every replica `owner` created.
  void ReleaseOwner(const void* owner);
  // Hands replica `id` to `owner` (a swap: the next generation claims it). NOT_FOUND when unknown.
  Status Adopt(ReplicaId id, const void* owner);
  // The name of replica `id`, or "" when unknown.
  std::string NameOf(ReplicaId id) const;
  // The value of float field `field` (a grid reads positions); errors as SetFloat's.
  Result<double> Float(ReplicaId id, std::uint32_t field);
  // The audience of replica `id`, or nothing when unknown.
  std::optional<Audience> AudienceOf(ReplicaId id) const;

  // Who takes deltas at which ticks (not owned; null: every session every tick).
  void SetPace(const ReplicaPace* pace) { pace_ = pace; }

  std::size_t count() const { return replicas_.size(); }
  ReplicaStats stats() const;

 private:
  struct Replica;
  Result<Replica*> Find(ReplicaId id, std::string_view what);
  Result<Replica*> Field(ReplicaId id, std::uint32_t field, ReplicaFieldType type);
  void MarkDirty(Replica& r, std::uint32_t field);
  enum class Change { kNone, kIn, kOut };
  // Puts `session` in or out of `r`'s subscribers as its sources and interest say; kOut when it
  // is owed a Remove (the caller sends it, last).
  Change Admit(Replica& r, SessionId session);
  void Reconsider(Replica& r, SessionId session);  // Admit, and the Remove
  void Arm(Replica& r);
  void Flush(ReplicaId id);
  // Whether `session` takes deltas at `tick` (the pace's divisor, at the session's phase).
  // REQUIRES a pace.
  bool Due(const Session& session, std::uint64_t tick) const;
  void SendRemove(const Replica& r, std::span<const SessionId> sessions);

  Sessions& sessions_;
  LinkTable& links_;
  Scheduler& scheduler_;
  std::uint32_t max_frame_bytes_;
  std::unordered_map<ReplicaId, std::unique_ptr<Replica>> replicas_;
  Connection on_session_;
  ReplicaId next_id_ = 1;
  const ReplicaPace* pace_ = nullptr;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // expires with this object
  ReplicaStats stats_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_REPLICA_H_
