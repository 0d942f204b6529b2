// SPDX-License-Identifier: Apache-2.0
// File: molt/molt.hpp
//
// The C++17 face of the plugin ABI (molt/molt.h), header-only: RAII handles, lambdas instead of
// function pointers, a Service base class, and MOLT_PLUGIN(Type), which generates the entry symbol
// and trampolines that catch every exception and turn it into a status with its text. Nothing here
// crosses the ABI but molt.h's C types, so a plugin may be built with any C++17 compiler (and with
// -fno-exceptions, if it never throws).
//
// A plugin in twenty lines:
//
//   #include <molt/molt.hpp>
//
//   class Greeter : public molt::Service {
//    public:
//     static constexpr const char* kName = "greeter";
//     static constexpr const char* kVersion = "1.0.0";
//
//     molt::Status Start() override {
//       MOLT_ASSIGN_OR_RETURN(joins_, host().Subscribe("Kernel.ServiceRegistered",
//                                                      [this](std::string_view, molt::Args args) {
//                                                        host().Info("registered: ",
//                                                        args.String(0));
//                                                      }));
//       MOLT_ASSIGN_OR_RETURN(tick_, host().Every(1.0, [this] { ++ticks_; }));
//       return molt::Status::Ok();
//     }
//
//    private:
//     molt::Subscription joins_;
//     molt::Task tick_;
//     int ticks_ = 0;
//   };
//
//   MOLT_PLUGIN(Greeter)
//
// Optional static members of the plugin type: kKind (MOLT_PLUGIN_KIND_CONTROLLER for a client-side
// controller), kDependencies (an array of names), kDescription,
// kStateVersion, kOldestStateVersion (ABI 1.3), and kInterfaces (an array of
// molt_interface_export).
//
// Errors: one convention, abseil's. A call that can fail returns a molt::Status, or a
// molt::Result<T> holding either its value (a handle, a session's info, a configuration value)
// or the Status that says why not; a failed Status carries the host's text. MOLT_ASSIGN_OR_RETURN
// unwraps a Result inside a function returning Status:
//
//   MOLT_ASSIGN_OR_RETURN(ticker_, host().Every(1.0, [this] { ++ticks_; }));
//
// Nothing here throws, but one thing: inside a process body, Yield, Sleep and Wait unwind a killed
// process with molt::ProcessKilled (a cancellation, not an error), which the body's trampoline
// catches. What a plugin hands the host (handlers, validators, verifiers, tasks, process bodies,
// exit and deferred functions) may return void, bool (false: veto / reject), molt::Status or a
// molt_status_t, and may throw: every one runs through one guard (detail::CallGuarded) that turns
// an exception into MOLT_ERR_INTERNAL with its text, reported to the host (set_error, or an error
// log line for the callbacks whose status the host does not read). No exception crosses the ABI.
//
// Handles carry their calls. What a plugin does with a kernel object it holds is a method of the
// object's handle, and the method's name follows the C slot: the slot's name without the handle's
// noun, in PascalCase.
//
//   profile_get         -> ProfileStore::Get       replica_set_int     -> Replica::SetInt
//   profile_backup_now  -> ProfileStore::BackupNow replica_add_session -> Replica::AddSession
//   profile_key_load    -> ProfileStore::KeyLoad   event_send          -> Channel::Send
//
// A second C++ form of one slot adds a word: Channel::Broadcast is event_send to every session
// (sessions NULL), ProfileStore::KeyReleaseAll is profile_key_release with a NULL key. Calls that
// make a handle stay on Host, which holds none yet (DeclareProfiles, CreateReplica, ClaimReplica,
// DeclareIntent, ...); the slot that ends an owning handle is its Reset() (and its destructor). A
// handle keeps the context and table of the Host that made it, so it calls without one, and get()
// is its ABI value. Replica and Channel own what they name (move-only: the replica is destroyed,
// the channel removed, when the object dies); a ProfileStore names a store the kernel keeps, and
// copies freely. A handle that was never made (default-constructed) has no host to ask: its calls
// fail with MOLT_ERR_STALE.
//
//   MOLT_ASSIGN_OR_RETURN(wallet_, host().DeclareProfiles("Wallet", std::move(options)));
//   MOLT_ASSIGN_OR_RETURN(std::string coins, wallet_.Get(session, "/coins"));
//   (void)board_.SetInt(kRed, ++red_);
//   (void)said_.Send(session, payload);
//
// Until MOLT_HPP_REVISION 2 these calls were Host's (host().GetProfile(store, session, path),
// host().SetInt(replica, field, value), host().Send(channel, session, payload), ...), and
// ProfileStore was the integer molt_profile_t. Those spellings, and ProfileStore's conversions
// from and to molt_profile_t, still build for one release, [[deprecated]] with the name of their
// replacement; the next minor release removes them.
//
// Thread safety: like molt.h, everything runs on the kernel thread.
#ifndef MOLT_MOLT_HPP_
#define MOLT_MOLT_HPP_

#ifndef __cplusplus
#error "molt/molt.hpp is C++ only; C code includes molt/molt.h"
#endif

#include <molt/molt.h>

// The wrapper's source revision within molt.h's ABI: it grows when a release changes what plugin
// code writes, and never starts over at a new ABI minor, so code built against several SDKs can
// test for what it uses. 2: handles carry their calls (ProfileStore, Replica, Channel; see above).
// The wrappers before revision 2 do not define it:
//   #if defined(MOLT_HPP_REVISION) && MOLT_HPP_REVISION >= 2
#define MOLT_HPP_REVISION 2

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace molt {

// --- Status --------------------------------------------------------------------------------------

// A molt_status_t with its text. OK holds no text.
class Status {
 public:
  Status() = default;
  Status(molt_status_t code, std::string message)
      : code_(code == MOLT_OK ? MOLT_ERR_INTERNAL : code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  // A failure with `message` (lower-case, naming the object: "round 3: no players").
  static Status Error(std::string message, molt_status_t code = MOLT_ERR_INTERNAL) {
    return Status(code, std::move(message));
  }
  // A hook handler's veto.
  static Status Rejected(std::string reason = "rejected") {
    return Status(MOLT_ERR_REJECTED, std::move(reason));
  }

  bool ok() const { return code_ == MOLT_OK; }
  explicit operator bool() const { return ok(); }
  molt_status_t code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  molt_status_t code_ = MOLT_OK;
  std::string message_;
};

// A value of T, or the Status saying why there is none (abseil's StatusOr).
template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit, as a return value
  // REQUIRES: !status.ok() (an OK status becomes an internal error: there is no value).
  Result(Status status)  // NOLINT: implicit, as a return value
      : status_(status.ok() ? Status(MOLT_ERR_INTERNAL, "a Result made of an OK Status")
                            : std::move(status)) {}

  bool ok() const { return status_.ok(); }
  explicit operator bool() const { return ok(); }
  const Status& status() const { return status_; }
  // REQUIRES: ok()
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  // The value, or `fallback` when the call failed.
  T value_or(T fallback) && { return ok() ? std::move(*value_) : std::move(fallback); }

 private:
  Status status_;
  std::optional<T> value_;
};

#define MOLT_CONCAT_INNER_(a, b) a##b
#define MOLT_CONCAT_(a, b) MOLT_CONCAT_INNER_(a, b)
// Evaluates an expression yielding a molt::Result; on failure returns its Status from the
// enclosing function, else moves the value into `lhs` (a declaration or an lvalue).
#define MOLT_ASSIGN_OR_RETURN(lhs, ...) \
  MOLT_ASSIGN_OR_RETURN_IMPL_(MOLT_CONCAT_(molt_result_, __LINE__), lhs, __VA_ARGS__)
#define MOLT_ASSIGN_OR_RETURN_IMPL_(result, lhs, ...) \
  auto result = (__VA_ARGS__);                        \
  if (!result.ok()) {                                 \
    return result.status();                           \
  }                                                   \
  lhs = std::move(result).value()

// --- Values --------------------------------------------------------------------------------------

// Builders for molt_value. Strings and bytes are views: keep the data alive for the call.
struct Value {
  static molt_value Nil() { return molt_value{MOLT_VALUE_NIL, 0, {0}}; }
  static molt_value Bool(bool b) { return Make(MOLT_VALUE_BOOL, 0, b ? 1 : 0); }
  static molt_value Int(std::int64_t i) { return Make(MOLT_VALUE_INT, 0, i); }
  static molt_value Double(double d) {
    molt_value v{MOLT_VALUE_DOUBLE, 0, {0}};
    v.as.d = d;
    return v;
  }
  static molt_value String(std::string_view s) {
    molt_value v{MOLT_VALUE_STRING, static_cast<std::uint32_t>(s.size()), {0}};
    v.as.ptr = s.data();
    return v;
  }
  static molt_value Bytes(const void* data, std::size_t size) {
    molt_value v{MOLT_VALUE_BYTES, static_cast<std::uint32_t>(size), {0}};
    v.as.ptr = data;
    return v;
  }
  static molt_value Handle(std::uint64_t h) {
    molt_value v{MOLT_VALUE_HANDLE, 0, {0}};
    v.as.handle = h;
    return v;
  }

 private:
  static molt_value Make(std::int32_t type, std::uint32_t size, std::int64_t i) {
    molt_value v{type, size, {0}};
    v.as.i = i;
    return v;
  }
};

// A read-only view of callback arguments, with type-checked accessors: a value of another type
// (or past the end) reads as the fallback.
class Args {
 public:
  Args() = default;
  Args(const molt_value* values, std::size_t count) : values_(values), count_(count) {}

  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  const molt_value* data() const { return values_; }
  const molt_value* begin() const { return values_; }
  const molt_value* end() const { return values_ + count_; }
  // REQUIRES: i < size().
  const molt_value& operator[](std::size_t i) const { return values_[i]; }

  std::int32_t Type(std::size_t i) const { return i < count_ ? values_[i].type : MOLT_VALUE_NIL; }
  bool Bool(std::size_t i, bool fallback = false) const {
    return Type(i) == MOLT_VALUE_BOOL ? values_[i].as.i != 0 : fallback;
  }
  std::int64_t Int(std::size_t i, std::int64_t fallback = 0) const {
    return Type(i) == MOLT_VALUE_INT ? values_[i].as.i : fallback;
  }
  double Double(std::size_t i, double fallback = 0) const {
    if (Type(i) == MOLT_VALUE_DOUBLE) {
      return values_[i].as.d;
    }
    return Type(i) == MOLT_VALUE_INT ? static_cast<double>(values_[i].as.i) : fallback;
  }
  std::string_view String(std::size_t i, std::string_view fallback = {}) const {
    return Type(i) == MOLT_VALUE_STRING
               ? std::string_view(static_cast<const char*>(values_[i].as.ptr), values_[i].size)
               : fallback;
  }
  std::string_view Bytes(std::size_t i) const {
    return Type(i) == MOLT_VALUE_BYTES
               ? std::string_view(static_cast<const char*>(values_[i].as.ptr), values_[i].size)
               : std::string_view();
  }
  std::uint64_t Handle(std::size_t i, std::uint64_t fallback = 0) const {
    return Type(i) == MOLT_VALUE_HANDLE ? values_[i].as.handle : fallback;
  }

 private:
  const molt_value* values_ = nullptr;
  std::size_t count_ = 0;
};

class Host;

namespace detail {

// Turns what a user callable returned into a status code (and the host's error text).
inline molt_status_t Report(const Host& host, const Status& s);

template <class R>
molt_status_t ResultCode(const Host& host, R&& r) {
  using T = std::decay_t<R>;
  if constexpr (std::is_same_v<T, Status>) {
    return Report(host, r);
  } else if constexpr (std::is_same_v<T, bool>) {
    return r ? MOLT_OK : MOLT_ERR_REJECTED;
  } else {
    static_assert(std::is_same_v<T, molt_status_t>, "return void, bool, molt::Status or a code");
    return r;
  }
}

// The guard every callback runs in (STYLE.md §5): runs `fn` (returning void, bool, Status or a
// code) and catches every exception; its text goes to set_error and the call returns
// MOLT_ERR_INTERNAL.
template <class F>
molt_status_t CallGuarded(const Host& host, F&& fn) noexcept;

// CallGuarded for a callback whose status the host does not read (a cleanup, an exit function):
// a failure is logged as "<what> failed: <text>".
template <class F>
void CallLogged(const Host& host, const char* what, F&& fn) noexcept;

// What the host holds for a callable a plugin handed it: the callable and the host it reports to.
// Made by MakeBox, freed by DeleteBox (the `release` the host calls once). Defined after Host.
template <class F>
struct Box;

template <class F>
Box<std::decay_t<F>>* MakeBox(const Host& host, F&& fn);

template <class B>
void DeleteBox(void* box) noexcept {
  delete static_cast<B*>(box);
}

// A call's code as a Status with the host's text.
inline Status Checked(molt_context_t* ctx, const molt_host_api* api, molt_status_t code) {
  return code == MOLT_OK ? Status() : Status(code, std::string(api->last_error(ctx)));
}

// A molt_bytes_fn appending to the std::string at `ud`.
inline void AppendTo(void* ud, const void* data, std::size_t size) noexcept {
  static_cast<std::string*>(ud)->append(static_cast<const char*>(data), size);
}

// What a call on a handle no host made fails with: there is no host to ask.
inline Status NoHost(const char* noun, molt_handle_t handle) {
  return Status(MOLT_ERR_STALE,
                std::string(noun) + " " + std::to_string(handle) +
                    " has no host to call (a default-constructed handle, or a bare id)");
}

}  // namespace detail

// --- Handles -------------------------------------------------------------------------------------

namespace detail {
// A slot that ends a handle, as a member pointer for OwnedHandle<>.
using ReleaseSlot = molt_status_t (*molt_host_api::*)(molt_context_t*, molt_handle_t);
}  // namespace detail

// A host handle released through `kRelease` when the object dies (RAII); move-only.
template <detail::ReleaseSlot kRelease>
class OwnedHandle {
 public:
  OwnedHandle() = default;
  OwnedHandle(molt_context_t* ctx, const molt_host_api* api, molt_handle_t h)
      : ctx_(ctx), api_(api), handle_(h) {}
  OwnedHandle(OwnedHandle&& o) noexcept
      : ctx_(o.ctx_), api_(o.api_), handle_(std::exchange(o.handle_, 0)) {}
  OwnedHandle& operator=(OwnedHandle&& o) noexcept {
    if (this != &o) {
      Reset();
      ctx_ = o.ctx_;
      api_ = o.api_;
      handle_ = std::exchange(o.handle_, 0);
    }
    return *this;
  }
  OwnedHandle(const OwnedHandle&) = delete;
  OwnedHandle& operator=(const OwnedHandle&) = delete;
  ~OwnedHandle() { Reset(); }

  // Ends it now (unsubscribe, remove, cancel). A handle the host already released is ignored.
  void Reset() {
    if (handle_ != 0) {
      (void)(api_->*kRelease)(ctx_, std::exchange(handle_, 0));
    }
  }
  // Gives up ownership: the host (or a scope) keeps it until the plugin stops.
  molt_handle_t Release() { return std::exchange(handle_, 0); }
  molt_handle_t get() const { return handle_; }
  explicit operator bool() const { return handle_ != 0; }

 protected:
  // A call of one of this handle's slots, `call(ctx, api, handle)`, as a Status. A handle no host
  // made has none to ask: MOLT_ERR_STALE, naming `noun`.
  template <class Call>
  Status Invoke(const char* noun, Call&& call) const {
    if (api_ == nullptr) {
      return detail::NoHost(noun, handle_);
    }
    return detail::Checked(ctx_, api_, call(ctx_, api_, handle_));
  }

 private:
  molt_context_t* ctx_ = nullptr;
  const molt_host_api* api_ = nullptr;
  molt_handle_t handle_ = 0;
};

using Subscription = OwnedHandle<&molt_host_api::bus_unsubscribe>;
using HookHandler = OwnedHandle<&molt_host_api::hook_off>;
using Task = OwnedHandle<&molt_host_api::task_cancel>;
using Scope = OwnedHandle<&molt_host_api::scope_close>;

// A session id (ABI 1.1): kernel-owned; calls naming one that left fail with NOT_FOUND.
using SessionId = molt_session_t;

// A channel this plugin declared (ABI 1.1; Host::DeclareIntent, DeclareRequest, DeclareEvent),
// removed when the object dies. An event channel sends with it; intent and request channels hear
// through the handlers they were declared with.
class Channel : public OwnedHandle<&molt_host_api::channel_remove> {
 public:
  using OwnedHandle::OwnedHandle;

  // event_send to `session` (a session that left is skipped).
  Status Send(SessionId session, std::string_view payload) const {
    return Invoke("channel", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->event_send(ctx, h, &session, 1, payload.data(), payload.size());
    });
  }
  // event_send to every session (sessions NULL).
  Status Broadcast(std::string_view payload) const {
    return Invoke("channel", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->event_send(ctx, h, nullptr, 0, payload.data(), payload.size());
    });
  }
};

