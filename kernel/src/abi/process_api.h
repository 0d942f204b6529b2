// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/process_api.h
//
// The process and completion slots of the host API (process_spawn ... completion_release):
// InstallProcessSlots() fills them in a table; CoreHostApi() calls it, so every host has them.
#ifndef MOLT_KERNEL_ABI_PROCESS_API_H_
#define MOLT_KERNEL_ABI_PROCESS_API_H_

#include <molt/molt.h>

namespace molt::kernel::abi {

void InstallProcessSlots(molt_host_api& api);

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_PROCESS_API_H_
