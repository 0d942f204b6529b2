// SPDX-License-Identifier: Apache-2.0
// The hook slots of the host API: defining a hook point, a plugin's handler in a chain (a
// failure it reports rejects a fail-closed chain with its text, and counts against its
// instance), and firing a chain from a plugin.
#include "kernel/src/abi/hook_api.h"

#include <span>
#include <stdexcept>
#include <string>

#include "kernel/src/abi/bridge.h"

namespace molt::kernel::abi {
namespace {

// What a handler that failed throws out of its chain: Hooks::Fire (core/hooks.h) catches it and
// rejects (fail-closed) or passes (fail-open) with its text, which names the plugin.
class HandlerFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

molt_status_t HookDefine(molt_context_t* ctx, const char* point, std::int32_t mode) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(point, "point"));
    MOLT_RETURN_IF_ERROR(Hooks::CheckUserPointName(point));
    if (mode != MOLT_HOOK_FAIL_CLOSED && mode != MOLT_HOOK_FAIL_OPEN) {
      return Status::InvalidArgument("hook mode " + std::to_string(mode) +
                                     " is neither MOLT_HOOK_FAIL_CLOSED nor MOLT_HOOK_FAIL_OPEN");
    }
    p.kernel().hooks().Define(
        point, mode == MOLT_HOOK_FAIL_OPEN ? Hooks::Mode::kFailOpen : Hooks::Mode::kFailClosed);
    return Status::Ok();
  });
}

molt_status_t HookOn(molt_context_t* ctx, const char* point, std::int32_t priority, molt_hook_fn fn,
                     void* user_data, molt_cleanup_fn release, molt_hook_handler_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required(
            {{point, "point"}, {reinterpret_cast<const void*>(fn), "fn"}, {out, "out_handler"}});
        !s.ok()) {
      return s;
    }
    MOLT_RETURN_IF_ERROR(Hooks::CheckUserPointName(point));
    PluginInstance* inst = &p;
    PluginInstance::Resource r{Kind::kHookHandler, {}, 0, false, nullptr, release, user_data};
    r.connection = p.kernel().hooks().On(
        point,
        [inst, fn, user_data](HookContext& c) {
          if (inst->dormant()) {
            return true;  // not serving yet: as if absent
          }
          molt_hook_context mc{sizeof(molt_hook_context),
                               0,
                               c.point.data(),
                               static_cast<molt_value*>(static_cast<void*>(c.args.data())),
                               c.args.size(),
                               c.session};
          const molt_status_t st = CallPlugin(*inst, [&] { return fn(user_data, &mc); });
          if (st == MOLT_OK) {
            return true;
          }
          if (st == MOLT_ERR_REJECTED) {
            return false;
          }
          inst->CountCallbackError();
          throw HandlerFailed("plugin \"" + inst->label() + "\": " + inst->CallbackError(st));
        },
        priority);
    *out = p.Own(std::move(r));
    return Status::Ok();
  });
}

molt_status_t HookOff(molt_context_t* ctx, molt_hook_handler_t handler) noexcept {
  return Guard(ctx, [&](PluginInstance& p) {
    return ReleaseOwned(p, handler, Kind::kHookHandler, "hook handler");
  });
}

molt_status_t HookFire(molt_context_t* ctx, const char* point, molt_value* args, std::size_t n,
                       std::uint64_t session, std::uint8_t* out_passed,
                       const char** out_error) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(point, "point"));
    MOLT_RETURN_IF_ERROR(Required(out_passed, "out_passed"));
    MOLT_RETURN_IF_ERROR(RequiredIfAny(args, n, "args", "arg_count"));
    HookContext c;
    c.args = std::span<Value>(static_cast<Value*>(static_cast<void*>(args)), n);
    c.session = session;
    HookResult r = p.kernel().hooks().Fire(std::string_view(point), c);
    *out_passed = r.passed ? 1 : 0;
    p.SetError(r.error);
    if (out_error != nullptr) {
      *out_error = r.error.empty() ? nullptr : p.last_error();
    }
    return Status::Ok();
  });
}

}  // namespace

void InstallHookSlots(molt_host_api& api) {
  api.hook_define = HookDefine;
  api.hook_on = HookOn;
  api.hook_off = HookOff;
  api.hook_fire = HookFire;
}

}  // namespace molt::kernel::abi
