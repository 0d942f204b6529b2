// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/replica_store.h
//
// ReplicaStore: the client's copy of the replicas the server sent this session (client API 3).
// It applies Replica messages (a snapshot replaces, a delta writes the fields it carries, a remove
// announces the end), keeps the latest value of every field whether or not anything listens, and
// keeps the app's listeners (one per replica name, plus one for every replica). It never calls
// out: Apply() returns the updates, and the connection delivers them (a callback may disconnect,
// which the store cannot see). The server is not trusted: a snapshot beyond the client's limits
// is refused, a delta for a replica never snapshotted is ignored.
//
//   std::vector<ReplicaStore::Update> updates;
//   Status s = store.Apply(*message, &updates);   // then deliver each, then Erase() a removed one
//
// Thread safety: REQUIRES the thread that steps the client.
#ifndef MOLT_KERNEL_CLIENT_REPLICA_STORE_H_
#define MOLT_KERNEL_CLIENT_REPLICA_STORE_H_

#include <molt/client.h>
#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace molt::wire {
struct Replica;
}  // namespace molt::wire

namespace molt::kernel::client {

class ReplicaStore {
 public:
  // What a server may make the client hold: the server's own replica limits, and a count.
  static constexpr std::size_t kMaxReplicas = 4096;
  static constexpr std::size_t kMaxFields = 64;
  static constexpr std::size_t kMaxName = 128;

  struct Field {
    std::string name;
    std::int32_t type = MOLT_CLIENT_FIELD_INT;  // MOLT_CLIENT_FIELD_*
    std::int64_t i = 0;
    double f = 0;
    std::vector<std::uint8_t> bytes;
  };
  struct Replica {
    std::string name;
    std::vector<Field> fields;
  };
  // One notification: replica `id`, MOLT_CLIENT_REPLICA_*, the field for CHANGED (else -1).
  struct Update {
    std::uint32_t id;
    std::int32_t what;
    std::int32_t field;
  };
  struct Listener {
    std::string name;  // empty: every replica
    molt_client_replica_fn fn = nullptr;
    void* user_data = nullptr;
  };

  // Applies one server message and appends what changed to `updates`. A removed replica stays
  // readable until Erase(), so its listeners can still read it. A snapshot beyond the limits
  // leaves the store as it was and returns the refusal, naming the limits.
  Status Apply(const molt::wire::Replica& message, std::vector<Update>* updates);
  void Erase(std::uint32_t id) { replicas_.erase(id); }
  // The held ids, ascending (a snapshot of them: delivering updates may change the store).
  std::vector<std::uint32_t> Ids(std::string_view name_filter = {}) const;

  bool Holds(std::uint32_t id) const { return replicas_.count(id) != 0; }
  bool empty() const { return replicas_.empty(); }
  // nullptr for a replica not held.
  const Replica* Find(std::uint32_t id) const;
  // The held replica named `name` with the lowest id.
  Result<std::uint32_t> FindByName(std::string_view name) const;
  // The index and type of field `name` of replica `id`.
  Status FieldIndex(std::uint32_t id, std::string_view name, std::int32_t* index,
                    std::int32_t* type) const;
  // Field `index` of replica `id`, when it has `type`.
  Result<const Field*> FieldAt(std::uint32_t id, std::int32_t index, std::int32_t type) const;
  // Field `field` of the held replica named `replica` as a molt_value (bytes point into the store,
  // valid until the next update): what controllers read through client_replica_get.
  Status Value(std::string_view replica, std::string_view field, molt_value* out) const;

  // Sets the listener for `name` (empty: every replica), replacing the old one; a null `fn`
  // removes it.
  void Listen(std::string name, molt_client_replica_fn fn, void* user_data);
  // Who hears an update of replica `id`: the listener of its name, then the one for every
  // replica. Copies: a callback may replace its own listener.
  std::vector<Listener> ListenersOf(std::uint32_t id) const;
  void ClearListeners() { listeners_.clear(); }

 private:
  std::map<std::uint32_t, Replica> replicas_;
  std::vector<Listener> listeners_;
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_REPLICA_STORE_H_
