// SPDX-License-Identifier: Apache-2.0
// ProfileLayer: store ids, staged declarations, releases and the handoff (profile_layer.h).
#include "kernel/src/store/profile_layer.h"

#include <algorithm>

#include "kernel/src/store/profile_registry.h"

namespace molt::kernel::abi {

std::uint32_t ProfileLayer::IdOf(const std::string& name) {
  auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) {
    names_.push_back(name);
    return static_cast<std::uint32_t>(names_.size());
  }
  return static_cast<std::uint32_t>(it - names_.begin() + 1);
}

void ProfileLayer::Stage(const PluginInstance& owner, std::uint32_t id, store::ProfileSpec spec) {
  staged_.Add(&owner, {id, owner.label(), std::move(spec)});
}

void ProfileLayer::Release(const void* owner, molt_handle_t /*handle*/, std::uint8_t kind,
                           std::uint32_t id) {
  if (kind != static_cast<std::uint8_t>(PluginInstance::Kind::kProfile)) {
    return;
  }
  staged_.DropIf(owner, [id](const Staged& s) { return s.id == id; });
  registry_.Detach(owner, NameOf(id));
}

Status ProfileLayer::Serve(const void* owner) {
  for (Staged& st : staged_.Take(owner)) {
    Result<store::Profiles*> p = registry_.Declare(owner, st.label, std::move(st.spec));
    if (!p.ok()) {
      return Status(p.status().code(), "plugin \"" + st.label + "\": " + p.status().message());
    }
  }
  return Status::Ok();
}

std::vector<std::string> ProfileLayer::EndHandoff() { return registry_.RetireDetached(); }

}  // namespace molt::kernel::abi
