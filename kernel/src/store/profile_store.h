// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_store.h
//
// ProfileStore: where per-session profiles live (DESIGN.md §8). It speaks documents, keys,
// revisions and fenced leases, and nothing of its engine: SQLite (sqlite_store.h) is the embedded
// default, PostgreSQL for fleets comes later behind the same interface.
//
//   store.Load("user:42", "host-a", std::chrono::seconds(180), [](LoadResult r) {
//     if (r.busy()) { ... r.holder.expires ... }   // leased elsewhere: wait, then try again
//     else if (r.status.ok()) { ... r.record.data, r.record.lease.token ... }
//   });
//   store.Write({{.key = "user:42", .token = token, .data = json, .schema_version = 3,
//                 .renew_until = now + ttl}},
//               [](Status batch, std::vector<WriteResult> each) { ... });
//
// A profile is a JSON document with its schema version and revision (the number of saves), and a
// lease: the owner (a host id), a fencing token and an expiry in wall-clock milliseconds (hosts
// compare it). Load takes the lease in one transaction unless an unexpired one is held, by anyone;
// every acquisition increments the token. Every write names the token it holds: once another
// owner took the lease over, the old holder's writes fail (kStale) and can never overwrite the
// new owner's data. Writes come in batches committed as one transaction (an autosave, a drain);
// each write in a batch succeeds or fails on its own lease, the batch as a whole on the disk.
//
// Every call returns at once: the work runs on the store's own thread, and `done` runs through the
// deliver function given at construction (the kernel's loop.Post), never inside the call.
// Thread safety: the calls are safe from any thread.
#ifndef MOLT_KERNEL_STORE_PROFILE_STORE_H_
#define MOLT_KERNEL_STORE_PROFILE_STORE_H_

#include <molt/kernel/status.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernel/src/core/callback.h"

namespace molt::kernel::store {

// Milliseconds since the Unix epoch (wall clock: leases are compared across hosts).
using WallMillis = std::int64_t;
WallMillis WallNow();

struct Lease {
  std::string owner;        // the host holding it; "" when nobody does
  std::uint64_t token = 0;  // fencing token, +1 at every acquisition
  WallMillis expires = 0;
};

struct Record {
  std::string key;
  std::optional<std::string> data;  // the JSON document; nullopt for a key never saved
  std::uint32_t schema_version = 0;
  std::uint64_t revision = 0;  // saves so far (0 with no document)
  Lease lease;
  WallMillis updated = 0;  // the last save or acquisition
};

struct LoadResult {
  // kOk with `record` under this owner's lease; kFailedPrecondition when an unexpired lease is
  // held (then `holder` says whose and until when); kIoError and kInternal for the store itself.
  Status status;
  Record record;
  Lease holder;
  bool busy() const { return !holder.owner.empty(); }
};

// One profile in a batch (ProfileStore::Write).
struct Write {
  std::string key{};
  std::uint64_t token = 0;            // the lease token this host holds
  std::optional<std::string> data{};  // the new document; nullopt leaves it (renew, release)
  std::uint32_t schema_version = 0;
  WallMillis renew_until = 0;  // > 0: the lease now expires then
  bool release = false;        // let go of the lease after writing
  // Backups of a written document (docs/profiles.md, "Backups"): when the row's next backup is
  // due (its backup_at_ms; a document never backed up is due) or `backup_now`, the document is
  // also copied to the oldest of kBackupSlots slots and the next is due `backup_every` later.
  WallMillis backup_every = 0;  // milliseconds; 0: no backups
  bool backup_now = false;
  bool mirror = false;  // also copy every written document to the "live" slot
};

// The rotating backup slots per key (slots 0..2; the mirror is slot kMirrorSlot).
inline constexpr int kBackupSlots = 3;
inline constexpr int kMirrorSlot = -1;

// A copy of a profile's document, taken by its lease holder.
struct Backup {
  int slot = 0;  // 0..kBackupSlots-1, or kMirrorSlot
  std::string data;
  std::uint32_t schema_version = 0;
  std::uint64_t revision = 0;  // the profile's revision it copies
  WallMillis taken = 0;
};

struct WriteResult {
  // kOk; kStale when the lease is no longer this token's (taken over, or released); the batch's
  // own failure (a full disk) otherwise.
  Status status;
  std::uint64_t revision = 0;  // the revision now stored
};

// How long operations took, from the call to the result being ready (the queue's wait and the
// transaction): counts per bucket of kStoreLatencyBounds (seconds), the last above them all.
inline constexpr std::array<double, 11> kStoreLatencyBounds = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
struct StoreLatency {
  std::array<std::uint64_t, kStoreLatencyBounds.size() + 1> counts{};
  double sum_seconds = 0;
};

struct StoreStats {
  std::uint64_t loads = 0;
  std::uint64_t busy = 0;      // loads refused by a lease held elsewhere
  std::uint64_t batches = 0;   // write transactions committed
  std::uint64_t writes = 0;    // profiles written in them
  std::uint64_t stale = 0;     // writes refused: the lease was lost
  std::uint64_t failures = 0;  // loads and batches that failed (disk, corruption)
  std::size_t queued = 0;      // operations waiting for the store's thread
  StoreLatency load_latency;   // each load, lease taken or refused
  StoreLatency write_latency;  // each write batch (autosaves, the drain, transactions)
};

class ProfileStore {
 public:
  // Runs a completion where the caller wants it (the kernel thread: Loop::Post).
  using Deliver = std::function<void(std::function<void()>)>;

  virtual ~ProfileStore() = default;

  // Takes the lease on `key` for `owner` until now + `ttl` and returns the record (a key never
  // saved comes back with no data, revision 0, and is leased all the same).
  virtual void Load(std::string key, std::string owner, std::chrono::milliseconds ttl,
                    Callback<void(LoadResult)> done) = 0;
  // Writes `batch` in one transaction. `done` gets the batch's status (a failure there failed
  // every write: nothing of it is stored) and one result per write, in order.
  virtual void Write(std::vector<store::Write> batch,
                     Callback<void(Status, std::vector<WriteResult>)> done) = 0;
  // Reads `key` without a lease (operators, tools): kNotFound when there is no such key.
  virtual void Read(std::string key, Callback<void(Result<Record>)> done) = 0;
  // The backups of `key`, newest first, read without a lease (operators, the restore).
  virtual void ListBackups(std::string key, Callback<void(Result<std::vector<Backup>>)> done) = 0;
  // Writes `batch` in one transaction that commits only if every write holds its lease, and
  // records `id` in it: an id already committed refuses the whole batch (kAlreadyExists), so a
  // replayed transaction never applies twice. A write whose lease is lost refuses it too (kStale,
  // naming the key); nothing of a refused batch is stored.
  virtual void Transact(std::string id, std::vector<store::Write> batch,
                        Callback<void(Status, std::vector<WriteResult>)> done) = 0;
  // Ends, in one transaction, every unexpired lease whose owner `abandoned` says is gone (a
  // server of this host that was killed: its leases would otherwise keep its players out until
  // they expire). `done` gets (owner, leases ended) per owner. `abandoned` runs on the store's
  // thread. The ended holder's tokens stay fenced: it could not write again anyway.
  using Abandoned = std::function<bool(const std::string& owner)>;
  virtual void ReleaseAbandoned(
      Abandoned abandoned,
      Callback<void(Result<std::vector<std::pair<std::string, std::size_t>>>)> done) = 0;
  virtual StoreStats stats() const = 0;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_STORE_H_
