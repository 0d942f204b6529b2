// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/net/replica.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "kernel/src/net/link_table.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::net {

namespace fb = flatbuffers;
namespace w = molt::wire;

static_assert(static_cast<int>(ReplicaFieldType::kBytes) ==
              static_cast<int>(w::ReplicaFieldType::Bytes));

struct Replicas::Replica {
  ReplicaId id = 0;
  std::string name;
  std::vector<ReplicaField> fields;
  Duration period{};
  Audience audience = Audience::kAll;
  const void* owner = nullptr;
  struct Value {
    std::int64_t i = 0;
    double f = 0;
    std::vector<std::uint8_t> bytes;
  };
  std::vector<Value> values;
  std::uint64_t dirty = 0;  // one bit per field written since the last delivery
  struct Subscriber {
    SessionId session;
    bool synced = false;     // has the current state: deltas are enough
    bool delivered = false;  // was sent a snapshot (and no Remove since): owed a Remove
  };
  bool Has(SessionId s) const {
    return std::any_of(subscribers.begin(), subscribers.end(),
                       [s](const Subscriber& sub) { return sub.session == s; });
  }
  std::vector<Subscriber> subscribers;
  TaskHandle delivery;
  TimePoint last_delivery{};
};

namespace {

std::string_view TypeName(ReplicaFieldType t) {
  switch (t) {
    case ReplicaFieldType::kInt:
      return "int";
    case ReplicaFieldType::kFloat:
      return "float";
    case ReplicaFieldType::kBytes:
      return "bytes";
  }
  return "?";
}

}  // namespace

Replicas::Replicas(Sessions& sessions, LinkTable& links, Scheduler& scheduler,
                   std::uint32_t max_frame_bytes)
    : sessions_(sessions), links_(links), scheduler_(scheduler), max_frame_bytes_(max_frame_bytes) {
  // Everyone-audience replicas take in every session as it joins (late joiners: a snapshot).
  on_session_ = sessions_.OnSession([this](Session& s) {
    for (auto& [id, r] : replicas_) {
      // Not twice: a replica created by a Session.Start handler already took it in.
      if (r->audience == Audience::kAll && !r->Has(s.id())) {
        r->subscribers.push_back({s.id()});
        Arm(*r);
      }
    }
  });
}

Replicas::~Replicas() {
  on_session_.Disconnect();
  for (auto& [id, r] : replicas_) {
    r->delivery.Cancel();
  }
}

Result<ReplicaId> Replicas::Create(ReplicaSpec spec, const void* owner) {
  const std::string& name = spec.name;
  if (name.empty() || name.size() > 128) {
    return Status::InvalidArgument("a replica needs a name of 1 to 128 characters");
  }
  if (spec.fields.empty() || spec.fields.size() > kMaxReplicaFields) {
    return Status::InvalidArgument(fmt::format(
        "replica \"{}\": {} fields; a replica has 1 to {} (split it by audience or cadence)", name,
        spec.fields.size(), kMaxReplicaFields));
  }
  if (!(spec.tick_rate > 0 && spec.tick_rate <= 1000)) {
    return Status::InvalidArgument(
        fmt::format("replica \"{}\": tick rate {} is out of range (0, 1000] deliveries per second",
                    name, spec.tick_rate));
  }
  std::unordered_set<std::string_view> names;
  std::size_t bound = 64 + name.size();  // what the largest snapshot frame could take
  for (std::size_t i = 0; i < spec.fields.size(); ++i) {
    const ReplicaField& f = spec.fields[i];
    if (f.name.empty() || f.name.size() > 64) {
      return Status::InvalidArgument(
          fmt::format("replica \"{}\": field {} needs a name of 1 to 64 characters", name, i));
    }
    if (!names.insert(f.name).second) {
      return Status::InvalidArgument(
          fmt::format("replica \"{}\": field \"{}\" is declared twice", name, f.name));
    }
    if (static_cast<int>(f.type) > static_cast<int>(ReplicaFieldType::kBytes)) {
      return Status::InvalidArgument(
          fmt::format("replica \"{}\": field \"{}\" has an unknown type {} (int, float or bytes)",
                      name, f.name, static_cast<int>(f.type)));
    }
    bound += 48 + f.name.size() +
             (f.type == ReplicaFieldType::kBytes ? std::size_t{f.max_bytes} + 8 : 0);
  }
  const std::uint32_t frame = max_frame_bytes_;
  if (bound > frame) {
    return Status::InvalidArgument(fmt::format(
        "replica \"{}\": a snapshot could take {} bytes, more than a frame (net.max_frame_bytes = "
        "{}); lower the bytes fields' max_bytes or split the replica",
        name, bound, frame));
  }

  auto r = std::make_unique<Replica>();
  r->id = next_id_++;
  r->name = std::move(spec.name);
  r->fields = std::move(spec.fields);
  r->period =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(1 / spec.tick_rate));
  r->audience = spec.audience;
  r->owner = owner;
  r->values.resize(r->fields.size());
  Replica& ref = *r;
  replicas_.emplace(ref.id, std::move(r));
  if (ref.audience == Audience::kAll) {
    for (SessionId s : sessions_.ActiveIds()) {
      ref.subscribers.push_back({s});
    }
    if (!ref.subscribers.empty()) {
      Arm(ref);
    }
  }
  return ref.id;
}

