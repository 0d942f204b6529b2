// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/hook_api.h
//
// The hook slots of the host API (hook_define, hook_on, hook_off, hook_fire): a plugin's named
// validation chains and its handlers in them. InstallHookSlots() fills them in a table;
// CoreHostApi() (host_api.h) calls it, so every host has them.
#ifndef MOLT_KERNEL_ABI_HOOK_API_H_
#define MOLT_KERNEL_ABI_HOOK_API_H_

#include <molt/molt.h>

namespace molt::kernel::abi {

// Sets the hook slots of `api`.
void InstallHookSlots(molt_host_api& api);

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_HOOK_API_H_
