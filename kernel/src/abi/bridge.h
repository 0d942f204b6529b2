// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/bridge.h
//
// What every host API slot is built from, whichever layer defines it (host_api.cc for the core,
// net_api.cc for the server's network, the client library for controllers): Guard() runs a
// slot's body for a live instance and turns statuses and exceptions into codes; Required()
// names the NULL argument; FindKind() / ReleaseOwned() check a handle's kind and owner;
// CallPlugin() brackets a call into plugin code.
#ifndef MOLT_KERNEL_ABI_BRIDGE_H_
#define MOLT_KERNEL_ABI_BRIDGE_H_

#include <molt/molt.h>
#include <molt/scope_exit.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/abi/worker_thread.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/scheduler.h"

namespace molt::kernel::abi {

using Kind = PluginInstance::Kind;

// Runs `body()`, which returns a Status: OK becomes MOLT_OK; an error, or an exception the body
// let escape (as MOLT_ERR_INTERNAL with its what()), goes to `fail(status)`, which records the
// text where the caller reads it and returns the code.
template <class Fail, class F>
molt_status_t GuardedCall(Fail&& fail, F&& body) noexcept {
  try {
    Status s = body();
    return s.ok() ? MOLT_OK : fail(s);
  } catch (const std::exception& e) {
    return fail(Status::Internal(e.what()));
  } catch (...) {
    return fail(Status::Internal("unknown exception"));
  }
}

// GuardedCall() for a C API whose exceptions name who threw (the test kit's, testkit_api.cc):
// an exception the body let escape becomes MOLT_ERR_INTERNAL with the text "<thrower>: <what()>",
// or "<thrower>" alone for one that is not a std::exception.
template <class Fail, class F>
molt_status_t GuardedCall(Fail&& fail, F&& body, std::string_view thrower) noexcept {
  try {
    Status s = body();
    return s.ok() ? MOLT_OK : fail(s);
  } catch (const std::exception& e) {
    return fail(Status::Internal(std::string(thrower) + ": " + e.what()));
  } catch (...) {
    return fail(Status::Internal(std::string(thrower)));
  }
}

// The body of Guard() for a live instance.
template <class F>
molt_status_t GuardLive(PluginInstance& p, F&& body) noexcept {
  return GuardedCall([&p](const Status& s) { return p.Fail(s); },
                     [&]() -> Status {
                       if (!p.live()) {
                         return Status::FailedPrecondition(
                             "plugin \"" + p.label() +
                             "\" is not running: host calls are accepted from init until stop "
                             "returns");
                       }
                       return body(p);
                     });
}

// A host call while a plugin callback runs off the kernel thread (callback_runner.h): on the
// runner's thread it holds the call's baton, and one made by an abandoned callback is refused
// without touching anything (not even the plugin's error text).
// One made by a worker job is refused the same way (worker_thread.h). Neither check touches
// the instance's host: it may be gone.
template <class F>
[[gnu::noinline]] molt_status_t GuardOffThread(PluginInstance& p, F&& body) noexcept {
  if (OnWorkerThread()) {
    return MOLT_ERR_STATE;  // its text is last_error's on this thread
  }
  CallbackRunner::HostCall call;
  if (call.refused()) {
    return MOLT_ERR_STALE;
  }
  return GuardLive(p, std::forward<F>(body));
}

// Whether a host call of `p` may skip the checks: its instance is live and the call comes from
// the kernel thread with no callback off it (while worker jobs are out, one more compare: the
// thread).
inline bool OnFastPath(const PluginInstance& p) {
  const std::uint8_t gate = p.gate();
  return gate == 0 || (gate == PluginInstance::kGateWorkers && p.shared().on_kernel_thread());
}

// A host API slot: runs `body(instance)` for a live instance, its error text on the instance.
// One load decides the fast path (PluginInstance::gate): live, and no callback off the kernel
// thread (while worker jobs are out, also a thread id compare).
template <class F>
molt_status_t Guard(molt_context_t* ctx, F&& body) noexcept {
  if (ctx == nullptr) {
    return MOLT_ERR_INVALID_ARGUMENT;
  }
  PluginInstance& p = PluginInstance::From(ctx);
  if (!OnFastPath(p)) [[unlikely]] {
    return p.off_thread() ? GuardOffThread(p, std::forward<F>(body))
                          : GuardLive(p, std::forward<F>(body));
  }
  return GuardedCall([&p](const Status& s) { return p.Fail(s); },
                     [&]() -> Status { return body(p); });
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
    MOLT_RETURN_IF_ERROR(Required(ptr, what));
  }
  return Status::Ok();
}