// A replica this plugin created (ABI 1.2; Host::CreateReplica, ClaimReplica), destroyed when the
// object dies. Writes reach sessions at the replica's next deadline; fields are numbered from 0.
class Replica : public OwnedHandle<&molt_host_api::replica_destroy> {
 public:
  using OwnedHandle::OwnedHandle;

  // replica_set_int: field `field` (a MOLT_REPLICA_INT) to `value`.
  Status SetInt(std::uint32_t field, std::int64_t value) const {
    return Invoke("replica", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->replica_set_int(ctx, h, field, value);
    });
  }
  // replica_set_float: a MOLT_REPLICA_FLOAT field.
  Status SetFloat(std::uint32_t field, double value) const {
    return Invoke("replica", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->replica_set_float(ctx, h, field, value);
    });
  }
  // replica_set_bytes: a MOLT_REPLICA_BYTES field (up to its max_bytes).
  Status SetBytes(std::uint32_t field, std::string_view value) const {
    return Invoke("replica", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->replica_set_bytes(ctx, h, field, value.data(), value.size());
    });
  }
  // replica_add_session (a list audience): `session` gets a snapshot, then deltas.
  Status AddSession(SessionId session) const {
    return Invoke("replica", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->replica_add_session(ctx, h, session);
    });
  }
  // replica_remove_session (a list audience): `session` gets a remove and no more updates.
  Status RemoveSession(SessionId session) const {
    return Invoke("replica", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->replica_remove_session(ctx, h, session);
    });
  }
  // replica_set_interest (ABI 1.11): of the candidates, only the sessions `interest` says yes
  // to see the replica (an exception is a no, logged); an empty function clears it. It runs on
  // the kernel thread and must not change this replica's audience.
  Status SetInterest(std::function<bool(SessionId)> interest) const;
  // replica_refresh_interest (ABI 1.11): asks the predicate again for `session` (0: everyone).
  Status RefreshInterest(SessionId session = 0) const {
    return Invoke("replica", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      if (!MOLT_API_HAS(api, replica_refresh_interest)) {
        return static_cast<molt_status_t>(MOLT_ERR_UNSUPPORTED);
      }
      return api->replica_refresh_interest(ctx, h, session);
    });
  }
};

// An interest group (ABI 1.11; Host::DeclareZone): its members see the replicas bound to it.
// Destroyed when the object dies (outside a swap, whose next generation finds it by name).
class Zone : public OwnedHandle<&molt_host_api::zone_destroy> {
 public:
  using OwnedHandle::OwnedHandle;

  Status Enter(SessionId session) const {
    return Invoke("zone", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->zone_enter(ctx, h, session);
    });
  }
  Status Leave(SessionId session) const {
    return Invoke("zone", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->zone_leave(ctx, h, session);
    });
  }
  // The zone's members see `replica` (a list audience).
  Status Bind(const Replica& replica) const {
    return Invoke("zone", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->zone_bind(ctx, h, replica.get());
    });
  }
  Status Unbind(const Replica& replica) const {
    return Invoke("zone", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->zone_unbind(ctx, h, replica.get());
    });
  }
};

// A spatial grid (ABI 1.11; Host::DeclareGrid): each placed session sees the bound replicas
// within the radius. Destroyed when the object dies (outside a swap, as Zone).
class Grid : public OwnedHandle<&molt_host_api::grid_destroy> {
 public:
  using OwnedHandle::OwnedHandle;

  // `replica` (a list audience) stands at its float fields `x_field`, `y_field`.
  Status Bind(const Replica& replica, std::uint32_t x_field, std::uint32_t y_field) const {
    return Invoke("grid", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->grid_bind(ctx, h, replica.get(), x_field, y_field);
    });
  }
  Status Unbind(const Replica& replica) const {
    return Invoke("grid", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->grid_unbind(ctx, h, replica.get());
    });
  }
  // `session` sees from (x, y) from the next pass on.
  Status Place(SessionId session, double x, double y) const {
    return Invoke("grid", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->grid_place(ctx, h, session, x, y);
    });
  }
  Status Remove(SessionId session) const {
    return Invoke("grid", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
      return api->grid_remove(ctx, h, session);
    });
  }
};

// A grid's options (ABI 1.11). See molt_grid_spec.
struct GridOptions {
  double radius = 0;        // a session sees the replicas within it; > 0
  double cell_size = 0;     // 0 is the radius
  double leave_radius = 0;  // 0 is the radius
  double rate = 0;          // interest passes a second; 0 is 10
};

// How a channel checks and limits what clients send (ABI 1.1). See molt_channel_spec.
struct ChannelOptions {
  std::string schema;                  // the payload's FlatBuffers root type ("chat.Say")
  std::vector<molt_field_rule> rules;  // built with RangeRule, OneOfRule, MaxLengthRule
  double rate = 0;                     // per session per second; 0: the default (30)
  double burst = 0;                    // 0: equal to the rate
  bool open = false;                   // accept payloads without a validator
  double timeout_seconds = 0;          // requests: 0 is 15 s
  std::string reject_payload;          // requests: sent with rejections
  // ABI 1.10, unreliable channels:
  std::int32_t unreliable_priority = MOLT_UNRELIABLE_LOW;  // MOLT_UNRELIABLE_HIGH always flows
  bool latest_wins = false;  // drop what is older than the newest taken
};

inline molt_field_rule RangeRule(std::uint16_t field, const char* name, std::uint8_t type,
                                 double min, double max) {
  molt_field_rule r{};
  r.field = field;
  r.name = name;
  r.type = type;
  r.rule = MOLT_RULE_RANGE;
  r.min = min;
  r.max = max;
  return r;
}
// `values` must outlive the declaration call (a static array is typical).
inline molt_field_rule OneOfRule(std::uint16_t field, const char* name, std::uint8_t type,
                                 const std::int64_t* values, std::size_t count) {
  molt_field_rule r{};
  r.field = field;
  r.name = name;
  r.type = type;
  r.rule = MOLT_RULE_ONE_OF;
  r.one_of = values;
  r.one_of_count = count;
  return r;
}
inline molt_field_rule MaxLengthRule(std::uint16_t field, const char* name,
                                     std::uint32_t max_length) {
  molt_field_rule r{};
  r.field = field;
  r.name = name;
  r.type = MOLT_FIELD_STRING;
  r.rule = MOLT_RULE_MAX_LENGTH;
  r.max_length = max_length;
  return r;
}

// A replica's shape (ABI 1.2). See molt_replica_spec.
struct ReplicaOptions {
  struct Field {
    std::string name;
    std::int32_t type = MOLT_REPLICA_INT;  // MOLT_REPLICA_*
    std::uint32_t max_bytes = 0;           // bytes fields: 0 is 256
    double quantize = 0;  // ABI 1.11, int and float fields: a deadband (molt_replica_spec)
  };
  std::vector<Field> fields;   // numbered from 0 in this order
  double tick_rate = 0;        // deliveries per second at most; 0 is 10
  bool list_audience = false;  // false: every session; true: the ones added with AddSession
};

// A profile store's options (ABI 1.4). See molt_profile_spec and docs/profiles.md.
struct ProfileOptions {
  std::string defaults = "{}";          // a JSON object: what a document lacks is filled from it
  std::uint32_t schema_version = 0;     // older records are migrated up to it
  double autosave_seconds = 0;          // 0 is 60
  double lease_seconds = 0;             // 0 is 180
  std::vector<double> backoff_seconds;  // empty: 1, 2, 4, 8
  bool kick_on_load_failure = true;
  // One step: the document at schema version `from` -> at from + 1. Empty: no migrations.
  std::function<Result<std::string>(std::uint32_t from, std::string_view document)> migrate;
  // Gates every save: an error refuses to write the document. Empty: every document is written.
  std::function<Status(std::string_view document)> validate;
  double backup_seconds = 0;  // backups on a schedule kept in the record: 0 daily, below 0 none
  bool mirror = false;        // every save also copied to the backup slot "live"
};
// A resolved topic: publishing by handle skips hashing the name.
struct Topic {
  molt_topic_t handle = 0;
  explicit operator bool() const { return handle != 0; }
};

// Thrown by Host::Yield, Sleep and Wait inside a process that was killed; the body trampoline
// catches it, so the body unwinds (destructors run) and code after the call never runs. Not a
// std::exception: a catch (...) in a body must rethrow it.
struct ProcessKilled {};

struct ProcessOptions {
  std::string name;              // "Process <name>" in the profiler; empty: "Process_<pid>"
  std::int32_t priority = 0;     // MOLT_PRIORITY_*; 0: normal
  std::uint64_t stack_size = 0;  // bytes; 0: the host's default
};

// An operation a process may Wait() on, completed later (possibly by another process).
class Completion {
 public:
  Completion() = default;
  Completion(molt_context_t* ctx, const molt_host_api* api, molt_completion_t h)
      : ctx_(ctx), api_(api), handle_(h) {}
  explicit operator bool() const { return handle_ != 0; }
  molt_completion_t handle() const { return handle_; }
  // Completes it with `code` (MOLT_OK or an error) and `payload`, waking its waiter.
  Status Complete(molt_status_t code, std::string_view payload = {}) const {
    return detail::Checked(
        ctx_, api_, api_->completion_complete(ctx_, handle_, code, payload.data(), payload.size()));
  }

 private:
  molt_context_t* ctx_ = nullptr;
  const molt_host_api* api_ = nullptr;
  molt_completion_t handle_ = 0;
};

// A process handle. A process lives until it ends (Kill ends it early); the handle then goes
// stale and state() returns -1.
class Process {
 public:
  Process() = default;
  Process(molt_context_t* ctx, const molt_host_api* api, molt_process_t h)
      : ctx_(ctx), api_(api), handle_(h) {}
  explicit operator bool() const { return handle_ != 0; }
  molt_process_t handle() const { return handle_; }

  Status Start() const { return Checked(api_->process_start(ctx_, handle_, nullptr)); }
  Status Suspend() const { return Checked(api_->process_suspend(ctx_, handle_)); }
  Status Resume() const { return Checked(api_->process_resume(ctx_, handle_)); }
  Status Kill(const char* reason = "killed") const {
    return Checked(api_->process_kill(ctx_, handle_, reason));
  }
  // MOLT_PROCESS_*, or -1 once the process has ended and its handle went stale.
  std::int32_t state() const {
    std::int32_t s = -1;
    return api_->process_state(ctx_, handle_, &s, nullptr) == MOLT_OK ? s : -1;
  }
  // Calls `fn(std::int32_t state, std::string_view result)` once when the process ends.
  template <class F>
  Status OnExit(F&& fn) const;

 private:
  Status Checked(molt_status_t code) const { return detail::Checked(ctx_, api_, code); }

