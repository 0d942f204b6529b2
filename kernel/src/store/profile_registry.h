// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_registry.h
//
// ProfileRegistry: the server's profile stores (store::Profiles) by name. The kernel owns them,
// like the sessions: a plugin declares a store (the ABI's profile_declare, store/profile_api.cc)
// and holds it while it runs; when it stops the store is detached, not closed, and the next
// declaration of the name adopts it with every loaded profile. A store nobody adopted by the end
// of a swap is retired: its profiles get their final saves and release their leases. At the
// close, Drain() final-saves every store.
//
//   ProfileRegistry profiles(kernel, network, store, HostId());
//   Result<Profiles*> p = profiles.Declare(owner, "scores", std::move(spec));
//   profiles.Detach(owner, *p);            // the declaring instance stopped
//   profiles.RetireDetached();             // the swap is over and nobody declared it again
//   profiles.Drain([](std::size_t saved, std::size_t failed) { ... });   // the close
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILE_REGISTRY_H_
#define MOLT_KERNEL_STORE_PROFILE_REGISTRY_H_

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/store/profiles.h"

namespace molt::kernel::store {

// This process as a lease owner: "<hostname>:<pid>:<start time in ms>", unique per run, so a
// restarted server never mistakes the leases of the run it replaces (killed, say) for its own.
std::string HostId();
// Whether `owner` (a HostId()) names a process of this host that no longer exists.
bool GoneFromThisHost(const std::string& owner);

class ProfileRegistry {
 public:
  ProfileRegistry(Kernel& kernel, net::Network& network, ProfileStore& store, std::string host);
  ~ProfileRegistry();
  ProfileRegistry(const ProfileRegistry&) = delete;
  ProfileRegistry& operator=(const ProfileRegistry&) = delete;

  // The checks a declaration passes before anything is created: the name ([A-Za-z0-9_.-],
  // 1..64 characters), the defaults (a JSON object), the periods. Errors name the field.
  static Status Check(const ProfileSpec& spec);
  // `owner` (a plugin instance; `label` names it in errors) declares `spec.name`: a new store, or
  // the adoption of a detached one (Profiles::Adopt). kAlreadyExists when it is held.
  Result<Profiles*> Declare(const void* owner, const std::string& label, ProfileSpec spec);
  // `owner` lets go of the store `name` (nothing when it does not hold it).
  void Detach(const void* owner, std::string_view name);
  // The store `name` when `owner` holds it, else nullptr.
  Profiles* Held(const void* owner, std::string_view name) const;
  Profiles* Find(std::string_view name) const;
  // Ends the leases still held by servers of this host that are gone (killed: their leases
  // would keep their players out until expiry), logging each; before the first loads (the
  // store runs them in order).
  void ReclaimAbandoned();
  // Ends the leases held by `lost`, the lease owners of the servers the fleet has lost (no
  // heartbeat for three intervals: fleet::LostLeaseOwners), logging each, and the loads waiting
  // go again at once: a crashed server's players load here in seconds, not at the lease's
  // expiry. Safe because the leases are fenced: a server that was only cut off finds its next
  // write refused. An owner taken over is not asked for again while it stays lost.
  void ReclaimLost(std::set<std::string> lost);
  // The end of a swap: final-saves and removes every store nobody holds (their names, for the
  // swap report); the others forget what their adoption migrated (Profiles::ForgetUndo).
  std::vector<std::string> RetireDetached();
  // The close: every store's final saves and lease releases (Profiles::Drain); `done` once all
  // are written, with the totals.
  void Drain(Callback<void(std::size_t saved, std::size_t failed)> done);

  ProfileStore& store() const { return store_; }
  const std::string& host() const { return host_; }
  // Every store, in name order.
  std::vector<const Profiles*> stores() const;

 private:
  struct Slot {
    std::unique_ptr<Profiles> profiles;
    const void* owner = nullptr;  // nullptr: detached
    std::string label;            // the owner's, for errors
  };
  // Keeps `p` alive until its drain finished writing, then frees it on a later step.
  void Retire(std::unique_ptr<Profiles> p);

  Kernel& kernel_;
  net::Network& network_;
  ProfileStore& store_;
  std::string host_;
  std::map<std::string, Slot, std::less<>> slots_;
  std::vector<std::unique_ptr<Profiles>> retiring_;
  std::set<std::string> reclaimed_;  // lost owners taken over (ReclaimLost)
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_REGISTRY_H_
