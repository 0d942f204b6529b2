// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/live/live_api.h
//
// The live values slots of the host API (ABI 1.7; spec: LiveConfig): AttachLive() adds a layer
// that hands plugins' live_declare and live_get calls to `live`. Call it before loading plugins;
// without it the slots answer MOLT_ERR_UNSUPPORTED.
//
// What a generation holds here, and what a swap does with it: a declaration and its check point
// into the plugin's library, so they are the instance's, released when it stops (its `release`
// runs then); the overrides are the kernel's, and the next generation's declarations are served
// them at once. Nothing of a swap runs a check or publishes Config.Changed.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_LIVE_LIVE_API_H_
#define MOLT_KERNEL_LIVE_LIVE_API_H_

#include "kernel/src/abi/plugin_instance.h"

namespace molt::kernel::live {

class LiveValues;

void AttachLive(abi::AbiShared& shared, LiveValues& live);

}  // namespace molt::kernel::live

#endif  // MOLT_KERNEL_LIVE_LIVE_API_H_
