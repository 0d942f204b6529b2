// SPDX-License-Identifier: Apache-2.0
// ProfileEntries: one store's profiles in memory, by id and by manual key (profile_entries.h).
#include "kernel/src/store/profile_entries.h"

#include <algorithm>
#include <utility>

namespace molt::kernel::store {

ProfileEntry& ProfileEntries::AddSession(net::SessionId session, std::string key) {
  auto e = std::make_unique<ProfileEntry>();
  e->session = session;
  e->key = std::move(key);
  ProfileEntry& added = *e;
  entries_[session] = std::move(e);
  return added;
}

ProfileEntry& ProfileEntries::AddKey(const std::string& name, std::string key) {
  const net::SessionId id = next_key_++;
  keys_[name] = id;
  return AddSession(id, std::move(key));
}

ProfileEntry* ProfileEntries::Find(net::SessionId id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : it->second.get();
}

net::SessionId ProfileEntries::KeyId(std::string_view name) const {
  auto it = keys_.find(name);
  return it != keys_.end() && Find(it->second) != nullptr ? it->second : 0;
}

std::vector<std::string> ProfileEntries::KeyNames() const {
  std::vector<std::string> names;
  names.reserve(keys_.size());
  for (const auto& [name, id] : keys_) {
    names.push_back(name);
  }
  return names;
}

void ProfileEntries::Erase(net::SessionId id) {
  if (entries_.erase(id) == 0 || id < kManualKeyIds) {
    return;
  }
  std::erase_if(keys_, [id](const auto& k) { return k.second == id; });
}

void ProfileEntries::ForgetKey(std::string_view name) {
  if (auto it = keys_.find(name); it != keys_.end()) {
    keys_.erase(it);
  }
}

std::vector<net::SessionId> ProfileEntries::Ids() const {
  std::vector<net::SessionId> ids;
  ids.reserve(entries_.size());
  for (const auto& [id, e] : entries_) {
    ids.push_back(id);
  }
  return ids;
}

void ProfileEntries::ForEach(const std::function<void(ProfileEntry&)>& fn) const {
  for (const auto& [id, e] : entries_) {
    fn(*e);
  }
}

std::size_t ProfileEntries::Count(ProfileState state) const {
  return std::count_if(entries_.begin(), entries_.end(),
                       [state](const auto& e) { return e.second->state == state; });
}

}  // namespace molt::kernel::store
