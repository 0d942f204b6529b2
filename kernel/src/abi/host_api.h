// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/host_api.h
//
// The molt_host_api table handed to every plugin's init: the bridge between C calls and kernel
// objects. Each slot is a noexcept function in molt::kernel::abi (never exported under a plugin-
// facing name) that validates its arguments, acts for the calling plugin instance, and turns any
// failure into a status code plus the instance's error text. The slots sit above the plugin
// instance they act for (plugin_instance.h, through bridge.h); nothing below them includes this.
#ifndef MOLT_KERNEL_ABI_HOST_API_H_
#define MOLT_KERNEL_ABI_HOST_API_H_

#include <molt/molt.h>

namespace molt::kernel::abi {

// A table with the core's slots (errors, logs, Bus, hooks, scheduler, scopes, services, config,
// processes). The slots of a host layer (the server's network: net_api.h; the client's
// connection: client/client_kernel.cc) answer MOLT_ERR_UNSUPPORTED until the layer replaces
// them (layer_refusals.h). The loader hands it to the AbiShared it builds (abi_shared.h).
molt_host_api CoreHostApi();

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_HOST_API_H_
