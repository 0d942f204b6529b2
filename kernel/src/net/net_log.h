// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/net_log.h
//
// The log scope every file of the network writes under ("net"): one object, not one per file.
#ifndef MOLT_KERNEL_NET_NET_LOG_H_
#define MOLT_KERNEL_NET_NET_LOG_H_

#include "kernel/src/core/logger.h"

namespace molt::kernel::net {

inline const LogScope kNetLog("net");

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_NET_LOG_H_
