// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profiles.h
//
// Profiles: the DataDriver (spec §10): one named profile per session, kept by the kernel in a
// ProfileStore (profile_store.h) under a fenced lease, so it survives every hot swap.
//
//   store::ProfileSpec spec;
//   spec.name = "PlayerData";                       // keys are "PlayerData/<user id>"
//   spec.defaults = R"({"coins":0,"items":[]})";
//   spec.schema_version = 2;
//   spec.migrate = [](std::uint32_t from, std::string doc) -> Result<std::string> { ... };
//   store::Profiles profiles(kernel, network, store, "host-a", std::move(spec));
//   bus: Kernel.ProfileLoaded(session, "PlayerData")
//   profiles.Set(session, "/coins", "10");          // marks the profile dirty
//   profiles.Get(session, "/coins");                // "10"
//
// Lifecycle of a session's profile:
//  - On join it loads off the kernel thread (state kPending) and takes the lease. A lease held
//    elsewhere is waited for: the load is tried again when the holder's lease expires, or after
//    the backoff (1, 2, 4, 8 s) when that comes first; a lease this host is releasing (the same
//    player's previous session, still in its final save) is waited for until the release lands.
//  - The document is checked: JSON object text, a schema version this build reads (a newer one
//    fails closed), migrated one step at a time to `schema_version`, then missing fields are filled
//    from `defaults`. A load that fails for any reason kicks the session (kick_on_load_failure,
//    the default) instead of substituting the defaults: defaults overwriting a real record is how
//    wipes happen. Kernel.ProfileLoaded(session, name) then marks it kLoaded.
//  - Writes (Set) mark it dirty. Every `autosave` period (with ±10% jitter) one batch writes every
//    dirty profile and renews every lease (built a millisecond slice per scheduler step, so the
//    kernel thread is never held for long); a document `validate` refuses is not written (the error
//    is logged, the lease still renewed). A failed batch (a full disk) keeps the profiles dirty and
//    is tried again after the backoff. A write refused for a lost lease (another host took it
//    over) stops that profile for good and kicks its session with the reason.
//  - The final save runs in the session's last binding (after every ordinary one): a last write
//    and the release of the lease. Drain() does the same for every profile at once (the close).
//
// The spec's callbacks (migrate, validate) belong to the plugin instance that declared the store
// (store/profile_api.cc); the profiles belong to the kernel. Detach() lets the callbacks go (a
// swap, a stop): every changed document is validated first and the verdict kept, so the saves
// made while no build is attached keep the gate; loads that land meanwhile wait. Adopt() gives
// the store to the next declaration: documents are migrated to its schema version, defaults fill
// in, the waiting loads finish.
//
// The driver is one class whose member functions live in one file per job: profiles.cc (the load
// lifecycle, reading and writing, autosave, the final save and the drain, manual keys,
// declarations), profile_snapshots.cc, profile_backups.cc (BackupNow and the restore of a load
// from a backup) and profile_transactions.cc. They share the per-profile state (Entry,
// profile_entry.h) and the JSON helpers (profile_document.h).
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILES_H_
#define MOLT_KERNEL_STORE_PROFILES_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/net/session.h"
#include "kernel/src/store/profile_store.h"

namespace boost::json {
class value;
}

namespace molt::kernel::net {
class Network;
}

namespace molt::kernel::store {

struct ProfileSpec {
  std::string name;             // the store's name: a session's key is "<name>/<user id>"
  std::string defaults = "{}";  // a JSON object: missing fields are filled from it
  std::uint32_t schema_version = 0;
  // One migration step: the document at version `from` -> at `from + 1`. An error, or no
  // function while a step is needed, fails the load (fail closed).
  std::function<Result<std::string>(std::uint32_t from, std::string document)> migrate;
  // Gates every save: an error refuses to write that document.
  std::function<Status(std::string_view document)> validate;
  Duration autosave = std::chrono::seconds(60);
  Duration lease_ttl = std::chrono::seconds(180);
  std::vector<Duration> backoff = {std::chrono::seconds(1), std::chrono::seconds(2),
                                   std::chrono::seconds(4), std::chrono::seconds(8)};
  bool kick_on_load_failure = true;
  // Backups (docs/profiles.md): the holder copies a saved document to one of 3 rotating slots
  // when the row says one is due, then schedules the next this long after; zero: no backups.
  Duration backup_interval = std::chrono::hours(24);
  bool mirror = false;  // also copy every save to the "live" slot
};

enum class ProfileState { kNone, kPending, kLoaded, kFailed, kLost };
std::string_view ProfileStateName(ProfileState state);

// A snapshot of a loaded profile (in memory, the newest kSnapshots per profile).
struct SnapshotInfo {
  std::uint64_t id = 0;
  std::string label;
  WallMillis taken = 0;
};

// How a two-profile transaction ended (spec: Transactions.atomic's reasons).
enum class TxnReason {
  kOk,
  kAborted,               // the mutator declined (MOLT_ERR_REJECTED / Status::Rejected)
  kMutatorError,          // it failed otherwise, or returned what is not a JSON object
  kSaveAFailed,           // profile A's save was refused (validate, its lease, the disk)
  kSaveBFailed,           // profile B's
  kProfileInactive,       // one of them is not loaded
  kSameProfile,           // A and B are one profile
  kBusy,                  // one of them is in another transaction
  kDuplicateTransaction,  // the id was committed before: a replay
};
std::string_view TxnReasonName(TxnReason reason);
struct TxnResult {
  TxnReason reason = TxnReason::kOk;
  std::string message;  // "" when kOk
  bool ok() const { return reason == TxnReason::kOk; }
};

class Profiles {
 public:
  struct Stats {
    std::uint64_t loaded = 0;
    std::uint64_t load_failures = 0;
    std::uint64_t lease_waits = 0;  // loads that found the lease held and waited
    std::uint64_t saves = 0;        // documents written
    std::uint64_t save_failures = 0;
    std::uint64_t refused = 0;       // documents `validate` refused
    std::uint64_t lost = 0;          // leases lost to another host
    std::uint64_t restored = 0;      // loads restored from a backup
    std::uint64_t transactions = 0;  // committed
  };

