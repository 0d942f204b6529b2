// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/deploy_log.h
//
// The deploy parts' one log scope, "Deploys": every line a deploy, a pin, the fleet's registry or
// the keys write reads as one subsystem's, whichever part wrote it. Included by the parts'
// sources (deploy/*.cc) only.
//
// Thread safety: LogScope is safe from any thread.
#ifndef MOLT_KERNEL_DEPLOY_DEPLOY_LOG_H_
#define MOLT_KERNEL_DEPLOY_DEPLOY_LOG_H_

#include "kernel/src/core/logger.h"

namespace molt::kernel::deploy {

inline const LogScope& DeployLog() {
  static const LogScope log("Deploys");
  return log;
}

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_DEPLOY_LOG_H_
