// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/slot.h
//
// What every host API slot is built from, whichever layer defines it (host_api.cc for the core,
// net_api.cc for the server's network, the client library for controllers): Guard() runs a
// slot's body for a live instance and turns statuses and exceptions into codes; Required()
// names the NULL argument; FindKind() / ReleaseOwned() check a handle's kind and owner;
// CallPlugin() brackets a call into plugin code.
#ifndef MOLT_KERNEL_ABI_SLOT_H_
#define MOLT_KERNEL_ABI_SLOT_H_

#include <molt/molt.h>
#include <molt/scope_exit.h>

#include <exception>
#include <initializer_list>
#include <string>
#include <utility>

#include "kernel/src/abi/plugin_instance.h"

namespace molt::kernel::abi {

using Kind = PluginInstance::Kind;

// Runs `body(instance)` for a live instance; exceptions and error statuses become codes.
template <class F>
molt_status_t Guard(molt_context_t* ctx, F&& body) noexcept {
  if (ctx == nullptr) {
    return MOLT_ERR_INVALID_ARGUMENT;
  }
  PluginInstance& p = PluginInstance::From(ctx);
  try {
    if (!p.live()) {
      return p.Fail(
          Status::FailedPrecondition("plugin \"" + p.label() +
                                     "\" is not running: host calls are accepted from init until "
                                     "stop returns"));
    }
    Status s = body(p);
    return s.ok() ? MOLT_OK : p.Fail(s);
  } catch (const std::exception& e) {
    return p.Fail(Status::Internal(e.what()));
  } catch (...) {
    return p.Fail(Status::Internal("unknown exception"));
  }
}

// Releases `handle` when it is one of `kind`'s that `p` owns.
inline Status ReleaseOwned(PluginInstance& p, molt_handle_t handle, Kind kind,
                           const char* kind_name) {
  if (AbiShared::KindOf(handle) != static_cast<std::uint64_t>(kind)) {
    return Status::InvalidArgument(std::string(PluginInstance::KindName(handle)) + " " +
                                   std::to_string(handle) + " is not a " + kind_name);
  }
  return p.Release(handle);
}

inline Status Required(const void* p, const char* what) {
  return p != nullptr ? Status::Ok() : Status::InvalidArgument(std::string(what) + " is NULL");
}

// The first of several required pointers that is NULL, as Required() reports it.
inline Status Required(std::initializer_list<std::pair<const void*, const char*>> args) {
  for (const auto& [ptr, what] : args) {
    if (Status s = Required(ptr, what); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

// Calls a plugin callback with the release-deferral bracket; an escaped exception is contained.
template <class F>
molt_status_t CallPlugin(PluginInstance& p, F&& call) {
  p.SetError("");  // what the callback reports is its own, not an older call's
  p.EnterCallback();
  ScopeExit leave = [&p]() noexcept { p.LeaveCallback(); };
  try {
    return call();
  } catch (...) {
    p.SetError("callback threw across the C ABI");
    return MOLT_ERR_INTERNAL;
  }
}

// A new completion owned by `p` (released with it, or by completion_release), its handle in
// `*out`: what a slot completing later (a request's answer, a profile's load) hands the plugin.
inline std::shared_ptr<Completion> OwnCompletion(PluginInstance& p, molt_completion_t* out) {
  PluginInstance::Resource r{Kind::kCompletion, {}, 0, false, nullptr, nullptr, nullptr};
  r.completion = Completion::Create();
  std::shared_ptr<Completion> completion = r.completion;
  *out = p.Own(std::move(r));
  return completion;
}

// The resource `h` names when it is one of `kind`'s that `p` owns.
inline Result<PluginInstance::Resource*> FindKind(PluginInstance& p, molt_handle_t h, Kind kind,
                                                  const char* kind_name) {
  if (AbiShared::KindOf(h) != static_cast<std::uint64_t>(kind)) {
    return Status::InvalidArgument(std::string(PluginInstance::KindName(h)) + " " +
                                   std::to_string(h) + " is not a " + kind_name);
  }
  PluginInstance::Resource* r = p.Find(h);
  if (r == nullptr) {
    return Status::Stale(std::string(kind_name) + " " + std::to_string(h) +
                         " is not live (ended, or not plugin \"" + p.label() + "\"'s)");
  }
  return r;
}

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_SLOT_H_
