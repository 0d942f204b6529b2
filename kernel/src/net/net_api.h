// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/net_api.h
//
// The server layer of the host API: AttachNetwork() makes `network` the plugins' network and
// fills the networking slots (ABI 1.1 channels and sessions, ABI 1.2 replicas) of the table
// `shared` hands to plugins. Call it before loading plugins. With a null `network` the slots
// answer MOLT_ERR_UNSUPPORTED, as they do without a layer.
#ifndef MOLT_KERNEL_NET_NET_API_H_
#define MOLT_KERNEL_NET_NET_API_H_

#include "kernel/src/abi/plugin_instance.h"

namespace molt::kernel::net {
class Network;
}  // namespace molt::kernel::net

namespace molt::kernel::abi {

void AttachNetwork(AbiShared& shared, net::Network* network);

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_NET_NET_API_H_
