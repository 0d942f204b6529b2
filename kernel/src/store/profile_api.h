// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_api.h
//
// The profile slots of the host API (ABI 1.4): AttachProfiles() adds a layer that gives plugins
// the stores of `registry` (profile_declare, _state, _get, _set, _save). Call it after
// AttachNetwork() and before loading plugins. Without it the slots answer MOLT_ERR_UNSUPPORTED.
//
// A declaration is a resource of the declaring instance: when the instance stops the store is
// detached (its profiles stay loaded and keep being saved), and the next declaration of the name
// adopts it. A dormant instance (a swap's next generation) declares when its generation serves;
// a declaration that cannot adopt then (a migration fails, a lower schema version) fails the swap.
// A store no generation declared again is retired when the swap ends (final saves).
#ifndef MOLT_KERNEL_STORE_PROFILE_API_H_
#define MOLT_KERNEL_STORE_PROFILE_API_H_

#include "kernel/src/abi/plugin_instance.h"

namespace molt::kernel::store {
class ProfileRegistry;
}  // namespace molt::kernel::store

namespace molt::kernel::abi {

void AttachProfiles(AbiShared& shared, store::ProfileRegistry& registry);

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_STORE_PROFILE_API_H_
