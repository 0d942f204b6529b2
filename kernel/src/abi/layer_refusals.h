// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/layer_refusals.h
//
// The slots of the layers a host may lack (the server's network, profile stores, analytics,
// worker jobs, live values, messages, the key-value store; the client's calls): every one is in
// the table from the start and answers MOLT_ERR_UNSUPPORTED, naming who has it, until the layer
// replaces it (net/net_api.h, store/profile_api.h, the client library, ...).
// InstallLayerRefusals() sets them; CoreHostApi() (host_api.h) calls it, so every host has them.
#ifndef MOLT_KERNEL_ABI_LAYER_REFUSALS_H_
#define MOLT_KERNEL_ABI_LAYER_REFUSALS_H_

#include <molt/molt.h>

namespace molt::kernel::abi {

// Sets every layer slot of `api` to its refusal.
void InstallLayerRefusals(molt_host_api& api);

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_LAYER_REFUSALS_H_