  molt_context_t* ctx_ = nullptr;
  const molt_host_api* api_ = nullptr;
  molt_process_t handle_ = 0;
};

// A profile store this plugin declared (ABI 1.4; Host::DeclareProfiles; docs/profiles.md). The
// kernel keeps the store and every profile in it past this instance (a swap's next instance
// declares the same name to adopt it), so no handle owns it: copy it freely, nothing is released
// when one dies. A session's profile is readable once Kernel.ProfileLoaded(session, name) was
// published. Every call fails with MOLT_ERR_UNSUPPORTED on a host that keeps no profiles.
class ProfileStore {
 public:
  ProfileStore() = default;
  ProfileStore(molt_context_t* ctx, const molt_host_api* api, molt_profile_t h)
      : ctx_(ctx), api_(api), handle_(h) {}
  // Until MOLT_HPP_REVISION 2 a ProfileStore was the molt_profile_t itself, so code wrote
  // `molt::ProfileStore store_ = 0;` and passed stores to C slots: both conversions stay implicit
  // for one release. A store made of a bare id has no host to ask (its calls fail with
  // MOLT_ERR_STALE) but works with Host's deprecated profile calls, as it did.
  [[deprecated("use ProfileStore() or Host::DeclareProfiles")]] ProfileStore(molt_profile_t h)
      : handle_(h) {}
  [[deprecated("use ProfileStore::get()")]] operator molt_profile_t() const { return handle_; }

  // The store's ABI handle (molt_profile_t), for the C slots; 0 when empty.
  molt_profile_t get() const { return handle_; }
  explicit operator bool() const { return handle_ != 0; }

  // profile_state: MOLT_PROFILE_NONE, _PENDING, _LOADED, _FAILED or _LOST.
  Result<std::int32_t> State(SessionId session) const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_state)); !s.ok()) {
      return s;
    }
    std::int32_t state = MOLT_PROFILE_NONE;
    if (Status s = Checked(api_->profile_state(ctx_, handle_, session, &state)); !s.ok()) {
      return s;
    }
    return state;
  }
  // profile_get: the session's document, or the value at `path` (a JSON Pointer: "/coins"), as
  // JSON text. MOLT_ERR_STATE while it is not loaded; MOLT_ERR_NOT_FOUND: nothing at `path`.
  Result<std::string> Get(SessionId session, std::string_view path = {}) const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_get)); !s.ok()) {
      return s;
    }
    std::string out;
    if (Status s = Checked(api_->profile_get(ctx_, handle_, session, std::string(path).c_str(),
                                             &detail::AppendTo, &out));
        !s.ok()) {
      return s;
    }
    return out;
  }
  // profile_set: replaces the document (path "") or the value at `path` with the JSON text `json`
  // and marks the profile to be saved.
  Status Set(SessionId session, std::string_view path, std::string_view json) const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_set)); !s.ok()) {
      return s;
    }
    return Checked(api_->profile_set(ctx_, handle_, session, std::string(path).c_str(), json.data(),
                                     json.size()));
  }
  // profile_save: saves every changed profile of the store now.
  Status Save() const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_save)); !s.ok()) {
      return s;
    }
    return Checked(api_->profile_save(ctx_, handle_));
  }
  // profile_snapshot: an in-memory copy of the session's document (the newest 8 are kept); its
  // id, for Rollback.
  Result<std::uint64_t> Snapshot(SessionId session, std::string_view label = {}) const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_snapshot)); !s.ok()) {
      return s;
    }
    std::uint64_t id = 0;
    if (Status s = Checked(
            api_->profile_snapshot(ctx_, handle_, session, std::string(label).c_str(), &id));
        !s.ok()) {
      return s;
    }
    return id;
  }
  // profile_snapshots: the kept snapshots as JSON, oldest first:
  // [{"id":1,"label":"...","taken_ms":...}].
  Result<std::string> Snapshots(SessionId session) const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_snapshots)); !s.ok()) {
      return s;
    }
    std::string out;
    if (Status s =
            Checked(api_->profile_snapshots(ctx_, handle_, session, &detail::AppendTo, &out));
        !s.ok()) {
      return s;
    }
    return out;
  }
  // profile_rollback: puts snapshot `id` back as the document (MOLT_ERR_NOT_FOUND: unknown or
  // evicted).
  Status Rollback(SessionId session, std::uint64_t id) const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_rollback)); !s.ok()) {
      return s;
    }
    return Checked(api_->profile_rollback(ctx_, handle_, session, id));
  }
  // profile_backup_now: backs the document up at its next save, due or not.
  Status BackupNow(SessionId session) const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_backup_now)); !s.ok()) {
      return s;
    }
    return Checked(api_->profile_backup_now(ctx_, handle_, session));
  }
  // profile_transact: changes two sessions' profiles atomically. `mutate(a, b)` edits the two
  // JSON documents in place, during this call, and returns a Status (Status::Rejected aborts).
  // The outcome completes the returned Completion (Wait() on it in a process, then Release it):
  // MOLT_OK, or an error whose payload is the reason ("SaveBFailed: ..."). `id` (empty: a new one)
  // refuses replays.
  Result<Completion> Transact(SessionId a, SessionId b,
                              std::function<Status(std::string& a, std::string& b)> mutate,
                              std::string_view id = {}) const;
  // profile_key_load: loads the profile "<store name>/<key>", not a session's (a guild's bank);
  // the Completion completes once it is loaded (Wait() on it in a process). Then KeySession(key)
  // is the id the session calls take for it.
  Result<Completion> KeyLoad(std::string_view key) const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_key_load)); !s.ok()) {
      return s;
    }
    molt_completion_t c = 0;
    if (Status s = Checked(api_->profile_key_load(ctx_, handle_, std::string(key).c_str(), &c));
        !s.ok()) {
      return s;
    }
    return Completion(ctx_, api_, c);
  }
  // profile_key_session: the id of a loaded (or loading) key; MOLT_ERR_NOT_FOUND when it is not
  // loaded here.
  Result<SessionId> KeySession(std::string_view key) const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_key_session)); !s.ok()) {
      return s;
    }
    SessionId id = 0;
    if (Status s = Checked(api_->profile_key_session(ctx_, handle_, std::string(key).c_str(), &id));
        !s.ok()) {
      return s;
    }
    return id;
  }
  // profile_key_release: saves and releases the key, so other servers may load it.
  Status KeyRelease(std::string_view key) const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_key_release)); !s.ok()) {
      return s;
    }
    return Checked(api_->profile_key_release(ctx_, handle_, std::string(key).c_str()));
  }
  // profile_key_release with a NULL key: every key of the store.
  Status KeyReleaseAll() const {
    if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_key_release)); !s.ok()) {
      return s;
    }
    return Checked(api_->profile_key_release(ctx_, handle_, nullptr));
  }

 private:
  // OK when there is a host to ask and it offers the slot (`offered`: MOLT_API_HAS).
  Status Usable(bool offered) const {
    if (api_ == nullptr) {
      return detail::NoHost("profile store", handle_);
    }
    return offered ? Status()
                   : Status(MOLT_ERR_UNSUPPORTED, "this host keeps no profiles (ABI 1.4)");
  }
  Status Checked(molt_status_t code) const { return detail::Checked(ctx_, api_, code); }

  molt_context_t* ctx_ = nullptr;
  const molt_host_api* api_ = nullptr;
  molt_profile_t handle_ = 0;
};

// An interface fetched from a dependency: call `vtable->fn(self, ...)`.
template <class VTable>
struct Interface {
  const VTable* vtable = nullptr;
  void* self = nullptr;
  explicit operator bool() const { return vtable != nullptr; }
};

// --- Host ----------------------------------------------------------------------------------------

// The plugin's view of the host: its context and the host API table.
// --- Workers (ABI 1.6) ---------------------------------------------------------------------------

// How a job ended, as its done handler hears it (Host::OnJobDone). The views are valid during the
// handler's call only.
struct JobResult {
  molt_job_t job = 0;
  std::uint64_t tag = 0;
  Status status;                          // ok; the item's error; Timeout; Cancelled (closing)
  std::vector<std::string_view> results;  // in item order (one for Submit); empty on error
  std::size_t failed_item = 0;            // ForkJoin: the first item that failed
  bool inherited = false;                 // a detached job of an earlier generation
};

struct JobOptions {
  bool detached = false;       // MOLT_JOB_DETACHED: a swap hands the result to the next generation
  double timeout_seconds = 0;  // 0: the host's (10 s)
  std::uint64_t tag = 0;       // handed back in the result
  std::size_t chunk_size = 0;  // ForkJoin: items a worker takes at once; 0: the host picks
};

// --- Messages between servers (ABI 1.9) ----------------------------------------------------------

// A message a subscriber hears (Host::Subscribe). The views are valid during the handler's call
// only. Where it came from is for routing, not proof.
struct Message {
  std::string_view topic;
  std::string_view data;
  std::string_view server;  // the publisher's server id
  std::string_view branch;  // the branch it runs
  std::int64_t sent_ms = 0;
  bool self = false;      // published by this server
  bool replayed = false;  // held while no instance listened (a swap), handed to this one
};

// --- The key-value store (ABI 1.9) -------------------------------------------------------------

// A member of a sorted set, as Host::KvRange reads it.
struct KvEntry {
  std::string_view member;
  double score = 0;
};

// What a key-value call found (Host::Kv and its helpers). The views are valid during the
// handler's call only. `status`: ok; NotFound (no value); Rejected (a compare-and-set whose
// expected value was not there: `value` is the one there, if any); or why the store failed.
struct KvResult {
  Status status;
  std::optional<std::string_view> value;  // get, set, compare-and-set
  std::int64_t number = 0;                // increment: the sum; delete, unscore: 1 if it was
  std::vector<KvEntry> entries;           // range
};

class Host {
 public:
  Host() = default;
  Host(molt_context_t* ctx, const molt_host_api* api) : ctx_(ctx), api_(api) {}

  molt_context_t* context() const { return ctx_; }
  const molt_host_api* api() const { return api_; }
  // The host's ABI minor version; use MOLT_API_HAS(host.api(), slot) before newer slots.
  std::uint32_t abi_minor() const { return MOLT_ABI_MINOR_OF(api_->abi_version); }
  // The text of the last failed host call.
  std::string_view LastError() const { return api_->last_error(ctx_); }
  // OK, or the failure of a call that returned `code`, with the host's text.
  Status Check(molt_status_t code) const { return detail::Checked(ctx_, api_, code); }

  // Logging. Arguments are streamed (operator<<) only when the level is enabled.
  template <class... A>
  void Debug(const A&... parts) const {
    Log(MOLT_LOG_DEBUG, parts...);
  }
  template <class... A>
  void Info(const A&... parts) const {
    Log(MOLT_LOG_INFO, parts...);
  }
  template <class... A>
  void Warn(const A&... parts) const {
    Log(MOLT_LOG_WARN, parts...);
  }
  template <class... A>
  void Error(const A&... parts) const {
    Log(MOLT_LOG_ERROR, parts...);
  }
  template <class... A>
  void Log(std::int32_t level, const A&... parts) const {
    if (api_->log_enabled(ctx_, level) != 0) {
      std::ostringstream out;
      (out << ... << parts);
      api_->log(ctx_, level, out.str().c_str());
    }
  }

  // --- Bus ---

  // Subscribes `fn(std::string_view topic, molt::Args args)` to a topic, a family ("Combat.*") or
  // "*".
  template <class F>
  Result<Subscription> Subscribe(std::string_view pattern, F&& fn) const;

  Status Publish(std::string_view topic, std::initializer_list<molt_value> args = {}) const {
    return Check(api_->bus_publish(ctx_, std::string(topic).c_str(), args.begin(), args.size()));
  }
  Status Publish(Topic topic, std::initializer_list<molt_value> args = {}) const {
    return Check(api_->bus_publish_topic(ctx_, topic.handle, args.begin(), args.size()));
  }
  Status Publish(Topic topic, const molt_value* args, std::size_t count) const {
    return Check(api_->bus_publish_topic(ctx_, topic.handle, args, count));
  }
  Result<Topic> Resolve(std::string_view topic) const {
    Topic t;
    if (Status s = Check(api_->bus_resolve(ctx_, std::string(topic).c_str(), &t.handle)); !s.ok()) {
      return s;
    }
    return t;
  }

  // --- Hooks ---

  Status DefineHook(std::string_view point, bool fail_open) const {
    return Check(api_->hook_define(ctx_, std::string(point).c_str(),
                                   fail_open ? MOLT_HOOK_FAIL_OPEN : MOLT_HOOK_FAIL_CLOSED));
  }
  // Adds `fn(molt_hook_context&)` returning bool (false vetoes) or molt::Status.
  template <class F>
  Result<HookHandler> OnHook(std::string_view point, F&& fn,
                             std::int32_t priority = MOLT_HOOK_DEFAULT_PRIORITY) const;

  struct FireResult {
    bool passed = false;
    std::string error;  // the first failing handler's text
  };
  // Runs the chain: whether it passed is the result's; a call the host refused is the Status.
  Result<FireResult> FireHook(std::string_view point, molt_value* args, std::size_t count,
                              std::uint64_t session = 0) const {
    std::uint8_t passed = 0;
    const char* error = nullptr;
    if (Status s = Check(api_->hook_fire(ctx_, std::string(point).c_str(), args, count, session,
                                         &passed, &error));
        !s.ok()) {
      return s;
    }
    return FireResult{passed != 0, error != nullptr ? error : ""};
  }

  // --- Tasks (fn returns void or molt::Status) ---
  // `phase` (ABI 1.5): MOLT_PHASE_TICK, the main scheduler; MOLT_PHASE_PRE_TICK runs just before
  // its tasks in every tick, MOLT_PHASE_POST_TICK just after (task_start). A host older than 1.5
  // offers only the main one: another phase fails there with MOLT_ERR_UNSUPPORTED.