Result<Replicas::Replica*> Replicas::Find(ReplicaId id, std::string_view what) {
  auto it = replicas_.find(id);
  if (it == replicas_.end()) {
    return Status::NotFound(fmt::format("{}: replica {} does not exist (destroyed?)", what, id));
  }
  return it->second.get();
}

Status Replicas::Destroy(ReplicaId id) {
  MOLT_RETURN_IF_ERROR(Find(id, "destroy").status());
  auto node = replicas_.extract(id);  // gone before any send can run a handler
  Replica& r = *node.mapped();
  r.delivery.Cancel();
  std::vector<SessionId> had;
  for (const auto& sub : r.subscribers) {
    if (sub.delivered) {
      had.push_back(sub.session);  // a session waiting for a resume gets it in its outbox
    }
  }
  SendRemove(r, had);
  return Status();
}

Status Replicas::Adopt(ReplicaId id, const void* owner) {
  auto it = replicas_.find(id);
  if (it == replicas_.end()) {
    return Status::NotFound("replica " + std::to_string(id) + " does not exist");
  }
  it->second->owner = owner;
  return Status();
}

std::string Replicas::NameOf(ReplicaId id) const {
  auto it = replicas_.find(id);
  return it == replicas_.end() ? std::string() : it->second->name;
}

void Replicas::ReleaseOwner(const void* owner) {
  std::vector<ReplicaId> ids;
  for (const auto& [id, r] : replicas_) {
    if (r->owner == owner) {
      ids.push_back(id);
    }
  }
  std::sort(ids.begin(), ids.end());
  for (ReplicaId id : ids) {
    (void)Destroy(id);
  }
}

Result<Replicas::Replica*> Replicas::Field(ReplicaId id, std::uint32_t field,
                                           ReplicaFieldType type) {
  Result<Replica*> found = Find(id, "set");
  if (!found.ok()) {
    return found;
  }
  Replica& r = **found;
  if (field >= r.fields.size()) {
    return Status::InvalidArgument(
        fmt::format("replica \"{}\" has no field {} (it has {})", r.name, field, r.fields.size()));
  }
  if (r.fields[field].type != type) {
    return Status::InvalidArgument(fmt::format("replica \"{}\": field \"{}\" is {}, not {}", r.name,
                                               r.fields[field].name, TypeName(r.fields[field].type),
                                               TypeName(type)));
  }
  return &r;
}

Status Replicas::SetInt(ReplicaId id, std::uint32_t field, std::int64_t value) {
  MOLT_ASSIGN_OR_RETURN(Replica * r, Field(id, field, ReplicaFieldType::kInt));
  if (r->values[field].i != value) {
    r->values[field].i = value;
    MarkDirty(*r, field);
  }
  return Status();
}

