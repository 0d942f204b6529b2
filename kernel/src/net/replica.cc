// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/net/replica.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "kernel/src/net/interest_sources.h"
#include "kernel/src/net/link_table.h"
#include "kernel/src/net/replica_frames.h"
#include "kernel/src/net/replica_pace.h"

namespace molt::kernel::net {

struct Replicas::Replica {
  ReplicaId id = 0;
  std::string name;
  std::vector<ReplicaField> fields;
  Duration period{};
  TimePoint created{};  // tick n runs from created + n periods
  Audience audience = Audience::kAll;
  const void* owner = nullptr;
  std::vector<ReplicaValue> values;
  std::uint64_t dirty = 0;               // one bit per field written since the last delivery
  std::vector<std::uint32_t> quantized;  // the fields with a deadband
  struct Subscriber {
    SessionId session;
    bool synced = false;             // has the current state: deltas are enough
    bool delivered = false;          // was sent a snapshot (and no Remove since): owed a Remove
    std::uint64_t owed = 0;          // fields written since it was last sent them
    std::vector<ReplicaValue> sent;  // per quantized field: the value it was last sent
  };
  std::vector<Subscriber> subscribers;
  std::unordered_map<SessionId, std::size_t> index;  // session -> its place in subscribers
  InterestSources sources;                  // the list audience: why each session may see it
  std::function<bool(SessionId)> interest;  // null: every candidate sees it
  bool frozen = false;  // in a swap: who has it is who may have it (FreezeInterest)