  template <class F>
  Result<Task> Schedule(F&& fn, std::int32_t priority = MOLT_PRIORITY_NORMAL,
                        std::int32_t phase = MOLT_PHASE_TICK) const;
  template <class F>
  Result<Task> After(double seconds, F&& fn, std::int32_t priority = MOLT_PRIORITY_NORMAL,
                     std::int32_t phase = MOLT_PHASE_TICK) const;
  template <class F>
  Result<Task> Every(double seconds, F&& fn, std::int32_t priority = MOLT_PRIORITY_NORMAL,
                     std::int32_t phase = MOLT_PHASE_TICK) const;

  // --- Analytics (ABI 1.5) ---

  // analytics_track: queues a product event (`fields_json`: empty, or a JSON object). Ok when
  // queued; Rejected when sampled out or over the host's cap (counted there, never silent);
  // Unsupported on a host that keeps no analytics.
  Status Track(std::string_view name, SessionId session = 0, double value = 0,
               std::string_view fields_json = {}) const {
    if (!MOLT_API_HAS(api_, analytics_track)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host keeps no analytics (ABI 1.5)");
    }
    return Check(api_->analytics_track(ctx_, std::string(name).c_str(), session, value,
                                       fields_json.data(), fields_json.size()));
  }

  // --- Workers (ABI 1.6; docs/workers.md) ---
  // A job runs `work(std::string_view input)` on a worker thread; it returns std::string or
  // molt::Result<std::string> (an error, or an exception, fails the job with its text). `work` is
  // copied into the job and may run on several workers at once (ForkJoin): it must not touch the
  // host or any state but its input. Its result comes back on the kernel thread, to the handler
  // declared under the job's handler name: `fn(const JobResult&)`. Unsupported before ABI 1.6.

  // job_handler: the handler is this instance's until it stops.
  template <class F>
  Status OnJobDone(std::string_view name, F&& fn) const;
  // job_submit: one call of `work` with `input`.
  template <class W>
  Result<molt_job_t> Submit(std::string_view handler, W&& work, std::string_view input,
                            const JobOptions& options = {}) const;
  // job_fork_join: one call of `work` per item; the results in item order.
  template <class W>
  Result<molt_job_t> ForkJoin(std::string_view handler, W&& work,
                              const std::vector<std::string>& items,
                              const JobOptions& options = {}) const;
  // job_cancel: its handler never hears of it.
  Status CancelJob(molt_job_t job) const {
    if (!MOLT_API_HAS(api_, job_cancel)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host runs no worker jobs (ABI 1.6)");
    }
    return Check(api_->job_cancel(ctx_, job));
  }

  // --- Live values (ABI 1.7; docs/live-values.md) ---
  // Values an operator tunes while the game runs ("<plugin>.<name>"; molt config set). The
  // default (JSON) is the truth in source control and fixes the type every override must have.
  // `check(std::string_view value_json)` (optional) returns molt::Status or bool: an error (or
  // false, or a throw) refuses the operator's value, its message the reason. Config.Changed on
  // the Bus (key, value JSON) tells of each real change. Unsupported before ABI 1.7.

  // live_declare.
  Status DeclareLive(std::string_view name, std::string_view default_json) const {
    return DeclareLive(name, default_json, nullptr);
  }
  template <class F>
  Status DeclareLive(std::string_view name, std::string_view default_json, F&& check) const;
  // live_get: the value served, as JSON: the override, else the default.
  Result<std::string> Live(std::string_view name) const {
    if (!MOLT_API_HAS(api_, live_get)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host keeps no live values (ABI 1.7)");
    }
    std::string out;
    const std::string n(name);
    if (Status s = Check(api_->live_get(
            ctx_, n.c_str(),
            [](void* ud, const void* data, std::size_t size) {
              static_cast<std::string*>(ud)->append(static_cast<const char*>(data), size);
            },
            &out));
        !s.ok()) {
      return s;
    }
    return out;
  }
  // Live() as a number, or `fallback` when it is none (or not declared).
  double LiveNumber(std::string_view name, double fallback) const {
    Result<std::string> v = Live(name);
    if (!v.ok() || v->empty()) {
      return fallback;
    }
    char* end = nullptr;
    const double d = std::strtod(v->c_str(), &end);
    return end == v->c_str() + v->size() ? d : fallback;
  }
  // Live() as true/false, or `fallback` when it is neither (or not declared).
  bool LiveBool(std::string_view name, bool fallback) const {
    Result<std::string> v = Live(name);
    return v.ok() && (*v == "true" || *v == "false") ? *v == "true" : fallback;
  }

  // --- Messages between servers (ABI 1.9; docs/fleet.md, "Messages") ---
  // message_publish: `data` (at most 1000 bytes) on `topic` to every server of the fleet, this
  // one included (not the Bus: that is this server's, Publish). Never blocks; RateLimited when
  // this server's rate or queue is spent.
  Status PublishMessage(std::string_view topic, std::string_view data) const {
    if (!MOLT_API_HAS(api_, message_publish)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host sends no messages between servers (ABI 1.9)");
    }
    const std::string t(topic);
    return Check(api_->message_publish(ctx_, t.c_str(), data.data(), data.size()));
  }
  // message_subscribe: `fn(const molt::Message&)` hears every message on `topic` until this
  // instance stops (a swap's next generation subscribes again and is handed what came between,
  // `replayed`). A throw is logged.
  template <class F>
  Status SubscribeMessages(std::string_view topic, F&& fn) const;

  // --- The key-value store (ABI 1.9; docs/fleet.md, "Key-value store") ---
  // Shared by the plugin's instances on every server of the fleet (a server alone keeps one in
  // memory); keys are this plugin's own. Each call runs off the kernel thread; `done(const
  // molt::KvResult&)` hears it there, once (never after the instance stopped). `ttl_seconds` 0
  // is 300.

  // kv_call with a whole op (molt.h's molt_kv_op).
  template <class F>
  Status Kv(const molt_kv_op& op, F&& done) const;
  // A molt_kv_op of `kind` on `key` (with `value` and `ttl_seconds`): they must outlive the
  // call to kv_call only.
  static molt_kv_op KvOp(std::uint32_t kind, const std::string& key, std::string_view value = {},
                         double ttl_seconds = 0) {
    molt_kv_op op{};
    op.struct_size = sizeof(op);
    op.kind = kind;
    op.key = key.c_str();
    op.value = value.data();
    op.value_size = value.size();
    op.ttl_seconds = ttl_seconds;
    return op;
  }
  template <class F>
  Status KvGet(std::string_view key, F&& done) const {
    const std::string k(key);
    return Kv(KvOp(MOLT_KV_GET, k), std::forward<F>(done));
  }
  template <class F>
  Status KvSet(std::string_view key, std::string_view value, F&& done,
               double ttl_seconds = 0) const {
    const std::string k(key);
    return Kv(KvOp(MOLT_KV_SET, k, value, ttl_seconds), std::forward<F>(done));
  }
  // Sets `value` only while the key holds `expected` (nullopt: while it is absent).
  template <class F>
  Status KvCompareAndSet(std::string_view key, std::optional<std::string_view> expected,
                         std::string_view value, F&& done, double ttl_seconds = 0) const {
    const std::string k(key);
    molt_kv_op op = KvOp(MOLT_KV_CAS, k, value, ttl_seconds);
    if (expected) {
      op.expected = expected->data();
      op.expected_size = expected->size();
    } else {
      op.flags |= MOLT_KV_ABSENT;
    }
    return Kv(op, std::forward<F>(done));
  }
  template <class F>
  Status KvDelete(std::string_view key, F&& done) const {
    const std::string k(key);
    return Kv(KvOp(MOLT_KV_DELETE, k), std::forward<F>(done));
  }
  template <class F>
  Status KvIncrement(std::string_view key, std::int64_t by, F&& done,
                     double ttl_seconds = 0) const {
    const std::string k(key);
    molt_kv_op op = KvOp(MOLT_KV_INCREMENT, k, {}, ttl_seconds);
    op.number = static_cast<double>(by);
    return Kv(op, std::forward<F>(done));
  }
  // The sorted set `key`: `member`'s score (ZADD), its removal, and a range read by score
  // (-INFINITY to INFINITY: every member).
  template <class F>
  Status KvScore(std::string_view key, std::string_view member, double score, F&& done,
                 double ttl_seconds = 0) const {
    const std::string k(key);
    molt_kv_op op = KvOp(MOLT_KV_ZADD, k, member, ttl_seconds);
    op.number = score;
    return Kv(op, std::forward<F>(done));
  }
  template <class F>
  Status KvUnscore(std::string_view key, std::string_view member, F&& done) const {
    const std::string k(key);
    return Kv(KvOp(MOLT_KV_ZREMOVE, k, member), std::forward<F>(done));
  }
  template <class F>
  Status KvRange(std::string_view key, double lowest, double highest, std::uint32_t limit,
                 bool descending, F&& done) const {
    const std::string k(key);
    molt_kv_op op = KvOp(MOLT_KV_ZRANGE, k);
    op.number = lowest;
    op.number2 = highest;
    op.limit = limit;
    op.flags = descending ? MOLT_KV_DESCENDING : 0u;
    return Kv(op, std::forward<F>(done));
  }

  // --- Processes ---

  // A Created process running `body` (returning void, std::string (its result) or
  // molt::Status); Start() it. Inside, use Yield, Sleep and Wait.
  template <class F>
  Result<Process> Spawn(F&& body, const ProcessOptions& options = {}) const;
  // Inside a process body: resume on a later scheduler step. Throws ProcessKilled when the
  // process was killed; MOLT_ERR_STATE outside one of this plugin's processes.
  Status Yield() const { return Parked(api_->process_yield(ctx_)); }
  // Inside a process body: park until `seconds` from now (as Yield otherwise).
  Status Sleep(double seconds) const { return Parked(api_->process_sleep(ctx_, seconds)); }
  struct WaitResult {
    molt_status_t code = MOLT_OK;  // what the completion completed with
    std::string payload;
  };
  // Inside a process body: park until `completion` completes; what it completed with is the
  // result's (an error the completion carries is not a failed call). Throws ProcessKilled when
  // the process was killed.
  Result<WaitResult> Wait(const Completion& completion) const {
    WaitResult r;
    r.code = api_->process_wait(
        ctx_, completion.handle(),
        [](void* ud, const void* data, std::size_t n) {
          static_cast<std::string*>(ud)->append(static_cast<const char*>(data), n);
        },
        &r.payload);
    if (r.code == MOLT_ERR_CANCELLED || r.code == MOLT_ERR_STATE ||
        r.code == MOLT_ERR_INVALID_ARGUMENT || r.code == MOLT_ERR_STALE) {
      if (Status s = Parked(r.code); !s.ok()) {  // the call itself failed
        return s;
      }
    }
    return r;
  }
  // Lets go of a completion (ABI 1.2): without it, completions live until the plugin stops.
  Status Release(const Completion& completion) const {
    if (!MOLT_API_HAS(api_, completion_release)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host keeps completions until the plugin stops");
    }
    return Check(api_->completion_release(ctx_, completion.handle()));
  }

  Result<Completion> CreateCompletion() const {
    molt_completion_t c = 0;
    if (Status s = Check(api_->completion_create(ctx_, &c)); !s.ok()) {
      return s;
    }
    return Completion(ctx_, api_, c);
  }

  // --- Scopes ---

  // A scope under the plugin's root scope (or under `parent`).
  Result<Scope> CreateScope(molt_scope_t parent = 0) const {
    molt_scope_t s = 0;
    if (Status st = Check(api_->scope_create(ctx_, parent, &s)); !st.ok()) {
      return st;
    }
    return Scope(ctx_, api_, s);
  }
  // Runs `fn` when `scope` closes (0: when the plugin stops). On a closed scope `fn` runs at once
  // and the Status is MOLT_ERR_SCOPE_CLOSED.
  template <class F>
  Status Defer(molt_scope_t scope, F&& fn) const;
  // Hands a handle over to `scope` (the RAII object gives up ownership).
  template <class H>
  Status Adopt(molt_scope_t scope, H& handle) const {
    const molt_handle_t h = handle.get();
    const Status s = Check(api_->scope_adopt(ctx_, scope, h));
    if (s.ok()) {
      (void)handle.Release();
    }
    return s;
  }

  // --- Services, configuration, stats ---

  // Interface `name` of the dependency `service`; UNSUPPORTED when its vtable is older (smaller)
  // than VTable.
  template <class VTable>
  Result<Interface<VTable>> GetInterface(std::string_view service, std::string_view name) const {
    molt_interface_ref ref{};
    if (Status s = Check(api_->service_interface(ctx_, std::string(service).c_str(),
                                                 std::string(name).c_str(), &ref));
        !s.ok()) {
      return s;
    }
    if (ref.vtable_size < sizeof(VTable)) {
      return Status(MOLT_ERR_UNSUPPORTED,
                    "interface \"" + std::string(name) + "\" of \"" + std::string(service) +
                        "\" has a vtable of " + std::to_string(ref.vtable_size) +
                        " bytes, older than the " + std::to_string(sizeof(VTable)) +
                        " this plugin was built for");
    }
    Interface<VTable> out;
    out.vtable = static_cast<const VTable*>(ref.vtable);
    out.self = ref.self;
    return out;
  }

