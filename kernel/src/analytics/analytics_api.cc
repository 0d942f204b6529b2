// SPDX-License-Identifier: Apache-2.0
// analytics_track: the plugin's call, into the kernel's Analytics queue.
#include "kernel/src/analytics/analytics_api.h"

#include <molt/molt.h>

#include <string_view>
#include <utility>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/analytics/analytics.h"

namespace molt::kernel::abi {
namespace {

// Nothing of a plugin's is held here: the layer only finds the queue.
class AnalyticsLayer : public HostLayer {
 public:
  AnalyticsLayer(analytics::Analytics& analytics,
                 std::function<std::string(molt_session_t)> user_of)
      : analytics(analytics), user_of(std::move(user_of)) {}
  void ReleaseOwner(const void*) override {}
  void Release(const void*, molt_handle_t, std::uint8_t, std::uint32_t) override {}

  analytics::Analytics& analytics;
  std::function<std::string(molt_session_t)> user_of;
};

molt_status_t AnalyticsTrack(molt_context_t* ctx, const char* name, molt_session_t session,
                             double value, const char* fields, std::size_t fields_size) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(name, "name"));
    AnalyticsLayer& layer = *p.shared().Layer<AnalyticsLayer>();  // installed with the slot
    const std::string user = session != 0 ? layer.user_of(session) : std::string();
    return layer.analytics.Track(
        p.info().name, name, user, session, value,
        fields != nullptr ? std::string_view(fields, fields_size) : std::string_view());
  });
}

}  // namespace

void AttachAnalytics(AbiShared& shared, analytics::Analytics& analytics,
                     std::function<std::string(molt_session_t)> user_of) {
  shared.AddLayer(std::make_unique<AnalyticsLayer>(analytics, std::move(user_of)));
  shared.mutable_api().analytics_track = AnalyticsTrack;
}

}  // namespace molt::kernel::abi
