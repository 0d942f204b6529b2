// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_layer.h
//
// ProfileLayer: the server's profile stores as a host layer (abi/plugin_instance.h, HostLayer),
// what the profile slots (profile_api.cc) reach through AbiShared::Layer<ProfileLayer>(). A store
// belongs to the kernel (its registry), so a plugin instance only attaches to it: a release
// detaches, a swap's next generation attaches again by name, and what nobody attached is retired
// at the handoff's end. A dormant instance's declarations wait here (staged) until it serves.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILE_LAYER_H_
#define MOLT_KERNEL_STORE_PROFILE_LAYER_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/abi/staged_declarations.h"
#include "kernel/src/store/profiles.h"

namespace molt::kernel::store {
class ProfileRegistry;
}  // namespace molt::kernel::store

namespace molt::kernel::abi {

class ProfileLayer final : public HostLayer {
 public:
  explicit ProfileLayer(store::ProfileRegistry& registry) : registry_(registry) {}
  store::ProfileRegistry& registry() { return registry_; }

  // The layer id of the store `name` (a resource's layer_id), the same for every declaration.
  std::uint32_t IdOf(const std::string& name);
  const std::string& NameOf(std::uint32_t id) const { return names_.at(id - 1); }

  // A dormant instance's declaration: made when its generation serves.
  void Stage(const PluginInstance& owner, std::uint32_t id, store::ProfileSpec spec);

  void ReleaseOwner(const void* owner) override { staged_.Drop(owner); }
  void Release(const void* owner, molt_handle_t handle, std::uint8_t kind,
               std::uint32_t id) override;
  Status Serve(const void* owner) override;
  std::vector<std::string> EndHandoff() override;

 private:
  struct Staged {
    std::uint32_t id;
    std::string label;
    store::ProfileSpec spec;
  };
  store::ProfileRegistry& registry_;
  std::vector<std::string> names_;  // by layer id - 1
  StagedDeclarations<Staged> staged_;
};

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_STORE_PROFILE_LAYER_H_
