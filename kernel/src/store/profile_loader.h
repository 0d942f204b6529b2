// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_loader.h
//
// ProfileLoader: the load lifecycle of a profile store's profiles (Profiles, profiles.h), from the
// join (or LoadKey) to loaded or failed. A load goes to the ProfileStore off the kernel thread and
// takes the lease. Its completion:
//  - the session left, or the store closes, meanwhile: the lease is let go at once;
//  - a lease held elsewhere is waited for, tried again when it expires or after the backoff (1, 2,
//    4, 8 s), whichever comes first; one this host is releasing (the same player's previous
//    session, still in its final save: Hold) is waited for until the release lands (Released);
//  - the store unreachable (kIoError): tried again after the backoff, the profile pending;
//  - while no declaration is attached (a swap): parked, finished by FinishParked();
//  - a new profile starts from the defaults; a record is decoded by the declaration (a newer
//    schema fails closed; one that does not decode is restored from a backup, ProfileBackups);
//  - a failure publishes Kernel.ProfileFailed and kicks the session (kick_on_load_failure);
//    loaded, it publishes Kernel.ProfileLoaded(session, store). A manual key's LoadKey is told
//    instead.
//
//   loader.Load(session, 0);               // the join; Kernel.ProfileLoaded follows
//   loader.Hold("PlayerData/ada");          // a final save of it is in flight
//   loader.Released("PlayerData/ada");      // it landed: the loads that waited go again
//
// Thread safety: the kernel thread; completions come back on it (the store's deliver function).
#ifndef MOLT_KERNEL_STORE_PROFILE_LOADER_H_
#define MOLT_KERNEL_STORE_PROFILE_LOADER_H_

#include <boost/json/value.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/core/bus.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/store/profile_backups.h"
#include "kernel/src/store/profile_declaration.h"
#include "kernel/src/store/profile_entries.h"
#include "kernel/src/store/profile_store.h"

namespace molt::kernel::store {

class ProfileLoader {
 public:
  // `host` names this host in the leases it takes.
  ProfileLoader(Scheduler& scheduler, Bus& bus, ProfileStore& store, std::string host,
                ProfileEntries& entries, const ProfileDeclaration& declaration,
                ProfileBackups& backups, ProfileStats& stats, LogScope log, ProfileKick kick);
  ProfileLoader(const ProfileLoader&) = delete;
  ProfileLoader& operator=(const ProfileLoader&) = delete;

  // Loads the profile of `session`'s entry (attempt `attempt`: its backoff). Nothing when the
  // entry is gone.
  void Load(net::SessionId session, std::uint32_t attempt);
  // A final save of `key` (with the release of its lease) is in flight: a load of it that finds
  // this host's lease waits for Released(key) rather than for the lease's expiry.
  void Hold(const std::string& key);
  // The release of `key` landed: the loads that waited for it go again.
  void Released(const std::string& key);
  // Leases were taken over (a lost server's, ProfileRegistry::ReclaimLost): the loads waiting
  // for a lease or for the store go again now, not at their backoff.
  void RetryWaiting();
  // A declaration is attached again: the loads that landed while none was finish now, in turn.
  void FinishParked();
  // Lets go of the lease a parked load took (its entry is about to go).
  void ReleaseParked(ProfileEntry& e);

 private:
  void OnLoaded(net::SessionId session, LoadResult r);
  // The session left or the store closes: the lease `token` (when one was taken) is let go and
  // the entry erased; false when neither happened.
  bool LetGoIfGone(ProfileEntry& e, const Status& load, std::uint64_t token);
  // The lease is held elsewhere: the next try, or the wait for this host's own release.
  void WaitForLease(ProfileEntry& e, const LoadResult& r, std::uint32_t attempt);
  // The next try of a load after `delay`.
  void Retry(ProfileEntry& e, Duration delay, std::uint32_t attempt);
  // A record under this host's lease: defaults for a new profile, else decoded (or restored).
  void Open(ProfileEntry& e, const Record& rec);
  // A load whose record does not decode or migrate: the newest readable backup instead, or the
  // failure `why`.
  void Restore(net::SessionId session, std::uint64_t token, std::string why);
  void OnRestored(net::SessionId session, std::uint64_t token, const std::string& why,
                  Result<RestoredDocument> r);
  // Marks `e` loaded with `doc` and tells the Bus (or the manual key's LoadKey).
  void Loaded(ProfileEntry& e, boost::json::value doc, bool changed);
  void Fail(net::SessionId session, const std::string& why);

  Scheduler& scheduler_;
  Bus& bus_;
  ProfileStore& store_;
  const std::string host_;
  ProfileEntries& entries_;
  const ProfileDeclaration& declaration_;
  ProfileBackups& backups_;
  ProfileStats& stats_;
  const LogScope log_;
  const ProfileKick kick_;
  // Keys whose final save (and release) is in flight, with the loads waiting for it.
  std::map<std::string, std::vector<net::SessionId>> releasing_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // completions after the end
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_LOADER_H_