  bool Has(SessionId s) const { return index.contains(s); }
  void Add(SessionId s) {
    index.emplace(s, subscribers.size());
    subscribers.emplace_back().session = s;
  }
  // Removes subscriber `i`; the last one takes its place.
  void EraseAt(std::size_t i) {
    index.erase(subscribers[i].session);
    if (i + 1 != subscribers.size()) {
      subscribers[i] = std::move(subscribers.back());
      index[subscribers[i].session] = i;
    }
    subscribers.pop_back();
  }
  // What `sub` now has of the quantized fields of `mask`.
  void Remember(Subscriber& sub, std::uint64_t mask) const {
    sub.sent.resize(quantized.size());
    for (std::size_t k = 0; k < quantized.size(); ++k) {
      if ((mask >> quantized[k] & 1) != 0) {
        sub.sent[k].i = values[quantized[k]].i;
        sub.sent[k].f = values[quantized[k]].f;
      }
    }
  }
  // The fields of `sub.owed` that go to it: the quantized ones only when they moved by their
  // threshold from what it was last sent. Counts the others in `held`.
  std::uint64_t Settle(const Subscriber& sub, std::uint64_t& held) const {
    std::uint64_t mask = sub.owed;
    for (std::size_t k = 0; k < quantized.size(); ++k) {
      const std::uint32_t f = quantized[k];
      if ((mask >> f & 1) == 0) {
        continue;
      }
      const ReplicaValue& now = values[f];
      const double moved =
          fields[f].type == ReplicaFieldType::kInt
              ? std::fabs(static_cast<double>(now.i) - static_cast<double>(sub.sent[k].i))
              : std::fabs(now.f - sub.sent[k].f);
      if (moved < fields[f].quantize) {
        mask &= ~(std::uint64_t{1} << f);
        ++held;
      }
    }
    return mask;
  }

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
    const SessionId session = s.id();
    for (auto& [id, r] : replicas_) {
      // Not twice: a replica created by a Session.Start handler already took it in.
      if (r->audience == Audience::kAll && !r->Has(session) && !r->frozen &&
          (!r->interest || r->interest(session))) {
        r->Add(session);
        Arm(*r);
      }
    }
    // An ended session is nobody's candidate (and gets no Remove). The binding may outlive
    // this object (sessions destroyed after it): it checks `alive_` first.
    s.Bind([this, session, alive = std::weak_ptr<int>(alive_)] {
      if (alive.expired()) {
        return;
      }
      for (auto& [id, r] : replicas_) {
        r->sources.Forget(session);
      }
    });
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
    if (!(f.quantize >= 0 && std::isfinite(f.quantize))) {
      return Status::InvalidArgument(fmt::format(
          "replica \"{}\": field \"{}\" has deadband {}; a deadband is a finite number >= 0 (0: "
          "every change is sent)",
          name, f.name, f.quantize));
    }
    if (f.quantize > 0 && f.type == ReplicaFieldType::kBytes) {
      return Status::InvalidArgument(fmt::format(
          "replica \"{}\": field \"{}\" is bytes; only int and float fields take a deadband", name,
          f.name));
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
  r->created = scheduler_.Now();
  r->audience = spec.audience;
  r->owner = owner;
  r->values.resize(r->fields.size());
  for (std::uint32_t i = 0; i < r->fields.size(); ++i) {
    if (r->fields[i].quantize > 0) {
      r->quantized.push_back(i);
    }
  }
  Replica& ref = *r;
  replicas_.emplace(ref.id, std::move(r));
  if (ref.audience == Audience::kAll) {
    for (SessionId s : sessions_.ActiveIds()) {
      ref.Add(s);
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

std::optional<Audience> Replicas::AudienceOf(ReplicaId id) const {
  auto it = replicas_.find(id);
  return it == replicas_.end() ? std::nullopt : std::optional<Audience>(it->second->audience);
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

Result<double> Replicas::Float(ReplicaId id, std::uint32_t field) {
  MOLT_ASSIGN_OR_RETURN(Replica * r, Field(id, field, ReplicaFieldType::kFloat));
  return r->values[field].f;
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
  return Enter(id, session, InterestSource::kList);
}

Status Replicas::RemoveSession(ReplicaId id, SessionId session) {
  return Leave(id, session, InterestSource::kList);
}

Status Replicas::Enter(ReplicaId id, SessionId session, InterestSource source) {
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
  if (r.sources.Add(session, source)) {
    Reconsider(r, session);  // a new candidate: in, unless the predicate says no
  }
  return Status();
}

Status Replicas::Leave(ReplicaId id, SessionId session, InterestSource source) {
  MOLT_ASSIGN_OR_RETURN(Replica * found, Find(id, "remove session"));
  Replica& r = *found;
  if (r.audience != Audience::kList) {
    return Status::FailedPrecondition(
        fmt::format("replica \"{}\" goes to everyone; it has no session list", r.name));
  }
  if (r.sources.Remove(session, source)) {
    Reconsider(r, session);  // no source holds it: out (a Remove, last: it may end the session)
  }
  return Status();
}

Status Replicas::SetInterest(ReplicaId id, std::function<bool(SessionId)> interest) {
  MOLT_ASSIGN_OR_RETURN(Replica * found, Find(id, "set interest"));
  found->interest = std::move(interest);
  found->frozen = false;
  return RefreshInterest(id, 0);
}

Status Replicas::FreezeInterest(ReplicaId id) {
  MOLT_ASSIGN_OR_RETURN(Replica * found, Find(id, "freeze interest"));
  found->frozen = true;
  found->interest = nullptr;  // its release runs now, while its library is loaded
  return Status();
}

void Replicas::ThawInterest() {
  std::vector<ReplicaId> frozen;
  for (auto& [id, r] : replicas_) {
    if (r->frozen) {
      r->frozen = false;
      frozen.push_back(id);
    }
  }
  for (ReplicaId id : frozen) {
    (void)RefreshInterest(id, 0);
  }
}

Status Replicas::RefreshInterest(ReplicaId id, SessionId session) {
  MOLT_ASSIGN_OR_RETURN(Replica * found, Find(id, "refresh interest"));
  Replica& r = *found;
  if (session != 0) {
    Reconsider(r, session);
    return Status();
  }
  std::vector<SessionId> candidates;
  if (r.audience == Audience::kAll) {
    candidates = sessions_.ActiveIds();
  } else {
    r.sources.ForEach([&](SessionId s) { candidates.push_back(s); });
  }
  for (const Replica::Subscriber& sub : r.subscribers) {  // and those that may be out now
    candidates.push_back(sub.session);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<SessionId> out;
  for (SessionId s : candidates) {
    if (Admit(r, s) == Change::kOut) {
      out.push_back(s);
    }
  }
  SendRemove(r, out);  // last: a send can end a session, whose handlers may destroy `r`
  return Status();
}

void Replicas::Reconsider(Replica& r, SessionId session) {
  if (Admit(r, session) == Change::kOut) {
    SendRemove(r, std::span(&session, 1));
  }
}

Replicas::Change Replicas::Admit(Replica& r, SessionId session) {
  const bool active = sessions_.Get(session) != nullptr;
  const bool candidate = active && (r.audience == Audience::kAll || r.sources.Has(session));
  auto it = r.index.find(session);
  const bool wanted =
      candidate && (r.frozen ? it != r.index.end() : (!r.interest || r.interest(session)));
  if (wanted && it == r.index.end()) {
    r.Add(session);  // a snapshot at the next delivery
    Arm(r);
    return Change::kIn;
  }
  if (!wanted && it != r.index.end()) {
    const bool delivered = r.subscribers[it->second].delivered;
    r.EraseAt(it->second);
    return delivered && active ? Change::kOut : Change::kNone;
  }
  return Change::kNone;
}

void Replicas::Resumed(SessionId session) {
  for (auto& [id, r] : replicas_) {
    if (auto it = r->index.find(session); it != r->index.end()) {
      r->subscribers[it->second].synced = false;
      Arm(*r);
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

bool Replicas::Due(const Session& session, std::uint64_t tick) const {
  const std::uint64_t divisor = std::max<std::uint32_t>(1, pace_->Divisor(session));
  if (divisor == 1) {
    return true;
  }
  // The session's phase: a mix of its id, so one tier's sessions spread over the ticks.
  std::uint64_t phase = session.id() * 0x9E3779B97F4A7C15ull;
  phase ^= phase >> 32;
  return (tick + phase) % divisor == 0;
}

void Replicas::Flush(ReplicaId id) {
  auto it = replicas_.find(id);
  if (it == replicas_.end()) {
    return;
  }
  Replica& r = *it->second;
  Sessions& sessions = sessions_;
  const TimePoint now = scheduler_.Now();
  r.last_delivery = now;
  const std::uint64_t tick = static_cast<std::uint64_t>((now - r.created) / r.period);
  const std::uint64_t dirty = std::exchange(r.dirty, 0);
  std::vector<SessionId> snapshot;
  // Every frame is encoded before the first send: a send can end a session, whose handlers
  // may destroy this replica.
  ReplicaFrames frames(r.id, r.name, r.fields, r.values);
  std::vector<std::pair<SessionId, std::span<const std::uint8_t>>> deltas;
  deltas.reserve(r.subscribers.size());
  std::uint64_t last_mask = 0;  // sessions owed the same fields share a frame
  std::span<const std::uint8_t> frame;
  bool deferred = false;
  const bool paced = pace_ != nullptr && !pace_->Uniform();
  for (std::size_t i = 0; i < r.subscribers.size();) {
    Replica::Subscriber& sub = r.subscribers[i];
    const Session* s = sessions.Get(sub.session);
    if (s == nullptr) {
      r.EraseAt(i);  // it left
      continue;
    }
    ++i;
    if (s->peer() == nullptr) {
      sub.synced = false;  // its link is lost: a snapshot when it resumes
      continue;
    }
    if (!sub.synced) {
      snapshot.push_back(sub.session);
      sub.synced = true;
      sub.delivered = true;
      sub.owed = 0;
      if (!r.quantized.empty()) {
        r.Remember(sub, ~std::uint64_t{0});
      }
      continue;
    }
    sub.owed |= dirty;
    if (sub.owed == 0) {
      continue;
    }
    if (paced && !Due(*s, tick)) {
      deferred = true;  // owed: it goes with the session's next tick
      ++stats_.deltas_deferred;
      continue;
    }
    const std::uint64_t mask =
        r.quantized.empty() ? sub.owed : r.Settle(sub, stats_.fields_deadbanded);
    sub.owed = 0;  // what was held back is no longer owed: only a new write can move it
    if (mask == 0) {
      continue;
    }
    if (!r.quantized.empty()) {
      r.Remember(sub, mask);
    }
    if (mask != last_mask) {
      frame = frames.Delta(mask);
      last_mask = mask;
    }
    deltas.emplace_back(sub.session, frame);
  }
  if (deferred) {
    Arm(r);  // a deferred session's tick comes without a write
  }

  const std::span<const std::uint8_t> snap_frame =
      snapshot.empty() ? std::span<const std::uint8_t>() : frames.Snapshot();

  Sessions::Hold hold(sessions);
  auto send = [&](SessionId sid, std::span<const std::uint8_t> frame, std::uint64_t& counter) {
    if (Session* s = sessions.Get(sid)) {
      ++counter;
      stats_.bytes_sent += frame.size();
      links_.SendTo(*s, frame);
    }
  };
  for (SessionId sid : snapshot) {
    send(sid, snap_frame, stats_.snapshots_sent);
  }
  for (const auto& [sid, delta] : deltas) {
    send(sid, delta, stats_.deltas_sent);
  }
}

void Replicas::SendRemove(const Replica& r, std::span<const SessionId> sessions) {
  if (sessions.empty()) {
    return;
  }
  flatbuffers::FlatBufferBuilder b(64);
  const std::span<const std::uint8_t> frame = ReplicaFrames::Remove(b, r.id);
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
