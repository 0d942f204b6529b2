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
// Profiles is the composition of parts with one job each, sharing the profiles in memory
// (ProfileEntries, profile_entries.h) and the declaration in force (ProfileDeclaration,
// profile_declaration.h): the load lifecycle (ProfileLoader), the writes to the store
// (ProfileWriter), the autosave (ProfileAutosave), the final saves and the drain
// (ProfileFinalSaves), snapshots (ProfileSnapshots), backups (ProfileBackups) and two-profile
// transactions (ProfileTransactions). What stays here: the join, reading and writing a document,
// manual keys, and the declarations coming and going.
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILES_H_
#define MOLT_KERNEL_STORE_PROFILES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/net/session.h"
#include "kernel/src/store/profile_autosave.h"
#include "kernel/src/store/profile_backups.h"
#include "kernel/src/store/profile_declaration.h"
#include "kernel/src/store/profile_entries.h"
#include "kernel/src/store/profile_entry.h"
#include "kernel/src/store/profile_final_saves.h"
#include "kernel/src/store/profile_loader.h"
#include "kernel/src/store/profile_snapshots.h"
#include "kernel/src/store/profile_spec.h"
#include "kernel/src/store/profile_store.h"
#include "kernel/src/store/profile_transactions.h"
#include "kernel/src/store/profile_writer.h"

namespace molt::kernel::net {
class Network;
}

namespace molt::kernel::store {

class Profiles {
 public:
  using Stats = ProfileStats;
  using Mutator = ProfileTransactions::Mutator;
  static constexpr std::size_t kSnapshots = ProfileSnapshots::kKept;

  // Loads a profile for every session from now on (and those already active). `host` names this
  // host in the leases.
  Profiles(Kernel& kernel, net::Network& network, ProfileStore& store, std::string host,
           ProfileSpec spec);
  ~Profiles();
  Profiles(const Profiles&) = delete;
  Profiles& operator=(const Profiles&) = delete;

  const std::string& name() const { return declaration_.name(); }
  ProfileState state(net::SessionId session) const;
  // The document, or the value at `pointer` (JSON Pointer, RFC 6901: "/coins", "/items/0"), as
  // JSON text. kFailedPrecondition while the profile is not loaded; kNotFound for a missing path.
  Result<std::string> Get(net::SessionId session, std::string_view pointer = "") const;
  // Replaces the document (pointer "") or the value at `pointer` (objects on the way are created)
  // with the JSON `value`, and marks the profile dirty.
  Status Set(net::SessionId session, std::string_view pointer, std::string_view value);

  // Writes every dirty profile now (an autosave out of turn).
  void SaveAll();
  // Leases were taken over: the loads that wait go again now (ProfileLoader::RetryWaiting).
  void RetryWaitingLoads() { loader_.RetryWaiting(); }

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

  // --- Snapshots (in memory; a rollback is saved by the next save): ProfileSnapshots ---
  // A deep copy of the session's document; returns its id (ids grow per store).
  Result<std::uint64_t> Snapshot(net::SessionId session, std::string label);
  Result<std::vector<SnapshotInfo>> Snapshots(net::SessionId session) const;
  // Puts snapshot `id` back as the document (it stays kept); kNotFound for an evicted or
  // unknown id.
  Status Rollback(net::SessionId session, std::uint64_t id);

  // --- Backups: ProfileBackups ---
  // Backs the session's document up at its next save (autosave, SaveAll, the final save).
  Status BackupNow(net::SessionId session);

  // --- Transactions: ProfileTransactions ---
  // Changes two loaded profiles atomically: `mutate` gets copies of both documents and edits
  // them; both are validated and written in one database transaction under `id` (a replayed id
  // is refused), and only then replace the documents in memory. `done` hears the outcome (on a
  // later step when it reached the store). While it runs both profiles refuse Set (kBusy's).
  void Transact(std::string id, net::SessionId a, net::SessionId b, const Mutator& mutate,
                Callback<void(TxnResult)> done);

  bool attached() const { return declaration_.attached(); }
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
  // A session joined: its entry, its final save bound last, its load.
  void Join(net::Session& s);

  net::Network& network_;
  LogScope log_;  // "[Profiles <name>]"
  ProfileStats stats_;
  ProfileEntries entries_;
  ProfileDeclaration declaration_;
  ProfileWriter writer_;
  ProfileBackups backups_;
  ProfileLoader loader_;
  ProfileSnapshots snapshots_;
  ProfileAutosave autosave_;
  ProfileTransactions transactions_;
  ProfileFinalSaves final_saves_;
  Connection on_session_;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILES_H_
