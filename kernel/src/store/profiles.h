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
};

enum class ProfileState { kNone, kPending, kLoaded, kFailed, kLost };
std::string_view ProfileStateName(ProfileState state);

class Profiles {
 public:
  struct Stats {
    std::uint64_t loaded = 0;
    std::uint64_t load_failures = 0;
    std::uint64_t lease_waits = 0;  // loads that found the lease held and waited
    std::uint64_t saves = 0;        // documents written
    std::uint64_t save_failures = 0;
    std::uint64_t refused = 0;  // documents `validate` refused
    std::uint64_t lost = 0;     // leases lost to another host
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

  bool attached() const { return attached_; }
  // The declaring instance lets go: validates every changed document with spec.validate (the
  // verdicts stand until the document changes), then drops migrate and validate.
  void Detach();
  // A new declaration of this store: `spec` replaces the old one (same name). Loaded documents
  // are migrated from the schema version they are at to spec.schema_version, all or none (an error
  // names the key and changes nothing); a lower schema version than the documents have is refused
  // while any is loaded. Defaults fill in; the loads that landed while detached finish.
  Status Adopt(ProfileSpec spec);
  // The close: final saves of every profile and the release of every lease, in one batch; the
  // sessions keep their connection (their final save later finds nothing to do). `done` hears how
  // many were saved and how many failed. Loads still running are released when they land.
  void Drain(Callback<void(std::size_t saved, std::size_t failed)> done);

  Stats stats() const { return stats_; }
  std::size_t loaded_count() const;

 private:
  struct Entry;
  void Load(net::SessionId session, std::uint32_t attempt);
  void OnLoaded(net::SessionId session, std::uint32_t attempt, LoadResult r);
  void Fail(net::SessionId session, const std::string& why);
  // spec_.validate's verdict on `e`'s document, or the one kept at Detach().
  Status Validate(Entry& e, const std::string& text);
  void FinalSave(net::SessionId session);
  // Lets go of the lease a load that waited for Adopt() took.
  void ReleaseParked(Entry& e);
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
  Stats stats_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // completions after the end
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILES_H_