  // The configuration value `key` (this plugin's section first, then the kernel's);
  // MOLT_ERR_NOT_FOUND when unset.
  Result<molt_value> Config(std::string_view key) const {
    molt_value v{};
    if (Status s = Check(api_->config_get(ctx_, std::string(key).c_str(), &v)); !s.ok()) {
      return s;
    }
    return v;
  }
  // A configuration value of one type, or `fallback` when it is unset or of another type.
  std::int64_t ConfigInt(std::string_view key, std::int64_t fallback) const {
    auto v = Config(key);
    return v.ok() && v->type == MOLT_VALUE_INT ? v->as.i : fallback;
  }
  double ConfigDouble(std::string_view key, double fallback) const {
    auto v = Config(key);
    if (v.ok() && v->type == MOLT_VALUE_DOUBLE) {
      return v->as.d;
    }
    return v.ok() && v->type == MOLT_VALUE_INT ? static_cast<double>(v->as.i) : fallback;
  }
  bool ConfigBool(std::string_view key, bool fallback) const {
    auto v = Config(key);
    return v.ok() && v->type == MOLT_VALUE_BOOL ? v->as.i != 0 : fallback;
  }
  std::string ConfigString(std::string_view key, std::string fallback) const {
    auto v = Config(key);
    return v.ok() && v->type == MOLT_VALUE_STRING
               ? std::string(static_cast<const char*>(v->as.ptr), v->size)
               : fallback;
  }

  Result<std::string> StatsJson() const {
    std::string out;
    if (Status s = Check(api_->stats_json(
            ctx_,
            [](void* ud, const void* data, std::size_t size) {
              static_cast<std::string*>(ud)->append(static_cast<const char*>(data), size);
            },
            &out));
        !s.ok()) {
      return s;
    }
    return out;
  }

  // --- Networking (ABI 1.1; server hosts) ---
  // Payloads are bytes in a std::string_view. `verify(payload)` returns bool (the schema's
  // generated verifier); handlers return void or molt::Status.

  // fn(SessionId, std::string_view payload)
  template <class V, class F>
  Result<Channel> DeclareIntent(std::string_view name, const ChannelOptions& options, V&& verify,
                                F&& fn) const {
    return Declare<MOLT_CHANNEL_INTENT>(name, options, std::forward<V>(verify),
                                        std::forward<F>(fn));
  }
  // fn(SessionId, std::string_view payload, molt_request_t request): answer with Reply().
  template <class V, class F>
  Result<Channel> DeclareRequest(std::string_view name, const ChannelOptions& options, V&& verify,
                                 F&& fn) const {
    return Declare<MOLT_CHANNEL_REQUEST>(name, options, std::forward<V>(verify),
                                         std::forward<F>(fn));
  }
  // An event channel: send on it with Channel::Send and Channel::Broadcast.
  Result<Channel> DeclareEvent(std::string_view name, std::string_view schema) const {
    ChannelOptions o;
    o.schema = std::string(schema);
    return Declare<MOLT_CHANNEL_EVENT>(name, o, nullptr, nullptr);
  }
  // ABI 1.10. An unreliable channel ("lost > late", payloads <= MOLT_UNRELIABLE_MAX_PAYLOAD):
  // send on it with Channel::Send and Channel::Broadcast; clients send nothing on it.
  Result<Channel> DeclareUnreliable(std::string_view name, const ChannelOptions& options) const {
    return Declare<MOLT_CHANNEL_UNRELIABLE>(name, options, nullptr, nullptr);
  }
  // ... and one clients send on too: fn(SessionId, std::string_view payload) hears them.
  template <class V, class F>
  Result<Channel> DeclareUnreliable(std::string_view name, const ChannelOptions& options,
                                    V&& verify, F&& fn) const {
    return Declare<MOLT_CHANNEL_UNRELIABLE>(name, options, std::forward<V>(verify),
                                            std::forward<F>(fn));
  }
  // ABI 1.10. A predicted intent: fn(SessionId, std::string_view payload) as for an intent; the
  // client hears it accepted when fn returns OK, rejected (and rolls back) otherwise.
  template <class V, class F>
  Result<Channel> DeclarePredictedIntent(std::string_view name, const ChannelOptions& options,
                                         V&& verify, F&& fn) const {
    return Declare<MOLT_CHANNEL_PREDICTED_INTENT>(name, options, std::forward<V>(verify),
                                                  std::forward<F>(fn));
  }
  Status Reply(molt_request_t request, molt_status_t code, std::string_view payload = {}) const {
    return Check(api_->request_reply(ctx_, request, code, payload.data(), payload.size()));
  }
  // fn(SessionId) for every live session now and every future one.
  template <class F>
  Result<Subscription> OnSession(F&& fn) const;
  // fn() when the session ends (after every ordinary binding when `last`); also when this
  // instance stops first (ABI 1.1). BindEnd is the binding a swap cannot trigger.
  template <class F>
  Status Bind(SessionId session, F&& fn, bool last = false) const;
  // fn(int32_t exit_reason) only when the session really ends, never when a swap replaces this
  // instance (ABI 1.3: released is not left).
  template <class F>
  Status BindEnd(SessionId session, F&& fn, bool last = false) const;
  Status Kick(SessionId session, const char* reason = nullptr) const {
    return Check(api_->session_kick(ctx_, session, reason));
  }
  // The session's user, join data, address, state (spec: getSession); NOT_FOUND once it is gone.
  Result<molt_session_info> GetSession(SessionId session) const {
    molt_session_info info{};
    info.struct_size = sizeof(info);
    if (Status s = Check(api_->session_info(ctx_, session, &info)); !s.ok()) {
      return s;
    }
    return info;
  }

  // --- Generations (ABI 1.3) ---
  // In ImportState: takes over the replica the previous instance held as `predecessor` (put its
  // handle, replica.get(), in ExportState's bytes): same id, same values, no remove for clients.
  Result<Replica> ClaimReplica(molt_replica_t predecessor) const {
    if (!MOLT_API_HAS(api_, replica_claim)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host cannot hand replicas over (ABI 1.3)");
    }
    molt_replica_t r = 0;
    if (Status s = Check(api_->replica_claim(ctx_, predecessor, &r)); !s.ok()) {
      return s;
    }
    return Replica(ctx_, api_, r);
  }
  // Asks the host to load its plugin directory again as a new generation, on a later step.
  Status RequestReload(const char* reason = nullptr) const {
    if (!MOLT_API_HAS(api_, reload_request)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host cannot reload (ABI 1.3)");
    }
    return Check(api_->reload_request(ctx_, reason));
  }

  // --- Profiles (ABI 1.4; server hosts; docs/profiles.md) ---
  // Declares the store `name` (or adopts it in a swap). A session's profile loads when it joins:
  // subscribe to Kernel.ProfileLoaded(session, name) before reading it. The calls on the store
  // are ProfileStore's.
  Result<ProfileStore> DeclareProfiles(std::string_view name, ProfileOptions options) const;

  // --- Interest (ABI 1.11; server hosts; docs/network.md, "Interest") ---
  // Declares the zone `name`, or in a swap finds the previous generation's (members kept).
  Result<Zone> DeclareZone(std::string_view name) const {
    if (!MOLT_API_HAS(api_, zone_declare)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host has no zones (ABI 1.11)");
    }
    molt_zone_t z = 0;
    if (Status s = Check(api_->zone_declare(ctx_, std::string(name).c_str(), &z)); !s.ok()) {
      return s;
    }
    return Zone(ctx_, api_, z);
  }
  // Declares the grid `name`, or in a swap finds the previous generation's (positions kept).
  Result<Grid> DeclareGrid(std::string_view name, const GridOptions& o) const {
    if (!MOLT_API_HAS(api_, grid_declare)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host has no grids (ABI 1.11)");
    }
    const std::string n(name);
    molt_grid_spec spec{};
    spec.struct_size = sizeof(spec);
    spec.name = n.c_str();
    spec.radius = o.radius;
    spec.cell_size = o.cell_size;
    spec.leave_radius = o.leave_radius;
    spec.rate = o.rate;
    molt_grid_t g = 0;
    if (Status s = Check(api_->grid_declare(ctx_, &spec, &g)); !s.ok()) {
      return s;
    }
    return Grid(ctx_, api_, g);
  }

  // --- Replicas (ABI 1.2; server hosts) ---
  // Creates a replica; its writes are Replica's (SetInt, SetFloat, SetBytes, AddSession, ...).
  Result<Replica> CreateReplica(std::string_view name, const ReplicaOptions& o) const {
    if (!MOLT_API_HAS(api_, replica_create)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host has no replicas (ABI 1.2)");
    }
    std::vector<molt_replica_field> fields;
    for (const auto& f : o.fields) {
      fields.push_back(molt_replica_field{f.name.c_str(), f.type, f.max_bytes});
    }
    const std::string n(name);
    molt_replica_spec spec{};
    spec.struct_size = sizeof(spec);
    spec.audience = o.list_audience ? MOLT_AUDIENCE_LIST : MOLT_AUDIENCE_ALL;
    spec.name = n.c_str();
    spec.fields = fields.data();
    spec.field_count = fields.size();
    spec.tick_rate = o.tick_rate;
    std::vector<double> quantize;
    for (const auto& f : o.fields) {
      quantize.push_back(f.quantize);
    }
    spec.quantize = quantize.data();
    molt_replica_t r = 0;
    if (Status s = Check(api_->replica_create(ctx_, &spec, &r)); !s.ok()) {
      return s;
    }
    return Replica(ctx_, api_, r);
  }

  // --- The client side (ABI 1.2; controllers in libmolt_client) ---
  // Server events and replica updates arrive on the Bus: Subscribe("Net.Event.<channel>", ...),
  // Subscribe("Net.Replica.<name>", ...), Subscribe("Net.State", ...).
  Status Intent(std::string_view channel, std::string_view payload) const {
    if (!MOLT_API_HAS(api_, client_intent)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host is not a client: intents come from clients");
    }
    return Check(
        api_->client_intent(ctx_, std::string(channel).c_str(), payload.data(), payload.size()));
  }
  // ABI 1.10: a predicted intent; its seq. Its resolution arrives on the Bus as
  // "Net.Resolved.<channel>" (seq, accepted 1/0, status): roll back the prediction on 0.
  Result<std::uint32_t> Predict(std::string_view channel, std::string_view payload) const {
    if (!MOLT_API_HAS(api_, client_predict)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host is not a client of ABI 1.10 or later");
    }
    std::uint32_t seq = 0;
    if (Status s = Check(api_->client_predict(ctx_, std::string(channel).c_str(), payload.data(),
                                              payload.size(), &seq));
        !s.ok()) {
      return s;
    }
    return seq;
  }
  // ABI 1.10: fn(std::uint32_t seq, std::string_view payload) for each predicted intent on
  // `channel` not yet resolved, oldest first: replay them over authoritative state.
  template <class F>
  Status Pending(std::string_view channel, F&& fn) const {
    if (!MOLT_API_HAS(api_, client_pending)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host is not a client of ABI 1.10 or later");
    }
    auto each = [](void* ud, std::uint32_t seq, const void* data, std::size_t size) {
      (*static_cast<std::remove_reference_t<F>*>(ud))(
          seq, std::string_view(static_cast<const char*>(data), size));
    };
    return Check(api_->client_pending(ctx_, std::string(channel).c_str(), each, &fn));
  }
  // The answer completes the returned Completion: Wait() on it inside a process.
  Result<Completion> Request(std::string_view channel, std::string_view payload,
                             double timeout_seconds = 0) const {
    if (!MOLT_API_HAS(api_, client_request)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host is not a client: requests come from clients");
    }
    molt_completion_t c = 0;
    if (Status s = Check(api_->client_request(ctx_, std::string(channel).c_str(), payload.data(),
                                              payload.size(), timeout_seconds, &c));
        !s.ok()) {
      return s;
    }
    return Completion(ctx_, api_, c);
  }
  // Inside a process: Request, Wait, then Release the completion.
  Result<WaitResult> Ask(std::string_view channel, std::string_view payload,
                         double timeout_seconds = 0) const {
    Result<Completion> answer = Request(channel, payload, timeout_seconds);
    if (!answer.ok()) {
      return answer.status();
    }
    Result<WaitResult> r = Wait(*answer);
    (void)Release(*answer);
    return r;
  }
  // Field `field` of the held replica `replica`.
  Result<molt_value> ReplicaField(std::string_view replica, std::string_view field) const {
    if (!MOLT_API_HAS(api_, client_replica_get)) {
      return Status(MOLT_ERR_UNSUPPORTED, "this host is not a client: replicas are read there");
    }
    molt_value v{};
    if (Status s = Check(api_->client_replica_get(ctx_, std::string(replica).c_str(),
                                                  std::string(field).c_str(), &v));
        !s.ok()) {
      return s;
    }
    return v;
  }

  // --- MOLT_HPP_REVISION 1 spellings: deprecated, removed in the next minor release ---
  // Each does exactly what it did (the calls are the ones named in its message).

