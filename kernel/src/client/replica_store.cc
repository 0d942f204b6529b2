// SPDX-License-Identifier: Apache-2.0
// ReplicaStore: snapshots, deltas and removes from the server; reads and listeners for the app.
#include "kernel/src/client/replica_store.h"

#include <algorithm>

#include "molt_wire_generated.h"

namespace molt::kernel::client {
namespace {

namespace w = ::molt::wire;

const char* TypeName(std::int32_t type) {
  static const char* kTypes[] = {"int", "float", "bytes"};
  return type >= 0 && type <= 2 ? kTypes[type] : "unknown";
}

// Copies the message's values into `r`; a value for a field it does not have is ignored.
void Write(ReplicaStore::Replica& r, const w::Replica& m, std::uint32_t id,
           std::vector<ReplicaStore::Update>* changed) {
  if (m.values() == nullptr) {
    return;
  }
  for (const w::ReplicaValue* v : *m.values()) {
    if (v->field() >= r.fields.size()) {
      continue;
    }
    ReplicaStore::Field& f = r.fields[v->field()];
    switch (f.type) {
      case MOLT_CLIENT_FIELD_INT:
        f.i = v->int_value();
        break;
      case MOLT_CLIENT_FIELD_FLOAT:
        f.f = v->float_value();
        break;
      case MOLT_CLIENT_FIELD_BYTES:
        if (v->bytes() != nullptr) {
          f.bytes.assign(v->bytes()->begin(), v->bytes()->end());
        } else {
          f.bytes.clear();
        }
        break;
      default:
        continue;
    }
    if (changed != nullptr) {
      changed->push_back({id, MOLT_CLIENT_REPLICA_CHANGED, v->field()});
    }
  }
}

}  // namespace

Status ReplicaStore::Apply(const w::Replica& m, std::vector<Update>* updates) {
  const std::uint32_t id = m.id();
  switch (m.kind()) {
    case w::ReplicaUpdateKind::Snapshot: {
      const std::size_t fields = m.fields() != nullptr ? m.fields()->size() : 0;
      const std::size_t name = m.name() != nullptr ? m.name()->size() : 0;
      if (fields > kMaxFields || name > kMaxName ||
          (!Holds(id) && replicas_.size() >= kMaxReplicas)) {
        return Status::InvalidArgument("the server sent a replica beyond the client's limits (" +
                                       std::to_string(kMaxReplicas) + " replicas, " +
                                       std::to_string(kMaxFields) + " fields, names of " +
                                       std::to_string(kMaxName) + " bytes)");
      }
      Replica r;
      r.name = m.name() != nullptr ? m.name()->str() : "";
      if (m.fields() != nullptr) {
        for (const w::ReplicaFieldInfo* info : *m.fields()) {
          Field f;
          f.name = info->name() != nullptr ? info->name()->str() : "";
          f.type = static_cast<std::int32_t>(info->type());
          r.fields.push_back(std::move(f));
        }
      }
      Write(r, m, id, nullptr);
      replicas_[id] = std::move(r);
      updates->push_back({id, MOLT_CLIENT_REPLICA_SNAPSHOT, -1});
      return Status::Ok();
    }
    case w::ReplicaUpdateKind::Delta: {
      auto it = replicas_.find(id);
      if (it != replicas_.end()) {  // else: no snapshot to apply it to
        Write(it->second, m, id, updates);
      }
      return Status::Ok();
    }
    case w::ReplicaUpdateKind::Remove:
      if (Holds(id)) {
        updates->push_back({id, MOLT_CLIENT_REPLICA_REMOVED, -1});
      }
      return Status::Ok();
  }
  return Status::Ok();  // a kind from a newer server: ignored
}

std::vector<std::uint32_t> ReplicaStore::Ids(std::string_view name_filter) const {
  std::vector<std::uint32_t> ids;
  for (const auto& [id, r] : replicas_) {
    if (name_filter.empty() || r.name == name_filter) {
      ids.push_back(id);
    }
  }
  return ids;
}

const ReplicaStore::Replica* ReplicaStore::Find(std::uint32_t id) const {
  auto it = replicas_.find(id);
  return it == replicas_.end() ? nullptr : &it->second;
}

Result<std::uint32_t> ReplicaStore::FindByName(std::string_view name) const {
  for (const auto& [id, r] : replicas_) {
    if (r.name == name) {
      return id;
    }
  }
  return Status::NotFound("no replica \"" + std::string(name) +
                          "\" is held (not sent yet, or not to this session)");
}

Status ReplicaStore::FieldIndex(std::uint32_t id, std::string_view name, std::int32_t* index,
                                std::int32_t* type) const {
  const Replica* r = Find(id);
  if (r == nullptr) {
    return Status::NotFound("replica " + std::to_string(id) + " is not held");
  }
  for (std::size_t i = 0; i < r->fields.size(); ++i) {
    if (r->fields[i].name == name) {
      if (index != nullptr) {
        *index = static_cast<std::int32_t>(i);
      }
      if (type != nullptr) {
        *type = r->fields[i].type;
      }
      return Status::Ok();
    }
  }
  return Status::NotFound("replica \"" + r->name + "\" has no field \"" + std::string(name) + "\"");
}

Result<const ReplicaStore::Field*> ReplicaStore::FieldAt(std::uint32_t id, std::int32_t index,
                                                         std::int32_t type) const {
  const Replica* r = Find(id);
  if (r == nullptr) {
    return Status::NotFound("replica " + std::to_string(id) + " is not held");
  }
  if (index < 0 || static_cast<std::size_t>(index) >= r->fields.size()) {
    return Status::InvalidArgument("replica \"" + r->name + "\" has no field " +
                                   std::to_string(index) + " (it has " +
                                   std::to_string(r->fields.size()) + ")");
  }
  const Field& f = r->fields[static_cast<std::size_t>(index)];
  if (f.type != type) {
    return Status::InvalidArgument("replica \"" + r->name + "\": field \"" + f.name + "\" is " +
                                   TypeName(f.type) + ", not " + TypeName(type));
  }
  return &f;
}

Status ReplicaStore::Value(std::string_view replica, std::string_view field,
                           molt_value* out) const {
  MOLT_ASSIGN_OR_RETURN(std::uint32_t id, FindByName(replica));
  std::int32_t index = 0;
  MOLT_RETURN_IF_ERROR(FieldIndex(id, field, &index, nullptr));
  const Field& f = Find(id)->fields[static_cast<std::size_t>(index)];
  *out = molt_value{};
  if (f.type == MOLT_CLIENT_FIELD_INT) {
    out->type = MOLT_VALUE_INT;
    out->as.i = f.i;
  } else if (f.type == MOLT_CLIENT_FIELD_FLOAT) {
    out->type = MOLT_VALUE_DOUBLE;
    out->as.d = f.f;
  } else {
    out->type = MOLT_VALUE_BYTES;
    out->size = static_cast<std::uint32_t>(f.bytes.size());
    out->as.ptr = f.bytes.data();
  }
  return Status::Ok();
}

void ReplicaStore::Listen(std::string name, molt_client_replica_fn fn, void* user_data) {
  std::erase_if(listeners_, [&](const Listener& l) { return l.name == name; });
  if (fn != nullptr) {
    listeners_.push_back({std::move(name), fn, user_data});
  }
}

std::vector<ReplicaStore::Listener> ReplicaStore::ListenersOf(std::uint32_t id) const {
  std::vector<Listener> out;
  const Replica* r = Find(id);
  if (r == nullptr) {
    return out;
  }
  const Listener* any = nullptr;
  for (const Listener& l : listeners_) {
    if (l.name.empty()) {
      any = &l;
    } else if (l.name == r->name) {
      out.push_back(l);
    }
  }
  if (any != nullptr) {
    out.push_back(*any);
  }
  return out;
}

}  // namespace molt::kernel::client