  // Loads a profile for every session from now on (and those already active). `host` names this
  // host in the leases.
  Profiles(Kernel& kernel, net::Network& network, ProfileStore& store, std::string host,
           ProfileSpec spec);
  ~Profiles();
  Profiles(const Profiles&) = delete;
  Profiles& operator=(const Profiles&) = delete;

  const std::string& name() const { return spec_.name; }
  ProfileState state(net::SessionId session) const;
  // The document, or the value at `pointer` (JSON Pointer, RFC 6901: "/coins", "/items/0"), as
  // JSON text. kFailedPrecondition while the profile is not loaded; kNotFound for a missing path.
  Result<std::string> Get(net::SessionId session, std::string_view pointer = "") const;
  // Replaces the document (pointer "") or the value at `pointer` (objects on the way are created)
  // with the JSON `value`, and marks the profile dirty.
  Status Set(net::SessionId session, std::string_view pointer, std::string_view value);

  // Writes every dirty profile now (an autosave out of turn).
  void SaveAll();

  // --- Manual keys: profiles not tied to a session (a guild's bank, a world's state) ---
  // Loads "<name>/<key>" under this host's lease (one held elsewhere is waited for, as for a
  // session: expiry or backoff); `done` hears OK once it is loaded, or why not (a key that failed
  // to load is forgotten). It is then read, written, saved, snapshotted and transacted like a
  // session's profile, through the id KeySession(key) gives; autosaves and the drain include it.
  void LoadKey(const std::string& key, Callback<void(Status)> done);
  // The id of a loaded (or loading) key for the calls that take a session; 0 when there is none.
  net::SessionId KeySession(const std::string& key) const;
  // The final save and the release of one key (kNotFound when it is not here).
  Status ReleaseKey(const std::string& key);
  // The same for every key (sessions' profiles are not touched).
  void ReleaseAllKeys();

  // --- Snapshots (in memory; a rollback is saved by the next save): profile_snapshots.cc ---
  static constexpr std::size_t kSnapshots = 8;
  // A deep copy of the session's document; returns its id (ids grow per store).
  Result<std::uint64_t> Snapshot(net::SessionId session, std::string label);
  Result<std::vector<SnapshotInfo>> Snapshots(net::SessionId session) const;
  // Puts snapshot `id` back as the document (it stays kept); kNotFound for an evicted or
  // unknown id.
  Status Rollback(net::SessionId session, std::uint64_t id);

  // --- Backups: profile_backups.cc ---
  // Backs the session's document up at its next save (autosave, SaveAll, the final save).
  Status BackupNow(net::SessionId session);

  // --- Transactions: profile_transactions.cc ---
  // Changes two loaded profiles atomically: `mutate` gets copies of both documents and edits
  // them; both are validated and written in one database transaction under `id` (a replayed id
  // is refused), and only then replace the documents in memory. `done` hears the outcome (on a
  // later step when it reached the store). While it runs both profiles refuse Set (kBusy's).
  using Mutator = std::function<Status(std::string& a, std::string& b)>;
  void Transact(std::string id, net::SessionId a, net::SessionId b, const Mutator& mutate,
                Callback<void(TxnResult)> done);