  [[deprecated("use Channel::Send")]] Status Send(const Channel& channel, SessionId session,
                                                  std::string_view payload) const {
    return Check(
        api_->event_send(ctx_, channel.get(), &session, 1, payload.data(), payload.size()));
  }
  [[deprecated("use Channel::Broadcast")]] Status Broadcast(const Channel& channel,
                                                            std::string_view payload) const {
    return Check(api_->event_send(ctx_, channel.get(), nullptr, 0, payload.data(), payload.size()));
  }
  [[deprecated("use Replica::SetInt")]] Status SetInt(const Replica& r, std::uint32_t field,
                                                      std::int64_t value) const {
    return Check(api_->replica_set_int(ctx_, r.get(), field, value));
  }
  [[deprecated("use Replica::SetFloat")]] Status SetFloat(const Replica& r, std::uint32_t field,
                                                          double value) const {
    return Check(api_->replica_set_float(ctx_, r.get(), field, value));
  }
  [[deprecated("use Replica::SetBytes")]] Status SetBytes(const Replica& r, std::uint32_t field,
                                                          std::string_view value) const {
    return Check(api_->replica_set_bytes(ctx_, r.get(), field, value.data(), value.size()));
  }
  [[deprecated("use Replica::AddSession")]] Status AddToReplica(const Replica& r,
                                                                SessionId session) const {
    return Check(api_->replica_add_session(ctx_, r.get(), session));
  }
  [[deprecated("use Replica::RemoveSession")]] Status RemoveFromReplica(const Replica& r,
                                                                        SessionId session) const {
    return Check(api_->replica_remove_session(ctx_, r.get(), session));
  }
  // The profile calls run as the store's methods with this host's context and table, as they did.
  [[deprecated("use ProfileStore::State")]] Result<std::int32_t> GetProfileState(
      ProfileStore store, SessionId session) const {
    return Mine(store).State(session);
  }
  [[deprecated("use ProfileStore::Get")]] Result<std::string> GetProfile(
      ProfileStore store, SessionId session, std::string_view path = {}) const {
    return Mine(store).Get(session, path);
  }
  [[deprecated("use ProfileStore::Set")]] Status SetProfile(ProfileStore store, SessionId session,
                                                            std::string_view path,
                                                            std::string_view json) const {
    return Mine(store).Set(session, path, json);
  }
  [[deprecated("use ProfileStore::Save")]] Status SaveProfiles(ProfileStore store) const {
    return Mine(store).Save();
  }
  [[deprecated("use ProfileStore::Snapshot")]] Result<std::uint64_t> SnapshotProfile(
      ProfileStore store, SessionId session, std::string_view label = {}) const {
    return Mine(store).Snapshot(session, label);
  }
  [[deprecated("use ProfileStore::Snapshots")]] Result<std::string> ProfileSnapshots(
      ProfileStore store, SessionId session) const {
    return Mine(store).Snapshots(session);
  }
  [[deprecated("use ProfileStore::Rollback")]] Status RollbackProfile(ProfileStore store,
                                                                      SessionId session,
                                                                      std::uint64_t id) const {
    return Mine(store).Rollback(session, id);
  }
  [[deprecated("use ProfileStore::BackupNow")]] Status BackupProfileNow(ProfileStore store,
                                                                        SessionId session) const {
    return Mine(store).BackupNow(session);
  }
  [[deprecated("use ProfileStore::KeyLoad")]] Result<Completion> LoadProfileKey(
      ProfileStore store, std::string_view key) const {
    return Mine(store).KeyLoad(key);
  }
  [[deprecated("use ProfileStore::KeySession")]] Result<SessionId> ProfileKey(
      ProfileStore store, std::string_view key) const {
    return Mine(store).KeySession(key);
  }
  [[deprecated("use ProfileStore::KeyRelease")]] Status ReleaseProfileKey(
      ProfileStore store, std::string_view key) const {
    return Mine(store).KeyRelease(key);
  }
  [[deprecated("use ProfileStore::KeyReleaseAll")]] Status ReleaseAllProfileKeys(
      ProfileStore store) const {
    return Mine(store).KeyReleaseAll();
  }
  [[deprecated("use ProfileStore::Transact")]] Result<Completion> TransactProfiles(
      ProfileStore store, SessionId a, SessionId b,
      std::function<Status(std::string& a, std::string& b)> mutate,
      std::string_view id = {}) const {
    return Mine(store).Transact(a, b, std::move(mutate), id);
  }

 private:
  // `store`'s id as a store of this host: what the deprecated profile calls used.
  ProfileStore Mine(const ProfileStore& store) const {
    return ProfileStore(ctx_, api_, store.get());
  }

  template <std::int32_t kKind, class V, class F>
  Result<Channel> Declare(std::string_view name, const ChannelOptions& o, V&& verify, F&& fn) const;

  // Yield, Sleep and Wait: a kill unwinds the body; another failure is the Status.
  Status Parked(molt_status_t code) const {
    if (code == MOLT_ERR_CANCELLED) {
      throw ProcessKilled{};
    }
    return Check(code);
  }
  // Hands `box` (a detail::Box) to a slot: `call(box, release, &handle)`. A box the host refused
  // never reached it, so it is freed here; a box it took is freed by `release`, once.
  template <class B, class Call>
  Result<molt_handle_t> Register(B* box, Call&& call) const;
  // A handle type (an OwnedHandle, Process, Completion) for a registration's result.
  template <class H>
  Result<H> Wrap(Result<molt_handle_t> handle) const {
    if (!handle.ok()) {
      return handle.status();
    }
    return H(ctx_, api_, *handle);
  }
  template <class F, class Arm>
  Result<Task> ArmTask(F&& fn, Arm&& arm) const;
  // Submit and ForkJoin: `work` boxed for the workers, then `call(spec)`.
  template <class W, class Call>
  Result<molt_job_t> StartJob(std::string_view handler, W&& work, const JobOptions& o,
                              Call&& call) const;
  template <class F>
  Result<Task> StartTask(std::int32_t kind, double seconds, F&& fn, std::int32_t priority,
                         std::int32_t phase) const;

  molt_context_t* ctx_ = nullptr;
  const molt_host_api* api_ = nullptr;
};

namespace detail {

inline molt_status_t Report(const Host& host, const Status& s) {
  if (!s.ok()) {
    host.api()->set_error(host.context(), s.message().c_str());
  }
  return s.code();
}

template <class F>
molt_status_t CallGuarded(const Host& host, F&& fn) noexcept {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
      fn();
      return MOLT_OK;
    } else {
      return ResultCode(host, fn());
    }
  } catch (const std::exception& e) {
    host.api()->set_error(host.context(), e.what());
  } catch (...) {
    host.api()->set_error(host.context(), "unknown exception");
  }
  return MOLT_ERR_INTERNAL;
}

template <class F>
void CallLogged(const Host& host, const char* what, F&& fn) noexcept {
  if (CallGuarded(host, std::forward<F>(fn)) != MOLT_OK) {
    const std::string line =
        std::string(what) + " failed: " + std::string(host.api()->last_error(host.context()));
    host.api()->log(host.context(), MOLT_LOG_ERROR, line.c_str());
  }
}

template <class F>
struct Box {
  Host host;
  F fn;
};

template <class F>
Box<std::decay_t<F>>* MakeBox(const Host& host, F&& fn) {
  return new Box<std::decay_t<F>>{host, std::forward<F>(fn)};
}

// A channel's two callables, boxed together.
template <class V, class F>
struct ChannelCallables {
  V verify;
  F fn;
};

}  // namespace detail

template <class B, class Call>
Result<molt_handle_t> Host::Register(B* box, Call&& call) const {
  molt_handle_t handle = 0;
  const molt_status_t code = call(static_cast<void*>(box), &detail::DeleteBox<B>, &handle);
  if (code != MOLT_OK) {
    delete box;  // refused: the host never took it
    return Check(code);
  }
  return handle;
}

template <std::int32_t kKind, class V, class F>
Result<Channel> Host::Declare(std::string_view name, const ChannelOptions& o, V&& verify,
                              F&& fn) const {
  using C = detail::ChannelCallables<std::decay_t<V>, std::decay_t<F>>;
  using B = detail::Box<C>;
  B* box = detail::MakeBox(*this, C{std::forward<V>(verify), std::forward<F>(fn)});
  const std::string n(name);
  molt_channel_spec spec{};
  spec.struct_size = sizeof(spec);
  spec.kind = kKind;
  spec.name = n.c_str();
  spec.schema = o.schema.c_str();
  spec.rules = o.rules.data();
  spec.rule_count = o.rules.size();
  spec.rate = o.rate;
  spec.burst = o.burst;
  spec.open = o.open ? 1 : 0;
  spec.timeout_seconds = o.timeout_seconds;
  spec.reject_payload = o.reject_payload.data();
  spec.reject_size = o.reject_payload.size();
  spec.unreliable_priority = o.unreliable_priority;
  spec.latest_wins = o.latest_wins ? 1 : 0;
  if constexpr (!std::is_same_v<std::decay_t<V>, std::nullptr_t>) {
    spec.verify = [](void* ud, const void* data, std::size_t size) noexcept -> std::int32_t {
      auto* b = static_cast<B*>(ud);
      // A verifier that throws rejects (and says why).
      return detail::CallGuarded(
                 b->host,
                 [&] {
                   return b->fn.verify(std::string_view(static_cast<const char*>(data), size));
                 }) == MOLT_OK
                 ? 1
                 : 0;
    };
  }
  if constexpr (std::is_same_v<std::decay_t<F>, std::nullptr_t>) {
    // an event channel: no handler
  } else if constexpr (kKind == MOLT_CHANNEL_INTENT || kKind == MOLT_CHANNEL_UNRELIABLE ||
                       kKind == MOLT_CHANNEL_PREDICTED_INTENT) {
    spec.on_intent = [](void* ud, molt_session_t s, const molt_value* args,
                        std::size_t) noexcept -> molt_status_t {
      auto* b = static_cast<B*>(ud);
      const std::string_view payload(static_cast<const char*>(args[0].as.ptr), args[0].size);
      return detail::CallGuarded(b->host, [&] { return b->fn.fn(s, payload); });
    };
  } else {
    spec.on_request = [](void* ud, molt_session_t s, const molt_value* args, std::size_t,
                         molt_request_t r) noexcept -> molt_status_t {
      auto* b = static_cast<B*>(ud);
      const std::string_view payload(static_cast<const char*>(args[0].as.ptr), args[0].size);
      return detail::CallGuarded(b->host, [&] { return b->fn.fn(s, payload, r); });
    };
  }
  return Wrap<Channel>(Register(box, [&](void* ud, molt_cleanup_fn release, molt_handle_t* out) {
    spec.user_data = ud;
    return api_->channel_declare(ctx_, &spec, release, out);
  }));
}

inline Status Replica::SetInterest(std::function<bool(SessionId)> interest) const {
  // The predicate, boxed; the host releases the box when it is replaced or the replica goes.
  struct Box {
    std::function<bool(SessionId)> fn;
    molt_context_t* ctx;
    const molt_host_api* api;
    static std::int32_t Call(void* ud, molt_session_t s) noexcept {
      auto* box = static_cast<Box*>(ud);
      try {
        return box->fn(s) ? 1 : 0;
      } catch (const std::exception& e) {
        box->api->log(box->ctx, MOLT_LOG_ERROR,
                      (std::string("an interest predicate threw: ") + e.what()).c_str());
      } catch (...) {
        box->api->log(box->ctx, MOLT_LOG_ERROR, "an interest predicate threw");
      }
      return 0;
    }
    static void Release(void* ud) noexcept { delete static_cast<Box*>(ud); }
  };
  return Invoke("replica", [&](molt_context_t* ctx, const molt_host_api* api, molt_handle_t h) {
    if (!MOLT_API_HAS(api, replica_set_interest)) {
      return static_cast<molt_status_t>(MOLT_ERR_UNSUPPORTED);
    }
    if (!interest) {
      return api->replica_set_interest(ctx, h, nullptr, nullptr, nullptr);
    }
    auto* box = new Box{std::move(interest), ctx, api};
    return api->replica_set_interest(ctx, h, &Box::Call, box, &Box::Release);
  });
}

inline Result<ProfileStore> Host::DeclareProfiles(std::string_view name,
                                                  ProfileOptions options) const {
  if (!MOLT_API_HAS(api_, profile_declare)) {
    return Status(MOLT_ERR_UNSUPPORTED, "this host keeps no profiles (ABI 1.4)");
  }
  using B = detail::Box<ProfileOptions>;
  B* box = detail::MakeBox(*this, std::move(options));
  const ProfileOptions& o = box->fn;
  const std::string n(name);
  molt_profile_spec spec{};
  spec.struct_size = sizeof(spec);
  spec.schema_version = o.schema_version;
  spec.name = n.c_str();
  spec.defaults_json = o.defaults.c_str();
  spec.autosave_seconds = o.autosave_seconds;
  spec.lease_seconds = o.lease_seconds;
  spec.backoff_seconds = o.backoff_seconds.data();
  spec.backoff_count = o.backoff_seconds.size();
  spec.flags =
      (o.kick_on_load_failure ? 0u : MOLT_PROFILE_NO_KICK) | (o.mirror ? MOLT_PROFILE_MIRROR : 0u);
  spec.backup_seconds = o.backup_seconds;
  if (o.migrate) {
    spec.migrate = [](void* ud, std::uint32_t from, const char* doc, std::size_t size,
                      molt_bytes_fn sink, void* sink_ud) noexcept {
      auto* b = static_cast<B*>(ud);
      return detail::CallGuarded(b->host, [&]() -> Status {
        Result<std::string> next = b->fn.migrate(from, std::string_view(doc, size));
        if (!next.ok()) {
          return next.status();
        }
        sink(sink_ud, next->data(), next->size());
        return Status();
      });
    };
  }
  if (o.validate) {
    spec.validate = [](void* ud, const char* doc, std::size_t size) noexcept {
      auto* b = static_cast<B*>(ud);
      return detail::CallGuarded(b->host,
                                 [&] { return b->fn.validate(std::string_view(doc, size)); });
    };
  }
  return Wrap<ProfileStore>(
      Register(box, [&](void* ud, molt_cleanup_fn release, molt_handle_t* out) {
        spec.user_data = ud;
        return api_->profile_declare(ctx_, &spec, release, out);
      }));
}

inline Result<Completion> ProfileStore::Transact(
    SessionId a, SessionId b, std::function<Status(std::string& a, std::string& b)> mutate,
    std::string_view id) const {
  if (Status s = Usable(api_ != nullptr && MOLT_API_HAS(api_, profile_transact)); !s.ok()) {
    return s;
  }
  struct Call {
    Host host;
    std::function<Status(std::string&, std::string&)> fn;
  } call{Host(ctx_, api_), std::move(mutate)};
  molt_profile_mutate_fn trampoline = [](void* ud, const char* da, std::size_t na, const char* db,
                                         std::size_t nb, molt_bytes_fn sink_a, void* ua,
                                         molt_bytes_fn sink_b, void* ub) noexcept {
    auto* c = static_cast<Call*>(ud);
    return detail::CallGuarded(c->host, [&]() -> Status {
      std::string a(da, na);
      std::string b(db, nb);
      Status s = c->fn(a, b);
      if (s.ok()) {
        sink_a(ua, a.data(), a.size());
        sink_b(ub, b.data(), b.size());
      }
      return s;
    });
  };
  molt_completion_t c = 0;  // the mutator runs inside the call: `call` outlives it
  if (Status s = Checked(api_->profile_transact(ctx_, handle_, a, b, std::string(id).c_str(),
                                                trampoline, &call, &c));
      !s.ok()) {
    return s;
  }
  return Completion(ctx_, api_, c);
}

