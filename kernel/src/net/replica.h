// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/replica.h
//
// Replicas: server-owned state objects replicated to sessions (spec: ReplicaService). A replica
// has a fixed list of typed fields; writes mark fields dirty, and delivery coalesces at the
// replica's next scheduler deadline (1 / tick_rate after the previous one, default 10 Hz): a
// session that has not seen the replica gets a Snapshot (every field), the others one Delta
// (the fields written since the last delivery, encoded once for all of them). Leaving the
// audience, or Destroy(), sends a Remove.
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
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_REPLICA_H_
#define MOLT_KERNEL_NET_REPLICA_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/core/signal.h"
#include "kernel/src/net/channel.h"

namespace molt::kernel::net {

class LinkTable;
class Sessions;
class Session;
using ReplicaId = std::uint32_t;

enum class ReplicaFieldType : std::uint8_t { kInt = 0, kFloat = 1, kBytes = 2 };
enum class Audience : std::uint8_t { kAll = 0, kList = 1 };

inline constexpr std::size_t kMaxReplicaFields = 64;        // one dirty bit each
inline constexpr std::uint32_t kDefaultReplicaBytes = 256;  // a Bytes field's default cap

struct ReplicaField {
  std::string name;
  ReplicaFieldType type = ReplicaFieldType::kInt;
  std::uint32_t max_bytes = kDefaultReplicaBytes;  // Bytes fields only
};

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
  std::uint64_t bytes_sent = 0;  // frames x recipients
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
  // a tick rate out of (0, 1000], fields that could not fit one frame).
  Result<ReplicaId> Create(ReplicaSpec spec, const void* owner);
  // Sends a Remove to every session that has it, then forgets it.
  Status Destroy(ReplicaId id);

  // Writes a field; the new value reaches the audience at the next deadline. A write of the
  // value already there marks nothing.
  Status SetInt(ReplicaId id, std::uint32_t field, std::int64_t value);
  Status SetFloat(ReplicaId id, std::uint32_t field, double value);
  Status SetBytes(ReplicaId id, std::uint32_t field, std::span<const std::uint8_t> value);

  // Audience::kList replicas: a session joins (snapshot at the next deadline) or leaves (Remove).
  Status AddSession(ReplicaId id, SessionId session);
  Status RemoveSession(ReplicaId id, SessionId session);

  // The session's link came back: it gets a snapshot of everything it subscribes to.
  void Resumed(SessionId session);
  // Destroys every replica `owner` created.
  void ReleaseOwner(const void* owner);
  // Hands replica `id` to `owner` (a swap: the next generation claims it). NOT_FOUND when unknown.
  Status Adopt(ReplicaId id, const void* owner);
  // The name of replica `id`, or "" when unknown.
  std::string NameOf(ReplicaId id) const;

  std::size_t count() const { return replicas_.size(); }
  ReplicaStats stats() const;

 private:
  struct Replica;
  Result<Replica*> Find(ReplicaId id, std::string_view what);
  Result<Replica*> Field(ReplicaId id, std::uint32_t field, ReplicaFieldType type);
  void MarkDirty(Replica& r, std::uint32_t field);
  void Arm(Replica& r);
  void Flush(ReplicaId id);
  void SendRemove(const Replica& r, std::span<const SessionId> sessions);

  Sessions& sessions_;
  LinkTable& links_;
  Scheduler& scheduler_;
  std::uint32_t max_frame_bytes_;
  std::unordered_map<ReplicaId, std::unique_ptr<Replica>> replicas_;
  Connection on_session_;
  ReplicaId next_id_ = 1;
  ReplicaStats stats_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_REPLICA_H_
