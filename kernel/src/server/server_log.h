// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/server_log.h
//
// moltd's own log scope, "molt": the lines of the boot, the serve and the close read as one
// server's, whichever part of server/ wrote them. Included by the parts' sources (server/*.cc).
//
// Thread safety: LogScope is safe from any thread.
#ifndef MOLT_KERNEL_SERVER_SERVER_LOG_H_
#define MOLT_KERNEL_SERVER_SERVER_LOG_H_

#include "kernel/src/core/logger.h"

namespace molt::kernel {

inline const LogScope& ServerLog() {
  static const LogScope log("molt");
  return log;
}

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_SERVER_LOG_H_