template <class F>
Result<Subscription> Host::OnSession(F&& fn) const {
  auto* box = detail::MakeBox(*this, std::forward<F>(fn));
  using B = std::remove_pointer_t<decltype(box)>;
  molt_session_fn trampoline = [](void* ud, molt_session_t s) noexcept {
    auto* b = static_cast<B*>(ud);
    detail::CallLogged(b->host, "session handler", [&] { return b->fn(s); });
  };
  return Wrap<Subscription>(
      Register(box, [&](void* ud, molt_cleanup_fn release, molt_handle_t* out) {
        return api_->session_on(ctx_, trampoline, ud, release, out);
      }));
}

template <class F>
Status Host::BindEnd(SessionId session, F&& fn, bool last) const {
  if (!MOLT_API_HAS(api_, session_bind_end)) {
    return Status(MOLT_ERR_UNSUPPORTED, "this host cannot tell a session's end (ABI 1.3)");
  }
  auto* box = detail::MakeBox(*this, std::forward<F>(fn));
  using B = std::remove_pointer_t<decltype(box)>;
  molt_session_end_fn on_end = [](void* ud, molt_session_t, std::int32_t reason) noexcept {
    auto* b = static_cast<B*>(ud);
    detail::CallLogged(b->host, "session end binding", [&] { return b->fn(reason); });
  };
  molt_cleanup_fn release = [](void* ud) noexcept { delete static_cast<B*>(ud); };
  const molt_status_t code =
      api_->session_bind_end(ctx_, session, last ? 1 : 0, on_end, box, release);
  if (code != MOLT_OK) {
    delete box;
  }
  return Check(code);
}

template <class F>
Status Host::Bind(SessionId session, F&& fn, bool last) const {
  auto* box = detail::MakeBox(*this, std::forward<F>(fn));
  using B = std::remove_pointer_t<decltype(box)>;
  molt_cleanup_fn run = [](void* ud) noexcept {
    std::unique_ptr<B> b(static_cast<B*>(ud));  // runs once, then the box goes
    detail::CallLogged(b->host, "session binding", [&] { return b->fn(); });
  };
  const molt_status_t code = api_->session_bind(ctx_, session, last ? 1 : 0, run, box);
  if (code != MOLT_OK) {
    delete box;
  }
  return Check(code);
}

template <class F>
Result<Subscription> Host::Subscribe(std::string_view pattern, F&& fn) const {
  auto* box = detail::MakeBox(*this, std::forward<F>(fn));
  using B = std::remove_pointer_t<decltype(box)>;
  molt_bus_fn trampoline = [](void* ud, const char* topic, std::size_t len, const molt_value* args,
                              std::size_t n) noexcept -> molt_status_t {
    auto* b = static_cast<B*>(ud);
    return detail::CallGuarded(b->host,
                               [&] { return b->fn(std::string_view(topic, len), Args(args, n)); });
  };
  return Wrap<Subscription>(Register(box, [&](void* ud, molt_cleanup_fn release,
                                              molt_handle_t* out) {
    return api_->bus_subscribe(ctx_, std::string(pattern).c_str(), trampoline, ud, release, out);
  }));
}

template <class F>
Result<HookHandler> Host::OnHook(std::string_view point, F&& fn, std::int32_t priority) const {
  auto* box = detail::MakeBox(*this, std::forward<F>(fn));
  using B = std::remove_pointer_t<decltype(box)>;
  molt_hook_fn trampoline = [](void* ud, molt_hook_context* c) noexcept -> molt_status_t {
    auto* b = static_cast<B*>(ud);
    return detail::CallGuarded(b->host, [&] { return b->fn(*c); });
  };
  return Wrap<HookHandler>(Register(box, [&](void* ud, molt_cleanup_fn release,
                                             molt_handle_t* out) {
    return api_->hook_on(ctx_, std::string(point).c_str(), priority, trampoline, ud, release, out);
  }));
}

template <class F, class Arm>
Result<Task> Host::ArmTask(F&& fn, Arm&& arm) const {
  auto* box = detail::MakeBox(*this, std::forward<F>(fn));
  using B = std::remove_pointer_t<decltype(box)>;
  molt_task_fn run = [](void* ud) noexcept -> molt_status_t {
    auto* b = static_cast<B*>(ud);
    return detail::CallGuarded(b->host, [b] { return b->fn(); });
  };
  return Wrap<Task>(Register(box, [&](void* ud, molt_cleanup_fn release, molt_handle_t* out) {
    return arm(run, ud, release, out);
  }));
}

namespace detail {

// What a worker runs: the plugin's callable, called from workers only (never the host).
template <class W>
struct JobBox {
  W work;
  static molt_status_t Run(void* ud, const void* input, std::size_t size, molt_bytes_fn sink,
                           void* sink_ud) noexcept {
    auto emit = [&](std::string_view bytes) { sink(sink_ud, bytes.data(), bytes.size()); };
    try {
      auto r = static_cast<const JobBox*>(ud)->work(
          std::string_view(static_cast<const char*>(input), input != nullptr ? size : 0));
      if constexpr (std::is_same_v<std::decay_t<decltype(r)>, Result<std::string>>) {
        if (!r.ok()) {
          emit(r.status().message());
          return r.status().code();
        }
        emit(*r);
      } else {
        static_assert(std::is_convertible_v<decltype(r), std::string_view>,
                      "a job returns std::string or molt::Result<std::string>");
        emit(r);
      }
      return MOLT_OK;
    } catch (const std::exception& e) {
      emit(e.what());
    } catch (...) {
      emit("unknown exception");
    }
    return MOLT_ERR_INTERNAL;
  }
};

}  // namespace detail

template <class F>
Status Host::OnJobDone(std::string_view name, F&& fn) const {
  if (!MOLT_API_HAS(api_, job_handler)) {
    return Status(MOLT_ERR_UNSUPPORTED, "this host runs no worker jobs (ABI 1.6)");
  }
  auto* box = detail::MakeBox(*this, std::forward<F>(fn));
  using B = std::remove_pointer_t<decltype(box)>;
  molt_job_done_fn done = [](void* ud, const molt_job_result* r) noexcept {
    auto* b = static_cast<B*>(ud);
    JobResult result;
    result.job = r->job;
    result.tag = r->tag;
    result.status = r->status == MOLT_OK ? Status() : Status(r->status, r->error);
    for (std::size_t i = 0; i < r->count; ++i) {
      result.results.emplace_back(static_cast<const char*>(r->results[i].data), r->results[i].size);
    }
    result.failed_item = r->failed_item;
    result.inherited = r->inherited != 0;
    detail::CallLogged(b->host, "job done handler", [&] { b->fn(std::as_const(result)); });
  };
  const std::string n(name);
  const molt_status_t code = api_->job_handler(ctx_, n.c_str(), done, box, &detail::DeleteBox<B>);
  if (code != MOLT_OK) {
    delete box;  // refused: the host never took it
  }
  return Check(code);
}

template <class F>
Status Host::DeclareLive(std::string_view name, std::string_view default_json, F&& check) const {
  if (!MOLT_API_HAS(api_, live_declare)) {
    return Status(MOLT_ERR_UNSUPPORTED, "this host keeps no live values (ABI 1.7)");
  }
  const std::string n(name);
  if constexpr (std::is_null_pointer_v<std::decay_t<F>>) {
    return Check(api_->live_declare(ctx_, n.c_str(), default_json.data(), default_json.size(),
                                    nullptr, nullptr, nullptr));
  } else {
    auto* box = detail::MakeBox(*this, std::forward<F>(check));
    using B = std::remove_pointer_t<decltype(box)>;
    molt_live_check_fn fn = [](void* ud, const char*, const char* value,
                               std::size_t size) noexcept {
      auto* b = static_cast<B*>(ud);
      return detail::CallGuarded(b->host, [&] { return b->fn(std::string_view(value, size)); });
    };
    const molt_status_t code = api_->live_declare(
        ctx_, n.c_str(), default_json.data(), default_json.size(), fn, box, &detail::DeleteBox<B>);
    if (code != MOLT_OK) {
      delete box;  // refused: the host never took it
    }
    return Check(code);
  }
}

template <class F>
Status Host::SubscribeMessages(std::string_view topic, F&& fn) const {
  if (!MOLT_API_HAS(api_, message_subscribe)) {
    return Status(MOLT_ERR_UNSUPPORTED, "this host sends no messages between servers (ABI 1.9)");
  }
  auto* box = detail::MakeBox(*this, std::forward<F>(fn));
  using B = std::remove_pointer_t<decltype(box)>;
  molt_message_fn call = [](void* ud, const char* t, const void* data, std::size_t size,
                            const molt_message_meta* meta) noexcept {
    auto* b = static_cast<B*>(ud);
    const Message m{t,
                    std::string_view(static_cast<const char*>(data), size),
                    meta->server,
                    meta->branch,
                    meta->sent_ms,
                    (meta->flags & MOLT_MESSAGE_SELF) != 0,
                    (meta->flags & MOLT_MESSAGE_REPLAYED) != 0};
    detail::CallLogged(b->host, "a message handler", [&] { b->fn(m); });
  };
  const std::string t(topic);
  const molt_status_t code =
      api_->message_subscribe(ctx_, t.c_str(), call, box, &detail::DeleteBox<B>);
  if (code != MOLT_OK) {
    delete box;  // refused: the host never took it
  }
  return Check(code);
}

template <class F>
Status Host::Kv(const molt_kv_op& op, F&& done) const {
  if (!MOLT_API_HAS(api_, kv_call)) {
    return Status(MOLT_ERR_UNSUPPORTED, "this host keeps no key-value store (ABI 1.9)");
  }
  auto* box = detail::MakeBox(*this, std::forward<F>(done));
  using B = std::remove_pointer_t<decltype(box)>;
  molt_kv_done_fn call = [](void* ud, const molt_kv_result* r) noexcept {
    auto* b = static_cast<B*>(ud);
    KvResult out;
    out.status = r->status == MOLT_OK ? Status() : Status(r->status, r->error);
    if (r->value != nullptr) {
      out.value = std::string_view(static_cast<const char*>(r->value), r->value_size);
    }
    out.number = r->number;
    for (std::size_t i = 0; i < r->entry_count; ++i) {
      out.entries.push_back({std::string_view(static_cast<const char*>(r->entries[i].member),
                                              r->entries[i].member_size),
                             r->entries[i].score});
    }
    detail::CallLogged(b->host, "a key-value handler", [&] { b->fn(out); });
  };
  const molt_status_t code = api_->kv_call(ctx_, &op, call, box, &detail::DeleteBox<B>);
  if (code != MOLT_OK) {
    delete box;  // refused: the host never took it
  }
  return Check(code);
}

template <class W, class Call>
Result<molt_job_t> Host::StartJob(std::string_view handler, W&& work, const JobOptions& o,
                                  Call&& call) const {
  if (!MOLT_API_HAS(api_, job_submit)) {
    return Status(MOLT_ERR_UNSUPPORTED, "this host runs no worker jobs (ABI 1.6)");
  }
  using B = detail::JobBox<std::decay_t<W>>;
  auto* box = new B{std::forward<W>(work)};
  const std::string h(handler);
  molt_job_spec spec{};
  spec.struct_size = sizeof(spec);
  spec.flags = o.detached ? MOLT_JOB_DETACHED : 0;
  spec.handler = h.c_str();
  spec.fn = &B::Run;
  spec.user_data = box;
  spec.release = &detail::DeleteBox<B>;
  spec.timeout_seconds = o.timeout_seconds;
  spec.tag = o.tag;
  spec.chunk_size = o.chunk_size;
  molt_job_t job = 0;
  const molt_status_t code = call(spec, &job);
  if (code != MOLT_OK) {
    delete box;  // refused: the host never took it
    return Check(code);
  }
  return job;
}

template <class W>
Result<molt_job_t> Host::Submit(std::string_view handler, W&& work, std::string_view input,
                                const JobOptions& options) const {
  return StartJob(handler, std::forward<W>(work), options,
                  [&](const molt_job_spec& spec, molt_job_t* out) {
                    return api_->job_submit(ctx_, &spec, input.data(), input.size(), out);
                  });
}

template <class W>
Result<molt_job_t> Host::ForkJoin(std::string_view handler, W&& work,
                                  const std::vector<std::string>& items,
                                  const JobOptions& options) const {
  std::vector<molt_bytes_view> views;
  views.reserve(items.size());
  for (const std::string& item : items) {
    views.push_back({item.data(), item.size()});
  }
  return StartJob(handler, std::forward<W>(work), options,
                  [&](const molt_job_spec& spec, molt_job_t* out) {
                    return api_->job_fork_join(ctx_, &spec, views.data(), views.size(), out);
                  });
}

// The three task calls: the ABI 1.0 slot in the main phase (any host), task_start in another.
template <class F>
Result<Task> Host::StartTask(std::int32_t kind, double seconds, F&& fn, std::int32_t priority,
                             std::int32_t phase) const {
  if (phase != MOLT_PHASE_TICK && !MOLT_API_HAS(api_, task_start)) {
    return Status(MOLT_ERR_UNSUPPORTED, "this host has no phase schedulers (ABI 1.5): phase " +
                                            std::to_string(phase) + " needs task_start");
  }
  return ArmTask(std::forward<F>(fn),
                 [&](molt_task_fn f, void* ud, molt_cleanup_fn rel, molt_task_t* out) {
                   if (phase != MOLT_PHASE_TICK) {
                     molt_task_spec spec{};
                     spec.struct_size = sizeof(spec);
                     spec.phase = phase;
                     spec.kind = kind;
                     spec.priority = priority;
                     spec.seconds = seconds;
                     return api_->task_start(ctx_, &spec, f, ud, rel, out);
                   }
                   switch (kind) {
                     case MOLT_TASK_AFTER:
                       return api_->task_after(ctx_, seconds, priority, f, ud, rel, out);
                     case MOLT_TASK_EVERY:
                       return api_->task_every(ctx_, seconds, priority, f, ud, rel, out);
                     default:
                       return api_->task_schedule(ctx_, priority, f, ud, rel, out);
                   }
                 });
}

