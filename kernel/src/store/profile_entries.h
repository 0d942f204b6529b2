// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_entries.h
//
// ProfileEntries: the profiles one store (Profiles, profiles.h) holds in memory, by id: a
// session's under the session's id, a manual key's (a guild's bank, a world's state) under an id
// of its own from kManualKeyIds up, found again by its key. An entry lives from the join (or
// LoadKey) until its final save, a failure or the drain erases it. The table also says whether
// the store is closing (the drain began): from then on no load is kept and no autosave armed.
//
//   ProfileEntries entries;
//   ProfileEntry& e = entries.AddSession(session, "PlayerData/ada");
//   ProfileEntry& k = entries.AddKey("bank", "PlayerData/bank");   // k.session >= kManualKeyIds
//   entries.KeyId("bank") == k.session;
//   entries.Erase(k.session);                                      // KeyId("bank") == 0
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILE_ENTRIES_H_
#define MOLT_KERNEL_STORE_PROFILE_ENTRIES_H_

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/store/profile_entry.h"

namespace molt::kernel::store {

class ProfileEntries {
 public:
  ProfileEntries() = default;
  ProfileEntries(const ProfileEntries&) = delete;
  ProfileEntries& operator=(const ProfileEntries&) = delete;

  // A session's entry, pending, under the key `key` ("<store>/<user id>"); replaces an entry of
  // that id.
  ProfileEntry& AddSession(net::SessionId session, std::string key);
  // A manual key's entry, pending, under the next id of its own, found by `name` (KeyId) and
  // keyed `key` ("<store>/<name>").
  ProfileEntry& AddKey(const std::string& name, std::string key);
  // The entry of `id`, or nullptr.
  ProfileEntry* Find(net::SessionId id) const;
  // The id of the manual key `name` while its entry lives, else 0.
  net::SessionId KeyId(std::string_view name) const;
  // The manual keys held, in name order.
  std::vector<std::string> KeyNames() const;
  // Forgets the entry of `id` (and, for a manual key, its name). Nothing when there is none.
  void Erase(net::SessionId id);
  // Forgets the manual key `name` (KeyId says 0) while its entry may live on: a key released
  // while it still loads is let go when the load lands, and may be loaded again meanwhile.
  void ForgetKey(std::string_view name);

  // Every id held, in order (a copy: the caller may erase while it walks them).
  std::vector<net::SessionId> Ids() const;
  // Calls `fn` with every entry, in id order. REQUIRES: `fn` adds and erases none.
  void ForEach(const std::function<void(ProfileEntry&)>& fn) const;
  // How many entries are in `state`.
  std::size_t Count(ProfileState state) const;

  // The store closes (the drain began): no load is kept, no autosave armed, no key loaded.
  void Close() { closing_ = true; }
  bool closing() const { return closing_; }

 private:
  std::map<net::SessionId, std::unique_ptr<ProfileEntry>> entries_;
  std::map<std::string, net::SessionId, std::less<>> keys_;  // manual keys by name
  net::SessionId next_key_ = kManualKeyIds;
  bool closing_ = false;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_ENTRIES_H_
