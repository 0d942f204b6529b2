// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/host_layer.h
//
// HostLayer: what a host adds to the core (the server's network and profile stores, the client's
// connection): the slots it installs with AbiShared::mutable_api(), and the release of what
// plugins hold in it. AbiShared (abi_shared.h) keeps the layers; a plugin instance
// (plugin_instance.h) tells each one when it stops and when one of its resources of a layer kind
// goes; the loader's swap (loader/generation_swap.h) brackets a handoff. Implemented by
// net/net_layer.h, store/profile_layer.h, the client's layer and the workers', live values' and
// fleet's layers; it includes nothing of theirs.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_ABI_HOST_LAYER_H_
#define MOLT_KERNEL_ABI_HOST_LAYER_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>

#include <cstdint>
#include <string>
#include <vector>

namespace molt::kernel::abi {

class HostLayer {
 public:
  virtual ~HostLayer() = default;
  // A plugin instance stops: what it bound there (session bindings, ...) is released first.
  virtual void ReleaseOwner(const void* owner) = 0;
  // One of `owner`'s resources of a layer kind (kChannel, kReplica) is released; `handle` is the
  // plugin's handle of it.
  virtual void Release(const void* owner, molt_handle_t handle, std::uint8_t kind,
                       std::uint32_t id) = 0;
  // A swap (loader/generation_swap.h). Between BeginHandoff() and EndHandoff() the kernel-owned
  // objects a stopping generation releases (channels, profile stores) are kept for the next one to
  // adopt; Serve() makes what a mounted (dormant) instance declared live, adopting by name (an
  // error fails the swap); EndHandoff() retires what nobody adopted and returns a line per object
  // for the swap report.
  virtual void BeginHandoff() {}
  virtual Status Serve(const void* /*owner*/) { return Status::Ok(); }
  virtual std::vector<std::string> EndHandoff() { return {}; }
  // Whether a generation serves; while none does the host admits nobody new (the server
  // refuses handshakes saying it is starting).
  virtual void SetServing(bool /*serving*/) {}
};

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_HOST_LAYER_H_