  bool attached() const { return attached_; }
  // The declaring instance lets go: validates every changed document with spec.validate (the
  // verdicts stand until the document changes), then drops migrate and validate.
  void Detach();
  // A new declaration of this store: `spec` replaces the old one (same name). Loaded documents
  // are migrated from the schema version they are at to spec.schema_version, all or none (an error
  // names the key and changes nothing); a lower schema version than the documents have is refused
  // while any is loaded. Defaults fill in; the loads that landed while detached finish.
  Status Adopt(ProfileSpec spec);
  // Adopt() keeps the documents its migration replaced until the swap ends: should the swap fail
  // after it, the restored build (at the older schema version) takes them back. The end of the
  // swap forgets them.
  void ForgetUndo();
  // The close: final saves of every profile and the release of every lease, in one batch; the
  // sessions keep their connection (their final save later finds nothing to do). `done` hears how
  // many were saved and how many failed. Loads still running are released when they land.
  void Drain(Callback<void(std::size_t saved, std::size_t failed)> done);

  Stats stats() const { return stats_; }
  std::size_t loaded_count() const;

 private:
  struct Entry;  // one profile's state (profile_entry.h)
  void Load(net::SessionId session, std::uint32_t attempt);
  void OnLoaded(net::SessionId session, LoadResult r);
  void Fail(net::SessionId session, const std::string& why);
  // spec_.validate's verdict on `e`'s document, or the one kept at Detach().
  Status Validate(Entry& e, const std::string& text);
  void FinalSave(net::SessionId session);
  // Lets go of the lease a load that waited for Adopt() took.
  void ReleaseParked(Entry& e);
  // The document as loaded (`data`, at schema version `from`): parsed, migrated, defaults
  // filled; `changed` when it differs from what is stored.
  Result<boost::json::value> Decode(const std::string& data, std::uint32_t from,
                                    const std::string& where, bool* changed) const;
  // A load whose record does not decode or migrate: the newest readable backup instead, or
  // the failure `why` (profile_backups.cc).
  void Restore(net::SessionId session, std::uint64_t token, std::string why);
  // Marks `e` loaded with `doc` and tells the Bus.
  void Loaded(Entry& e, boost::json::value doc, bool changed);
  // A write refused for a lost lease: the profile stops for good and its session is kicked.
  void Lose(Entry& e, const Status& why);
  // A transaction on `e` ended: the final save it held back runs (profile_transactions.cc).
  void EndTransaction(Entry* e);
  void Autosave();
  struct Pass;
  void ContinuePass();
  // The kernel-thread time an autosave takes per step while it builds its batch.
  static constexpr Duration kAutosaveSlice = std::chrono::milliseconds(1);
  void ArmAutosave(Duration delay);
  // The write for `e` in a batch: its document when dirty and valid, a renewal, and/or a release.
  Write WriteFor(Entry& e, bool release);
  void OnWritten(std::vector<std::pair<net::SessionId, std::uint64_t>> sent, Status batch,
                 std::vector<WriteResult> results);
  // Writes `batch` and hands `done` its results once it is stored: a batch the store fails (a
  // full disk) is tried again after the backoff, for as long as this object lives. `what` names
  // it in the warnings.
  struct Persisting;
  void Persist(std::vector<Write> batch, std::string what,
               Callback<void(std::vector<WriteResult>)> done);
  void Send(std::shared_ptr<Persisting> job);
  Duration Backoff(std::uint32_t attempt) const;
  Entry* Find(net::SessionId session) const;

  Kernel& kernel_;
  net::Network& network_;
  ProfileStore& store_;
  std::string host_;
  ProfileSpec spec_;
  LogScope log_;                                  // "[Profiles <name>]"
  std::unique_ptr<boost::json::value> defaults_;  // spec_.defaults, parsed once
  std::map<net::SessionId, std::unique_ptr<Entry>> entries_;
  // Keys whose final save (and release) is in flight, with the loads waiting for it.
  std::map<std::string, std::vector<net::SessionId>> releasing_;
  Connection on_session_;
  TaskHandle autosave_;
  std::unique_ptr<Pass> pass_;        // the autosave building its batch
  std::uint32_t failed_batches_ = 0;  // in a row: the backoff step
  bool draining_ = false;
  bool attached_ = true;
  std::size_t transactions_ = 0;         // in flight
  Callback<void()> after_transactions_;  // a Drain that waits for them
  std::uint64_t next_snapshot_ = 1;
  struct Undo;
  std::unique_ptr<Undo> undo_;  // the documents before the last adoption's migration
  // Manual keys: key -> its id (kKeyIds and up: never a session's).
  static constexpr net::SessionId kKeyIds = net::SessionId{1} << 62;
  std::map<std::string, net::SessionId, std::less<>> keys_;
  net::SessionId next_key_ = kKeyIds;
  std::uint64_t next_txn_ = 1;
  Stats stats_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // completions after the end
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILES_H_
