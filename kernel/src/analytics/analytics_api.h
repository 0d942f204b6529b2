// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/analytics/analytics_api.h
//
// The analytics slot of the host API (ABI 1.5): AttachAnalytics() adds a layer that hands
// plugins' analytics_track calls to `analytics`, with the plugin's name and the session's user.
// Call it before loading plugins; without it the slot answers MOLT_ERR_UNSUPPORTED. Events are
// data, not code: nothing of them is released with a generation, and a swap loses none.
#ifndef MOLT_KERNEL_ANALYTICS_ANALYTICS_API_H_
#define MOLT_KERNEL_ANALYTICS_ANALYTICS_API_H_

#include <functional>
#include <string>

#include "kernel/src/abi/plugin_instance.h"

namespace molt::kernel::analytics {
class Analytics;
}  // namespace molt::kernel::analytics

namespace molt::kernel::abi {

// `user_of(session)`: the session's user, or "" (the network's sessions; none without one).
void AttachAnalytics(AbiShared& shared, analytics::Analytics& analytics,
                     std::function<std::string(molt_session_t)> user_of);

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ANALYTICS_ANALYTICS_API_H_