Status Replicas::SetFloat(ReplicaId id, std::uint32_t field, double value) {
  MOLT_ASSIGN_OR_RETURN(Replica * r, Field(id, field, ReplicaFieldType::kFloat));
  if (std::isnan(value)) {
    return Status::InvalidArgument(
        fmt::format("replica \"{}\": field \"{}\" cannot be NaN", r->name, r->fields[field].name));
  }
  if (r->values[field].f != value) {
    r->values[field].f = value;
    MarkDirty(*r, field);
  }
  return Status();
}

Status Replicas::SetBytes(ReplicaId id, std::uint32_t field, std::span<const std::uint8_t> value) {
  MOLT_ASSIGN_OR_RETURN(Replica * r, Field(id, field, ReplicaFieldType::kBytes));
  const ReplicaField& f = r->fields[field];
  if (value.size() > f.max_bytes) {
    return Status::InvalidArgument(
        fmt::format("replica \"{}\": {} bytes for field \"{}\", whose max_bytes is {}", r->name,
                    value.size(), f.name, f.max_bytes));
  }
  std::vector<std::uint8_t>& v = r->values[field].bytes;
  if (!std::equal(v.begin(), v.end(), value.begin(), value.end())) {
    v.assign(value.begin(), value.end());
    MarkDirty(*r, field);
  }
  return Status();
}

Status Replicas::AddSession(ReplicaId id, SessionId session) {
  MOLT_ASSIGN_OR_RETURN(Replica * found, Find(id, "add session"));
  Replica& r = *found;
  if (r.audience != Audience::kList) {
    return Status::FailedPrecondition(fmt::format(
        "replica \"{}\" goes to everyone; create it with the list audience to choose sessions",
        r.name));
  }
  if (sessions_.Get(session) == nullptr) {
    return Status::NotFound(fmt::format("session {} is not active", session));
  }
  if (r.Has(session)) {
    return Status();
  }
  r.subscribers.push_back({session});
  Arm(r);
  return Status();
}

Status Replicas::RemoveSession(ReplicaId id, SessionId session) {
  MOLT_ASSIGN_OR_RETURN(Replica * found, Find(id, "remove session"));
  Replica& r = *found;
  if (r.audience != Audience::kList) {
    return Status::FailedPrecondition(
        fmt::format("replica \"{}\" goes to everyone; it has no session list", r.name));
  }
  auto it = std::find_if(r.subscribers.begin(), r.subscribers.end(),
                         [&](const auto& sub) { return sub.session == session; });
  if (it == r.subscribers.end()) {
    return Status();
  }
  const bool delivered = it->delivered;
  r.subscribers.erase(it);
  if (delivered) {
    SendRemove(r, std::span(&session, 1));
  }
  return Status();
}

void Replicas::Resumed(SessionId session) {
  for (auto& [id, r] : replicas_) {
    for (auto& sub : r->subscribers) {
      if (sub.session == session) {
        sub.synced = false;
        Arm(*r);
      }
    }
  }
}

void Replicas::MarkDirty(Replica& r, std::uint32_t field) {
  r.dirty |= std::uint64_t{1} << field;
  if (!r.subscribers.empty()) {
    Arm(r);
  }
}

void Replicas::Arm(Replica& r) {
  if (r.delivery.Pending()) {
    return;  // coalesce: the next deadline delivers everything written until then
  }
  Scheduler& scheduler = scheduler_;
  const Duration wait = std::max(Duration::zero(), r.last_delivery + r.period - scheduler.Now());
  r.delivery = scheduler.After(wait, [this, id = r.id] { Flush(id); });
}

namespace {

fb::Offset<w::ReplicaValue> EncodeValue(fb::FlatBufferBuilder& b, ReplicaFieldType type,
                                        std::uint32_t field, std::int64_t i, double f,
                                        const std::vector<std::uint8_t>& bytes) {
  fb::Offset<fb::Vector<std::uint8_t>> v;
  if (type == ReplicaFieldType::kBytes) {
    v = b.CreateVector(bytes);
  }
  return w::CreateReplicaValue(b, static_cast<std::uint8_t>(field), i, f, v);
}

}  // namespace

