// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/fleet/kv_api.h
//
// The key-value slot of the host API (ABI 1.9; spec §9.7 MemoryDriver): AttachKv() adds a layer
// that hands plugins' kv_call to `kv`, each plugin's keys under its own name. Call it before
// loading plugins; without it the slot answers MOLT_ERR_UNSUPPORTED.
//
// What a generation holds here, and what a swap does with it: a call's done function points into
// the plugin's library, so a call still running when its instance stops is the instance's: its
// `release` runs then and its done function never does; the keys are the kernel's (the fleet's),
// and the next generation reads them as they are.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_FLEET_KV_API_H_
#define MOLT_KERNEL_FLEET_KV_API_H_

#include "kernel/src/abi/plugin_instance.h"

namespace molt::kernel::fleet {

class KvStore;

void AttachKv(abi::AbiShared& shared, KvStore& kv);

}  // namespace molt::kernel::fleet

#endif  // MOLT_KERNEL_FLEET_KV_API_H_
