// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/fleet/messages_api.h
//
// The messages slots of the host API (ABI 1.9; spec §34): AttachMessages() adds a layer that
// hands plugins' message_publish and message_subscribe calls to `messages`. Call it before loading
// plugins; without it the slots answer MOLT_ERR_UNSUPPORTED.
//
// What a generation holds here, and what a swap does with it: a subscription points into the
// plugin's library, so it is the instance's, released when it stops (its `release` runs then);
// the messages are the kernel's: what comes on a topic while no instance listens (the swap) is
// held and handed to the next generation's first listener of it, marked MOLT_MESSAGE_REPLAYED.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_FLEET_MESSAGES_API_H_
#define MOLT_KERNEL_FLEET_MESSAGES_API_H_

#include "kernel/src/abi/plugin_instance.h"

namespace molt::kernel::fleet {

class Messages;

void AttachMessages(abi::AbiShared& shared, Messages& messages);

}  // namespace molt::kernel::fleet

#endif  // MOLT_KERNEL_FLEET_MESSAGES_API_H_
