// SPDX-License-Identifier: Apache-2.0
// live_declare and live_get: the plugin's calls, into the kernel's LiveValues.
#include "kernel/src/live/live_api.h"

#include <molt/molt.h>

#include <string>
#include <utility>
#include <vector>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/live/live_values.h"

namespace molt::kernel::live {
namespace {

using abi::HostLayer;
using abi::PluginInstance;

// The instances' `release` callbacks, run when each stops; the declarations are in LiveValues.
class LiveLayer : public HostLayer {
 public:
  explicit LiveLayer(LiveValues& live) : live(live) {}
  void ReleaseOwner(const void* owner) override {
    live.Forget(owner);
    releases.RunFor(owner);
  }
  void Release(const void*, molt_handle_t, std::uint8_t, std::uint32_t) override {}

  LiveValues& live;
  abi::OwnedReleases releases;
};

// The plugin's check, as LiveValues calls it: fail-closed, its set_error text the reason.
LiveCheck PluginCheck(PluginInstance& p, molt_live_check_fn fn, void* user_data) {
  return [&p, fn, user_data](std::string_view key, std::string_view value) -> Status {
    const std::string k(key);
    const std::string v(value);
    const molt_status_t st =
        abi::CallPlugin(p, [&] { return fn(user_data, k.c_str(), v.c_str(), v.size()); });
    if (st == MOLT_OK) {
      return Status::Ok();
    }
    const std::string why = p.last_error();
    return Status::Rejected(why.empty() ? "its check answered " + std::to_string(st) +
                                              " with no reason (set_error gives one)"
                                        : why);
  };
}

molt_status_t LiveDeclare(molt_context_t* ctx, const char* name, const char* default_json,
                          std::size_t default_size, molt_live_check_fn check, void* user_data,
                          molt_cleanup_fn release) noexcept {
  return abi::Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(abi::Required({{name, "name"}, {default_json, "default_json"}}));
    LiveLayer& layer = *p.shared().Layer<LiveLayer>();  // installed with the slot
    MOLT_RETURN_IF_ERROR(
        layer.live.Declare(&p, p.name(), name, std::string_view(default_json, default_size),
                           check != nullptr ? PluginCheck(p, check, user_data) : LiveCheck()));
    layer.releases.Add(&p, release, user_data);
    return Status::Ok();
  });
}

molt_status_t LiveGet(molt_context_t* ctx, const char* name, molt_bytes_fn sink,
                      void* sink_user_data) noexcept {
  return abi::Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(abi::Required({{name, "name"}, {reinterpret_cast<void*>(sink), "sink"}}));
    LiveLayer& layer = *p.shared().Layer<LiveLayer>();
    MOLT_ASSIGN_OR_RETURN(std::string value, layer.live.Get(&p, p.name(), name));
    abi::ToSink(p, sink, sink_user_data, value);
    return Status::Ok();
  });
}

}  // namespace

void AttachLive(abi::AbiShared& shared, LiveValues& live) {
  shared.AddLayer(std::make_unique<LiveLayer>(live));
  shared.mutable_api().live_declare = LiveDeclare;
  shared.mutable_api().live_get = LiveGet;
}

}  // namespace molt::kernel::live