template <class F>
Result<Task> Host::Schedule(F&& fn, std::int32_t priority, std::int32_t phase) const {
  return StartTask(MOLT_TASK_NEXT_STEP, 0, std::forward<F>(fn), priority, phase);
}

template <class F>
Result<Task> Host::After(double seconds, F&& fn, std::int32_t priority, std::int32_t phase) const {
  return StartTask(MOLT_TASK_AFTER, seconds, std::forward<F>(fn), priority, phase);
}

template <class F>
Result<Task> Host::Every(double seconds, F&& fn, std::int32_t priority, std::int32_t phase) const {
  return StartTask(MOLT_TASK_EVERY, seconds, std::forward<F>(fn), priority, phase);
}

template <class F>
Status Host::Defer(molt_scope_t scope, F&& fn) const {
  auto* box = detail::MakeBox(*this, std::forward<F>(fn));
  using B = std::remove_pointer_t<decltype(box)>;
  molt_cleanup_fn run = [](void* ud) noexcept {
    // The host calls this exactly once, even for a scope closed before the call.
    std::unique_ptr<B> b(static_cast<B*>(ud));
    detail::CallLogged(b->host, "deferred function", [&] { return b->fn(); });
  };
  return Check(api_->scope_defer(ctx_, scope, run, box));
}

template <class F>
Result<Process> Host::Spawn(F&& body, const ProcessOptions& options) const {
  auto* box = detail::MakeBox(*this, std::forward<F>(body));
  using B = std::remove_pointer_t<decltype(box)>;
  using Fn = decltype(box->fn);
  molt_process_fn trampoline = [](void* ud, void*) noexcept -> molt_status_t {
    auto* b = static_cast<B*>(ud);
    return detail::CallGuarded(b->host, [b]() -> molt_status_t {
      try {
        if constexpr (std::is_void_v<std::invoke_result_t<Fn&>>) {
          b->fn();
          return MOLT_OK;
        } else if constexpr (std::is_convertible_v<std::invoke_result_t<Fn&>, std::string>) {
          const std::string result = b->fn();
          return b->host.api()->process_set_result(b->host.context(), result.c_str());
        } else {
          return detail::ResultCode(b->host, b->fn());
        }
      } catch (const ProcessKilled&) {
        return MOLT_OK;  // unwound after a kill: the host keeps the Killed state
      }
    });
  };
  molt_process_options o{sizeof(molt_process_options), options.priority,
                         options.name.empty() ? nullptr : options.name.c_str(), options.stack_size};
  return Wrap<Process>(Register(box, [&](void* ud, molt_cleanup_fn release, molt_handle_t* out) {
    return api_->process_spawn(ctx_, &o, trampoline, ud, release, out);
  }));
}

template <class F>
Status Process::OnExit(F&& fn) const {
  auto* box = detail::MakeBox(Host(ctx_, api_), std::forward<F>(fn));
  using B = std::remove_pointer_t<decltype(box)>;
  molt_process_exit_fn call = [](void* ud, molt_process_t, std::int32_t state, const char* result,
                                 std::size_t n) noexcept {
    auto* b = static_cast<B*>(ud);
    detail::CallLogged(b->host, "process exit function",
                       [&] { return b->fn(state, std::string_view(result, n)); });
  };
  const molt_status_t code = api_->process_on_exit(ctx_, handle_, call, box, &detail::DeleteBox<B>);
  if (code != MOLT_OK) {
    delete box;
  }
  return Checked(code);
}

// --- Services ------------------------------------------------------------------------------------

namespace detail {
template <class T>
struct PluginGlue;
}  // namespace detail

// What a plugin's Service::SelfTest runs its own tests through (ABI 1.8; the spec gate,
// docs/testing-plugins.md): each test is reported with its name and, when it failed, why.
//
//   void SelfTest(molt::SelfTests& tests) override {
//     tests.Run("the multiplier takes 1 to 100", [] {
//       return CheckMultiplier("100").ok() && !CheckMultiplier("0").ok();
//     });
//     tests.Run("state round-trips", [this]() -> molt::Status { ... });
//   }
class SelfTests {
 public:
  SelfTests(molt_self_test_fn report, void* user_data) : report_(report), user_data_(user_data) {}

  // Runs `fn` as the test `name`. It passes when `fn` returns without throwing: void, true, an
  // OK Status or MOLT_OK; false, an error Status or code, or an exception fails it, with the
  // Status's message or the exception's text as the reason.
  template <class F>
  void Run(std::string_view name, F&& fn) {
    molt_status_t code = MOLT_OK;
    std::string why;
    try {
      using R = std::invoke_result_t<F&>;
      if constexpr (std::is_void_v<R>) {
        fn();
      } else if constexpr (std::is_same_v<R, bool>) {
        if (!fn()) {
          code = MOLT_ERR_REJECTED;
          why = "false";
        }
      } else if constexpr (std::is_same_v<std::decay_t<R>, Status>) {
        const Status s = fn();
        code = s.code();
        why = s.message();
      } else {
        static_assert(std::is_same_v<R, molt_status_t>,
                      "a self-test returns void, bool, molt::Status or a code");
        code = fn();
        why = code == MOLT_OK ? "" : "returned " + std::to_string(code);
      }
    } catch (const std::exception& e) {
      code = MOLT_ERR_INTERNAL;
      why = std::string("threw: ") + e.what();
    } catch (...) {
      code = MOLT_ERR_INTERNAL;
      why = "threw";
    }
    failed_ += code != MOLT_OK;
    report_(user_data_, std::string(name).c_str(), code, why.c_str());
  }
  // A test that is a condition: it passes when `ok` holds, else fails with `why`.
  void Check(std::string_view name, bool ok, std::string_view why = "false") {
    Run(name,
        [&]() -> Status { return ok ? Status() : Status(MOLT_ERR_REJECTED, std::string(why)); });
  }
  // The tests that failed so far.
  std::size_t failed() const { return failed_; }

 private:
  molt_self_test_fn report_;
  void* user_data_;
  std::size_t failed_ = 0;
};

// Base class of a C++ plugin. Override what you need; every hook returns molt::Status (an
// exception is caught and reported as MOLT_ERR_INTERNAL with its text).
class Service {
 public:
  virtual ~Service() = default;

  // Build state, register subscriptions and hooks. Do not call other services yet.
  virtual Status Init() { return Status(); }
  // Start work: every dependency has started.
  virtual Status Start() { return Status(); }
  // Stop work; also called when Start never ran (a failed boot rolls back).
  virtual Status Stop() { return Status(); }
  // State handoff across generations (docs/generations.md): a swap calls ExportState before this
  // instance stops and hands the bytes to the next instance's ImportState, after its Init and
  // before its Start. The defaults mean "no state". An ImportState error fails the swap (the
  // previous build is restored); kOldestStateVersion..kStateVersion are the formats it reads.
  virtual Status ExportState(std::string* /*out*/) {
    return Status(MOLT_ERR_UNSUPPORTED, "this plugin exports no state");
  }
  virtual Status ImportState(std::uint32_t /*version*/, std::string_view /*data*/) {
    return Status(MOLT_ERR_UNSUPPORTED, "this plugin imports no state");
  }
  // The plugin's own tests (ABI 1.8; the spec gate): moltd --self-test and --check, molt build
  // and the test kit run them after every plugin started, on the kernel thread. Each
  // tests.Run("name", fn) is one test. None by default.
  virtual void SelfTest(SelfTests& /*tests*/) {}

  const Host& host() const { return host_; }

 private:
  template <class T>
  friend struct detail::PluginGlue;
  Host host_;
};

namespace detail {

template <class T, class = void>
struct DependenciesOf {
  static const char* const* data() { return nullptr; }
  static constexpr std::uint32_t size() { return 0; }
};
template <class T>
struct DependenciesOf<T, std::void_t<decltype(T::kDependencies)>> {
  static const char* const* data() { return T::kDependencies; }
  static constexpr std::uint32_t size() {
    return static_cast<std::uint32_t>(std::size(T::kDependencies));
  }
};
template <class T, class = void>
struct KindOf {
  static constexpr std::int32_t get() { return MOLT_PLUGIN_KIND_SERVICE; }
};
template <class T>
struct KindOf<T, std::void_t<decltype(T::kKind)>> {
  static constexpr std::int32_t get() { return T::kKind; }
};
template <class T, class = void>
struct InterfacesOf {
  static const molt_interface_export* data() { return nullptr; }
  static constexpr std::uint32_t size() { return 0; }
};
template <class T>
struct InterfacesOf<T, std::void_t<decltype(T::kInterfaces)>> {
  static const molt_interface_export* data() { return T::kInterfaces; }
  static constexpr std::uint32_t size() {
    return static_cast<std::uint32_t>(std::size(T::kInterfaces));
  }
};
template <class T, class = void>
struct DescriptionOf {
  static const char* get() { return nullptr; }
};
template <class T>
struct DescriptionOf<T, std::void_t<decltype(T::kDescription)>> {
  static const char* get() { return T::kDescription; }
};
template <class T, class = void>
struct StateVersionOf {
  static constexpr std::uint32_t get() { return 0; }
};
template <class T>
struct StateVersionOf<T, std::void_t<decltype(T::kStateVersion)>> {
  static constexpr std::uint32_t get() { return T::kStateVersion; }
};
template <class T, class = void>
struct OldestStateVersionOf {
  static constexpr std::uint32_t get() { return 0; }
};
template <class T>
struct OldestStateVersionOf<T, std::void_t<decltype(T::kOldestStateVersion)>> {
  static constexpr std::uint32_t get() { return T::kOldestStateVersion; }
};

// The trampolines MOLT_PLUGIN installs: every exception stops here.
template <class T>
struct PluginGlue {
  static_assert(std::is_base_of_v<Service, T>, "MOLT_PLUGIN(Type): Type derives molt::Service");

  static molt_status_t Init(molt_context_t* ctx, const molt_host_api* api,
                            void** out_state) noexcept {
    Host host(ctx, api);
    T* self = nullptr;
    const molt_status_t code = CallGuarded(host, [&]() -> Status {
      self = new T();
      self->host_ = host;
      return self->Init();
    });
    if (code != MOLT_OK) {
      delete self;  // a failed init cleans up after itself (molt.h)
      return code;
    }
    *out_state = self;
    return MOLT_OK;
  }
  static molt_status_t Start(void* state) noexcept {
    T* self = static_cast<T*>(state);
    return CallGuarded(self->host_, [self] { return self->Start(); });
  }
  static molt_status_t Stop(void* state) noexcept {
    T* self = static_cast<T*>(state);
    return CallGuarded(self->host_, [self] { return self->Stop(); });
  }
  static void Destroy(void* state) noexcept {
    T* self = static_cast<T*>(state);
    const Host host = self->host_;
    CallLogged(host, "destroy", [self] { delete self; });
  }
  static molt_status_t Export(void* state, molt_bytes_fn sink, void* ud) noexcept {
    T* self = static_cast<T*>(state);
    return CallGuarded(self->host_, [&]() -> Status {
      std::string out;
      Status s = self->ExportState(&out);
      if (s.ok()) {
        sink(ud, out.data(), out.size());
      }
      return s;
    });
  }
  static molt_status_t Import(void* state, std::uint32_t version, const void* data,
                              std::size_t size) noexcept {
    T* self = static_cast<T*>(state);
    return CallGuarded(self->host_, [&] {
      return self->ImportState(version, std::string_view(static_cast<const char*>(data), size));
    });
  }

  static molt_status_t RunSelfTests(void* state, molt_self_test_fn report, void* ud) noexcept {
    T* self = static_cast<T*>(state);
    return CallGuarded(self->host_, [&] {
      SelfTests tests(report, ud);
      self->SelfTest(tests);
    });
  }

  static const molt_plugin_info* Info() {
    static const molt_plugin_info info = {
        sizeof(molt_plugin_info),
        MOLT_ABI_VERSION_CURRENT,
        T::kName,
        T::kVersion,
        KindOf<T>::get(),
        DependenciesOf<T>::size(),
        DependenciesOf<T>::data(),
        &Init,
        &Start,
        &Stop,
        &Destroy,
        StateVersionOf<T>::get(),
        InterfacesOf<T>::size(),
        &Export,
        &Import,
        InterfacesOf<T>::data(),
        DescriptionOf<T>::get(),
        OldestStateVersionOf<T>::get(),
        &RunSelfTests,
    };
    return &info;
  }
};

}  // namespace detail
}  // namespace molt

namespace molt {
// `Type`'s descriptor, for a plugin linked into the host instead of loaded from a file:
// molt_client_add_controller(client, &molt::EntryOf<MyController>).
template <class Type>
const molt_plugin_info* EntryOf() {
  return detail::PluginGlue<Type>::Info();
}
}  // namespace molt

// Defines the plugin's entry symbol for `Type`, a molt::Service with static members kName and
// kVersion (and optionally kKind = MOLT_PLUGIN_KIND_CONTROLLER for a client-side controller,
// kDependencies, kDescription, kStateVersion, kInterfaces).
#define MOLT_PLUGIN(Type)                                                         \
  extern "C" MOLT_PLUGIN_EXPORT const molt_plugin_info* molt_plugin_entry(void) { \
    return ::molt::detail::PluginGlue<Type>::Info();                              \
  }

#endif  // MOLT_MOLT_HPP_