void Replicas::Flush(ReplicaId id) {
  auto it = replicas_.find(id);
  if (it == replicas_.end()) {
    return;
  }
  Replica& r = *it->second;
  Sessions& sessions = sessions_;
  r.last_delivery = scheduler_.Now();
  std::vector<SessionId> snapshot;
  std::vector<SessionId> delta;
  std::erase_if(r.subscribers, [&](Replica::Subscriber& sub) {
    const Session* s = sessions.Get(sub.session);
    if (s == nullptr) {
      return true;  // it left
    }
    if (s->peer() == nullptr) {
      sub.synced = false;  // its link is lost: a snapshot when it resumes
    } else if (!sub.synced) {
      snapshot.push_back(sub.session);
      sub.synced = true;
      sub.delivered = true;
    } else if (r.dirty != 0) {
      delta.push_back(sub.session);
    }
    return false;
  });
  const std::uint64_t dirty = std::exchange(r.dirty, 0);

  // Both frames are encoded before the first send: a send can end a session, whose handlers
  // may destroy this replica.
  fb::FlatBufferBuilder snap_b(256);
  fb::FlatBufferBuilder delta_b(128);
  auto encode = [&](fb::FlatBufferBuilder& b, bool full) {
    std::vector<fb::Offset<w::ReplicaFieldInfo>> infos;
    std::vector<fb::Offset<w::ReplicaValue>> values;
    for (std::uint32_t i = 0; i < r.fields.size(); ++i) {
      if (full) {
        infos.push_back(w::CreateReplicaFieldInfoDirect(
            b, r.fields[i].name.c_str(), static_cast<w::ReplicaFieldType>(r.fields[i].type)));
      }
      if (full || (dirty >> i & 1) != 0) {
        const Replica::Value& v = r.values[i];
        values.push_back(EncodeValue(b, r.fields[i].type, i, v.i, v.f, v.bytes));
      }
    }
    auto body = full ? w::CreateReplicaDirect(b, r.id, w::ReplicaUpdateKind::Snapshot,
                                              r.name.c_str(), &infos, &values)
                     : w::CreateReplicaDirect(b, r.id, w::ReplicaUpdateKind::Delta, nullptr,
                                              nullptr, &values);
    return w::FinishFrame(b, w::Body::Replica, body.Union());
  };
  const auto snap_frame = snapshot.empty() ? std::span<const std::uint8_t>() : encode(snap_b, true);
  const auto delta_frame = delta.empty() ? std::span<const std::uint8_t>() : encode(delta_b, false);

  Sessions::Hold hold(sessions);
  auto send = [&](std::span<const SessionId> to, std::span<const std::uint8_t> frame,
                  std::uint64_t& counter) {
    for (SessionId sid : to) {
      if (Session* s = sessions.Get(sid)) {
        ++counter;
        stats_.bytes_sent += frame.size();
        links_.SendTo(*s, frame);
      }
    }
  };
  send(snapshot, snap_frame, stats_.snapshots_sent);
  send(delta, delta_frame, stats_.deltas_sent);
}

void Replicas::SendRemove(const Replica& r, std::span<const SessionId> sessions) {
  if (sessions.empty()) {
    return;
  }
  fb::FlatBufferBuilder b(64);
  const auto frame = w::FinishFrame(
      b, w::Body::Replica, w::CreateReplicaDirect(b, r.id, w::ReplicaUpdateKind::Remove).Union());
  Sessions& all = sessions_;
  Sessions::Hold hold(all);
  for (SessionId sid : sessions) {
    if (Session* s = all.Get(sid)) {
      ++stats_.removes_sent;
      stats_.bytes_sent += frame.size();
      links_.SendTo(*s, frame);
    }
  }
}

ReplicaStats Replicas::stats() const {
  ReplicaStats s = stats_;
  s.live = replicas_.size();
  return s;
}

}  // namespace molt::kernel::net
