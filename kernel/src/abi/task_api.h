// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/task_api.h
//
// The task slots of the host API (task_schedule, task_after, task_every, task_start,
// task_cancel): a plugin's tasks on the kernel's scheduler or one of its phases, owned by the
// instance. InstallTaskSlots() fills them in a table; CoreHostApi() (host_api.h) calls it, so
// every host has them.
#ifndef MOLT_KERNEL_ABI_TASK_API_H_
#define MOLT_KERNEL_ABI_TASK_API_H_

#include <molt/molt.h>

namespace molt::kernel::abi {

// Sets the task slots of `api`.
void InstallTaskSlots(molt_host_api& api);

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_TASK_API_H_