// `size` bytes at `data` as a span; NULL is empty, whatever `size` says.
inline std::span<const std::uint8_t> Bytes(const void* data, std::size_t size) {
  return data == nullptr ? std::span<const std::uint8_t>()
                         : std::span(static_cast<const std::uint8_t*>(data), size);
}

// An array argument named `what` of `count` items (its count named `count_what`): NULL only when
// there are none, or the refusal "<what> is NULL with <count_what> > 0".
inline Status RequiredIfAny(const void* p, std::size_t count, const char* what,
                            const char* count_what) {
  if (p == nullptr && count > 0) {
    return Status::InvalidArgument(std::string(what) + " is NULL with " + count_what + " > 0");
  }
  return Status::Ok();
}

// A byte argument: `size` bytes at `data`, NULL only with size 0 ("data is NULL with size > 0").
inline Result<std::span<const std::uint8_t>> BytesArg(const void* data, std::size_t size) {
  MOLT_RETURN_IF_ERROR(RequiredIfAny(data, size, "data", "size"));
  return Bytes(data, size);
}

// A byte argument named `what`: `size` bytes at `data`, NULL only with size 0, or the refusal
// "<what> is NULL with a size of <size>" (the test kit's wording, testkit_api.cc).
inline Result<std::span<const std::uint8_t>> BytesArg(const void* data, std::size_t size,
                                                      const char* what) {
  if (data == nullptr && size > 0) {
    return Status::InvalidArgument(std::string(what) + " is NULL with a size of " +
                                   std::to_string(size));
  }
  return Bytes(data, size);
}

// A duration argument named `what`: a finite number of seconds >= 0, or the refusal
// "<what> must be a finite number >= 0, not <seconds>".
inline Result<Duration> SecondsArg(double seconds, std::string_view what) {
  if (!std::isfinite(seconds) || seconds < 0) {
    return Status::InvalidArgument(std::string(what) + " must be a finite number >= 0, not " +
                                   std::to_string(seconds));
  }
  return Seconds(seconds);
}

// A priority argument: MOLT_PRIORITY_KERNEL (1) .. MOLT_PRIORITY_BACKGROUND (5).
inline Result<Priority> PriorityArg(std::int32_t priority) {
  if (priority < MOLT_PRIORITY_KERNEL || priority > MOLT_PRIORITY_BACKGROUND) {
    return Status::InvalidArgument("priority " + std::to_string(priority) +
                                   " is not one of MOLT_PRIORITY_KERNEL (1) .. "
                                   "MOLT_PRIORITY_BACKGROUND (5)");
  }
  return static_cast<Priority>(priority - MOLT_PRIORITY_KERNEL);
}

// Calls a plugin callback with the release-deferral bracket; an escaped exception is contained.
template <class F>
molt_status_t CallPlugin(PluginInstance& p, F&& call) {
  if (p.abandoned()) [[unlikely]] {
    return MOLT_ERR_STALE;  // none of its code runs any more (PluginInstance::set_callback_limit)
  }
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

// The `release` callbacks a layer holds for its instances (a live value's check, a message
// subscription): each runs, with its user_data, when its instance stops (HostLayer::ReleaseOwner).
class OwnedReleases {
 public:
  void Add(PluginInstance* owner, molt_cleanup_fn fn, void* user_data) {
    if (fn != nullptr) {
      releases_.push_back({owner, fn, user_data});
    }
  }
  // Runs and forgets every release `owner` handed in.
  void RunFor(const void* owner) {
    std::vector<Owned> mine;
    std::erase_if(releases_, [&](const Owned& r) {
      if (r.owner != owner) {
        return false;
      }
      mine.push_back(r);
      return true;
    });
    for (const Owned& r : mine) {
      r.owner->RunRelease(r.fn, r.user_data);
    }
  }

 private:
  struct Owned {
    PluginInstance* owner;
    molt_cleanup_fn fn;
    void* user_data;
  };
  std::vector<Owned> releases_;
};

// Hands `bytes` to `sink`, a plugin's callback (bracketed as CallPlugin does).
inline void ToSink(PluginInstance& p, molt_bytes_fn sink, void* user_data, std::string_view bytes) {
  CallPlugin(p, [&] {
    sink(user_data, bytes.data(), bytes.size());
    return MOLT_OK;
  });
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

#endif  // MOLT_KERNEL_ABI_BRIDGE_H_
