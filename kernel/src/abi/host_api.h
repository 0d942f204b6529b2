// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/host_api.h
//
// The molt_host_api table handed to every plugin's init: the bridge between C calls and kernel
// objects. Each slot is a noexcept function in molt::kernel::abi (never exported under a plugin-
// facing name) that validates its arguments, acts for the calling plugin instance, and turns any
// failure into a status code plus the instance's error text.
#ifndef MOLT_KERNEL_ABI_HOST_API_H_
#define MOLT_KERNEL_ABI_HOST_API_H_

#include <molt/molt.h>

namespace molt::kernel::abi {

// The table, filled once; valid for the life of the process.
const molt_host_api& HostApi();

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_HOST_API_H_
