// SPDX-License-Identifier: Apache-2.0
// The host API slots. Conventions: every slot is noexcept, checks its context and pointers,
// refuses calls from an instance that is not live, and reports failures through Fail().
#include "kernel/src/abi/host_api.h"

#include <molt/scope_exit.h>

#include <cmath>
#include <exception>
#include <optional>
#include <string>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/abi/process_api.h"
#include "kernel/src/abi/struct_size.h"

namespace molt::kernel::abi {
namespace {

Args ToArgs(const molt_value* args, std::size_t n) {
  // Value adds nothing to molt_value (value.h): an array of one is an array of the other.
  return Args(static_cast<const Value*>(static_cast<const void*>(args)), n);
}

// --- errors and logging ---

const char* LastError(molt_context_t* ctx) noexcept {
  if (OnWorkerThread()) {
    return kWorkerThreadRefusal;  // the instance's text is the kernel thread's
  }
  return ctx == nullptr ? "" : PluginInstance::From(ctx).last_error();
}

void SetError(molt_context_t* ctx, const char* message) noexcept {
  if (ctx != nullptr && !OnWorkerThread()) {
    std::optional<CallbackRunner::HostCall> call;  // the baton, off the kernel thread
    if (PluginInstance::From(ctx).off_thread()) {
      call.emplace();
      if (call->refused()) {
        return;  // an abandoned callback: its text reaches no one
      }
    }
    try {
      PluginInstance::From(ctx).SetError(message == nullptr ? "" : message);
    } catch (...) {
    }
  }
}

bool ToLogLevel(std::int32_t level, LogLevel* out) {
  if (level < MOLT_LOG_DEBUG || level > MOLT_LOG_ERROR) {
    return false;
  }
  *out = static_cast<LogLevel>(level);
  return true;
}

void Log(molt_context_t* ctx, std::int32_t level, const char* message) noexcept {
  LogLevel l;
  if (ctx == nullptr || message == nullptr || !ToLogLevel(level, &l)) {
    return;
  }
  try {
    PluginInstance& p = PluginInstance::From(ctx);
    if (Logger::Get().Enabled(l)) {
      Logger::Get().Emit(p.label(), l, message);
    }
  } catch (...) {
  }
}

std::int32_t LogEnabled(molt_context_t*, std::int32_t level) noexcept {
  LogLevel l;
  return ToLogLevel(level, &l) && Logger::Get().Enabled(l) ? 1 : 0;
}

// --- Bus ---

molt_status_t BusResolve(molt_context_t* ctx, const char* topic, molt_topic_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(topic, "topic"));
    MOLT_RETURN_IF_ERROR(Required(out, "out_topic"));
    MOLT_RETURN_IF_ERROR(Bus::CheckTopic(topic));
    *out = p.shared().TopicHandle(p.kernel().bus().Resolve(topic));
    return Status::Ok();
  });
}

molt_status_t BusPublish(molt_context_t* ctx, const char* topic, const molt_value* args,
                         std::size_t n) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(topic, "topic"));
    MOLT_RETURN_IF_ERROR(RequiredIfAny(args, n, "args", "arg_count"));
    MOLT_RETURN_IF_ERROR(Bus::CheckTopic(topic));
    p.kernel().bus().Publish(std::string_view(topic), ToArgs(args, n));
    return Status::Ok();
  });
}

// publish_topic off its hot path, through Guard: why it was refused, or the publish made while
// a callback runs off the kernel thread. Out of line so the hot path below stays small.
[[gnu::noinline, gnu::cold]] molt_status_t PublishTopicGuarded(molt_context_t* ctx,
                                                               molt_topic_t topic,
                                                               const molt_value* args,
                                                               std::size_t n) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Bus::Topic* t = p.shared().TopicAt(topic);
    if (t == nullptr) {
      return Status::Stale("topic " + std::to_string(topic) + " was never resolved");
    }
    MOLT_RETURN_IF_ERROR(RequiredIfAny(args, n, "args", "arg_count"));
    p.bus().Publish(t, ToArgs(args, n));
    return Status::Ok();
  });
}

[[gnu::noinline, gnu::cold]] molt_status_t PublishFailed(molt_context_t* ctx) noexcept {
  return PluginInstance::From(ctx).Fail(Status::Internal("publish failed: out of memory"));
}

// The hot path: a few loads and compares, then the Bus. Everything else is out of line.
molt_status_t BusPublishTopic(molt_context_t* ctx, molt_topic_t topic, const molt_value* args,
                              std::size_t n) noexcept {
  if (ctx == nullptr) [[unlikely]] {
    return MOLT_ERR_INVALID_ARGUMENT;
  }
  PluginInstance& p = PluginInstance::From(ctx);
  // The gate first (not live, or off the kernel thread): an abandoned callback's host may be gone.
  if (!OnFastPath(p)) [[unlikely]] {
    return PublishTopicGuarded(ctx, topic, args, n);
  }
  Bus::Topic* t = p.shared().TopicAt(topic);
  if (t == nullptr || (n > 0 && args == nullptr)) [[unlikely]] {
    return PublishTopicGuarded(ctx, topic, args, n);
  }
  try {
    p.bus().Publish(t, ToArgs(args, n));  // handler exceptions never escape Publish
  } catch (...) {
    return PublishFailed(ctx);
  }
  return MOLT_OK;
}

molt_status_t BusSubscribe(molt_context_t* ctx, const char* pattern, molt_bus_fn fn,
                           void* user_data, molt_cleanup_fn release,
                           molt_subscription_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required({{pattern, "pattern"},
                             {reinterpret_cast<const void*>(fn), "fn"},
                             {out, "out_subscription"}});
        !s.ok()) {
      return s;
    }
    MOLT_RETURN_IF_ERROR(Bus::CheckPattern(pattern));
    PluginInstance* inst = &p;
    PluginInstance::Resource r{Kind::kSubscription, {}, 0, false, nullptr, release, user_data};
    r.connection = p.kernel().bus().Subscribe(
        pattern, [inst, fn, user_data](std::string_view topic, Args args) {
          if (inst->dormant()) {
            return;  // a mounted generation hears nothing until it serves
          }
          const molt_status_t st = CallPlugin(*inst, [&] {
            return fn(user_data, topic.data(), topic.size(),
                      static_cast<const molt_value*>(static_cast<const void*>(args.data())),
                      args.size());
          });
          if (st != MOLT_OK) {
            inst->ReportCallbackError("bus subscriber of \"" + std::string(topic) + "\"", st);
          }
        });
    *out = p.Own(std::move(r));
    return Status::Ok();
  });
}

molt_status_t BusUnsubscribe(molt_context_t* ctx, molt_subscription_t sub) noexcept {
  return Guard(ctx, [&](PluginInstance& p) {
    return ReleaseOwned(p, sub, Kind::kSubscription, "subscription");
  });
}

// --- Hooks ---

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

// --- Scheduler ---

// Arms a task of `p` on `scheduler` (the kernel's, or one of its phases): `arm(priority, task)`
// schedules it there and returns its handle.
template <class Arm>
Status AddTask(PluginInstance& p, Scheduler& scheduler, std::int32_t priority, molt_task_fn fn,
               void* user_data, molt_cleanup_fn release, molt_task_t* out, bool one_shot,
               Arm&& arm) {
  if (Status s = Required({{reinterpret_cast<const void*>(fn), "fn"}, {out, "out_task"}});
      !s.ok()) {
    return s;
  }
  MOLT_ASSIGN_OR_RETURN(Priority prio, PriorityArg(priority));
  PluginInstance* inst = &p;
  PluginInstance::Resource r{Kind::kTask, {}, 0, one_shot, nullptr, release, user_data};
  r.scheduler = &scheduler;
  const molt_handle_t h = p.Own(std::move(r));
  try {
    auto run = [inst, fn, user_data, h] {
      if (inst->Find(h) == nullptr) {
        return;  // cancelled while it waited for its generation to serve
      }
      const molt_status_t st = CallPlugin(*inst, [&] { return fn(user_data); });
      if (st != MOLT_OK) {
        inst->ReportCallbackError("task", st);
      }
      if (PluginInstance::Resource* res = inst->Find(h); res != nullptr && res->one_shot) {
        (void)inst->Release(h);  // ran once: the task is over
      }
    };
    TaskHandle task = arm(prio, [inst, run, one_shot] {
      if (!inst->dormant()) {
        run();
      } else if (one_shot) {
        inst->WhenServing(run);  // due while dormant: runs once the generation serves
      }
    });
    p.Find(h)->task = task.id();
  } catch (...) {
    (void)p.Release(h);
    throw;
  }
  *out = h;
  return Status::Ok();
}

// The three ways a task runs (MOLT_TASK_*), on `scheduler`.
Status StartTask(PluginInstance& p, Scheduler& scheduler, std::int32_t kind, double seconds,
                 std::int32_t priority, molt_task_fn fn, void* user_data, molt_cleanup_fn release,
                 molt_task_t* out) {
  switch (kind) {
    case MOLT_TASK_NEXT_STEP:
      return AddTask(p, scheduler, priority, fn, user_data, release, out, true,
                     [&](Priority pr, auto&& task) {
                       return scheduler.Schedule(std::move(task), pr, p.origin());
                     });
    case MOLT_TASK_AFTER: {
      MOLT_ASSIGN_OR_RETURN(Duration delay, SecondsArg(seconds, "seconds"));
      return AddTask(p, scheduler, priority, fn, user_data, release, out, true,
                     [&](Priority pr, auto&& task) {
                       return scheduler.After(delay, std::move(task), pr, p.origin());
                     });
    }
    case MOLT_TASK_EVERY: {
      MOLT_ASSIGN_OR_RETURN(Duration interval, SecondsArg(seconds, "seconds"));
      return AddTask(p, scheduler, priority, fn, user_data, release, out, false,
                     [&](Priority pr, auto&& task) {
                       return scheduler.Every(interval, std::move(task), pr, p.origin());
                     });
    }
    default:
      return Status::InvalidArgument("task kind " + std::to_string(kind) +
                                     " is not MOLT_TASK_NEXT_STEP (0), MOLT_TASK_AFTER (1) or "
                                     "MOLT_TASK_EVERY (2)");
  }
}

molt_status_t TaskSchedule(molt_context_t* ctx, std::int32_t priority, molt_task_fn fn,
                           void* user_data, molt_cleanup_fn release, molt_task_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) {
    return StartTask(p, p.kernel().scheduler(), MOLT_TASK_NEXT_STEP, 0, priority, fn, user_data,
                     release, out);
  });
}

molt_status_t TaskAfter(molt_context_t* ctx, double seconds, std::int32_t priority, molt_task_fn fn,
                        void* user_data, molt_cleanup_fn release, molt_task_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) {
    return StartTask(p, p.kernel().scheduler(), MOLT_TASK_AFTER, seconds, priority, fn, user_data,
                     release, out);
  });
}

molt_status_t TaskEvery(molt_context_t* ctx, double seconds, std::int32_t priority, molt_task_fn fn,
                        void* user_data, molt_cleanup_fn release, molt_task_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) {
    return StartTask(p, p.kernel().scheduler(), MOLT_TASK_EVERY, seconds, priority, fn, user_data,
                     release, out);
  });
}

molt_status_t TaskStart(molt_context_t* ctx, const molt_task_spec* spec, molt_task_fn fn,
                        void* user_data, molt_cleanup_fn release, molt_task_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(spec, "spec"));
    MOLT_ASSIGN_OR_RETURN(molt_task_spec s, ReadSized(*spec));
    if (s.phase < MOLT_PHASE_TICK || s.phase > MOLT_PHASE_POST_TICK) {
      return Status::InvalidArgument("phase " + std::to_string(s.phase) +
                                     " is not MOLT_PHASE_TICK (0), MOLT_PHASE_PRE_TICK (1) or "
                                     "MOLT_PHASE_POST_TICK (2)");
    }
    Scheduler& scheduler = p.kernel().scheduler().ForPhase(static_cast<Phase>(s.phase));
    return StartTask(p, scheduler, s.kind, s.seconds,
                     s.priority == 0 ? MOLT_PRIORITY_NORMAL : s.priority, fn, user_data, release,
                     out);
  });
}

molt_status_t TaskCancel(molt_context_t* ctx, molt_task_t task) noexcept {
  return Guard(ctx, [&](PluginInstance& p) { return ReleaseOwned(p, task, Kind::kTask, "task"); });
}

// --- Scopes ---

Result<Scope*> ScopeOf(PluginInstance& p, molt_scope_t scope) {
  if (scope == 0) {
    return &p.root_scope();
  }
  PluginInstance::Resource* r = p.Find(scope);
  if (r == nullptr || r->kind != Kind::kScope) {
    return Status::Stale("scope " + std::to_string(scope) +
                         " is not live (closed, or not plugin \"" + p.label() + "\"'s)");
  }
  return r->scope.get();
}

molt_status_t ScopeCreate(molt_context_t* ctx, molt_scope_t parent, molt_scope_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(out, "out_scope"));
    MOLT_ASSIGN_OR_RETURN(Scope * parent_scope, ScopeOf(p, parent));
    std::shared_ptr<Scope> child = parent_scope->Child();
    PluginInstance::Resource r{Kind::kScope, {}, 0, false, child, nullptr, nullptr};
    const molt_scope_t handle = p.Own(std::move(r));
    // However the scope closes (its own handle, or its parent), its handle goes stale then.
    PluginInstance* inst = &p;
    child->Add([inst, handle] { inst->Forget(handle); });
    *out = handle;
    return Status::Ok();
  });
}

molt_status_t ScopeDefer(molt_context_t* ctx, molt_scope_t scope, molt_cleanup_fn fn,
                         void* user_data) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(fn), "fn"));
    MOLT_ASSIGN_OR_RETURN(Scope * target, ScopeOf(p, scope));
    const bool closed = target->closed();
    target->Add([fn, user_data] { fn(user_data); });
    if (closed) {
      return Status::ScopeClosed("scope " + std::to_string(scope) +
                                 " is closed: the cleanup ran at once");
    }
    return Status::Ok();
  });
}

molt_status_t ScopeAdopt(molt_context_t* ctx, molt_scope_t scope, molt_handle_t handle) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (p.Find(handle) == nullptr) {
      return Status::Stale(std::string(PluginInstance::KindName(handle)) + " " +
                           std::to_string(handle) +
                           " is not live (already released, or not "
                           "plugin \"" +
                           p.label() + "\"'s)");
    }
    if (handle == scope) {
      return Status::InvalidArgument("a scope cannot adopt itself");
    }
    MOLT_ASSIGN_OR_RETURN(Scope * target, ScopeOf(p, scope));
    PluginInstance* inst = &p;
    // Released by the scope, unless released earlier (then this finds it gone and does nothing).
    target->Add([inst, handle] { (void)inst->Release(handle); });
    return Status::Ok();
  });
}

molt_status_t ScopeClose(molt_context_t* ctx, molt_scope_t scope) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (scope == 0) {
      return Status::InvalidArgument("the root scope (0) closes when the plugin stops");
    }
    return ReleaseOwned(p, scope, Kind::kScope, "scope");
  });
}

// --- Services, config, stats ---

molt_status_t ServiceInterface(molt_context_t* ctx, const char* service, const char* iface,
                               molt_interface_ref* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required({{service, "service"}, {iface, "interface_name"}, {out, "out_ref"}});
        !s.ok()) {
      return s;
    }
    const auto& deps = p.dependencies();
    if (std::find(deps.begin(), deps.end(), service) == deps.end()) {
      return Status::FailedPrecondition("plugin \"" + p.name() +
                                        "\" may only use interfaces of its dependencies: add \"" +
                                        service + "\" to its dependencies");
    }
    // Its own generation's instance of `service`, never another generation's.
    const ServiceManager& peers = p.peers() != nullptr ? *p.peers() : p.kernel().services();
    Service* target = peers.Get(service);
    if (target == nullptr) {
      return Status::NotFound("service \"" + std::string(service) + "\" is not registered" +
                              (p.generation().empty() ? "" : " in generation " + p.generation()));
    }
    auto* exporter = dynamic_cast<PluginInstance*>(target);
    if (exporter == nullptr) {
      return Status::NotFound("service \"" + std::string(service) + "\" exports no interfaces");
    }
    const molt_plugin_info& info = exporter->info();
    std::string available;
    for (std::uint32_t i = 0; i < info.interface_count; ++i) {
      const molt_interface_export& e = info.interfaces[i];
      if (e.name != nullptr && std::string_view(e.name) == iface) {
        *out = molt_interface_ref{e.vtable, exporter->state(), e.vtable_size, 0};
        p.UseInterface(*exporter, iface);
        return Status::Ok();
      }
      available += std::string(available.empty() ? "" : ", ") + (e.name ? e.name : "?");
    }
    return Status::NotFound(
        "service \"" + std::string(service) + "\" has no interface \"" + iface +
        "\" (it exports: " + (available.empty() ? std::string("none") : available) + ")");
  });
}

molt_status_t ConfigGet(molt_context_t* ctx, const char* key, molt_value* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(key, "key"));
    MOLT_RETURN_IF_ERROR(Required(out, "out_value"));
    const Config& config = p.kernel().config();
    const std::string own = "plugins." + p.name() + "." + key;
    for (const std::string& k : {own, std::string(key)}) {
      if (config.Get(k) != nullptr) {
        *out = config.GetValue(k);
        return Status::Ok();
      }
    }
    return Status::NotFound("config key \"" + std::string(key) + "\" is not set (looked for \"" +
                            own + "\" and \"" + key + "\")");
  });
}

molt_status_t StatsJson(molt_context_t* ctx, molt_bytes_fn sink, void* user_data) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(sink), "sink"));
    ToSink(p, sink, user_data, p.kernel().StatsJson());
    return Status::Ok();
  });
}

// --- Generations (ABI 1.3) ---

molt_status_t ReloadRequest(molt_context_t* ctx, const char* reason) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (!p.shared().can_reload()) {
      return Status::Unsupported("this host cannot reload its plugins");
    }
    return p.shared().RequestReload("plugin " + p.label() +
                                    (reason != nullptr ? ": " + std::string(reason) : ""));
  });
}

// --- Slots of another host's layer ---

// The networking and client slots are always in the table: a host without the layer answers
// MOLT_ERR_UNSUPPORTED (molt.h), and the layer replaces them (net_api.cc, the client library).
constexpr char kNoNetwork[] = "this host has no network (channels and sessions are server-side)";
constexpr char kNoProfiles[] =
    "this host keeps no profiles (moltd does: profile stores are server-side)";
constexpr char kNoAnalytics[] = "this host keeps no analytics (moltd does)";
constexpr char kNoWorkers[] = "this host runs no worker jobs (moltd does)";
constexpr char kNoLive[] = "this host keeps no live values (moltd does)";
constexpr char kNoMessages[] = "this host sends no messages between servers (moltd does)";
constexpr char kNoKv[] = "this host keeps no key-value store (moltd does)";
constexpr char kNotClient[] =
    "this host is not a client (intents, requests and replica reads are for controllers)";

template <const char* kText, class Slot>
struct Refuse;
template <const char* kText, class... A>
struct Refuse<kText, molt_status_t (*)(molt_context_t*, A...)> {
  static molt_status_t Call(molt_context_t* ctx, A...) noexcept {
    return Guard(ctx, [](PluginInstance&) { return Status::Unsupported(kText); });
  }
};

template <const char* kText, class Slot>
void SetRefusal(Slot& slot) {
  slot = &Refuse<kText, Slot>::Call;
}

molt_host_api MakeTable() {
  molt_host_api api{};
  api.struct_size = sizeof(molt_host_api);
  api.abi_version = MOLT_ABI_VERSION_CURRENT;
  api.last_error = LastError;
  api.set_error = SetError;
  api.log = Log;
  api.log_enabled = LogEnabled;
  api.bus_resolve = BusResolve;
  api.bus_publish = BusPublish;
  api.bus_publish_topic = BusPublishTopic;
  api.bus_subscribe = BusSubscribe;
  api.bus_unsubscribe = BusUnsubscribe;
  api.hook_define = HookDefine;
  api.hook_on = HookOn;
  api.hook_off = HookOff;
  api.hook_fire = HookFire;
  api.task_schedule = TaskSchedule;
  api.task_after = TaskAfter;
  api.task_every = TaskEvery;
  api.task_start = TaskStart;
  api.task_cancel = TaskCancel;
  api.scope_create = ScopeCreate;
  api.scope_defer = ScopeDefer;
  api.scope_adopt = ScopeAdopt;
  api.scope_close = ScopeClose;
  api.service_interface = ServiceInterface;
  api.config_get = ConfigGet;
  api.stats_json = StatsJson;
  InstallProcessSlots(api);
  api.reload_request = ReloadRequest;
  SetRefusal<kNoAnalytics>(api.analytics_track);
  SetRefusal<kNoWorkers>(api.job_handler);
  SetRefusal<kNoWorkers>(api.job_submit);
  SetRefusal<kNoWorkers>(api.job_fork_join);
  SetRefusal<kNoWorkers>(api.job_cancel);
  SetRefusal<kNoLive>(api.live_declare);
  SetRefusal<kNoLive>(api.live_get);
  SetRefusal<kNoMessages>(api.message_publish);
  SetRefusal<kNoMessages>(api.message_subscribe);
  SetRefusal<kNoKv>(api.kv_call);
  SetRefusal<kNoNetwork>(api.channel_declare);
  SetRefusal<kNoNetwork>(api.channel_remove);
  SetRefusal<kNoNetwork>(api.event_send);
  SetRefusal<kNoNetwork>(api.request_reply);
  SetRefusal<kNoNetwork>(api.session_on);
  SetRefusal<kNoNetwork>(api.session_bind);
  SetRefusal<kNoNetwork>(api.session_bind_end);
  SetRefusal<kNoNetwork>(api.replica_claim);
  SetRefusal<kNoNetwork>(api.session_info);
  SetRefusal<kNoNetwork>(api.session_data_set);
  SetRefusal<kNoNetwork>(api.session_data_get);
  SetRefusal<kNoNetwork>(api.session_kick);
  SetRefusal<kNoNetwork>(api.replica_create);
  SetRefusal<kNoNetwork>(api.replica_destroy);
  SetRefusal<kNoNetwork>(api.replica_set_int);
  SetRefusal<kNoNetwork>(api.replica_set_float);
  SetRefusal<kNoNetwork>(api.replica_set_bytes);
  SetRefusal<kNoNetwork>(api.replica_add_session);
  SetRefusal<kNoNetwork>(api.replica_remove_session);
  SetRefusal<kNotClient>(api.client_intent);
  SetRefusal<kNotClient>(api.client_request);
  SetRefusal<kNotClient>(api.client_replica_get);
  SetRefusal<kNoProfiles>(api.profile_declare);
  SetRefusal<kNoProfiles>(api.profile_state);
  SetRefusal<kNoProfiles>(api.profile_get);
  SetRefusal<kNoProfiles>(api.profile_set);
  SetRefusal<kNoProfiles>(api.profile_save);
  SetRefusal<kNoProfiles>(api.profile_snapshot);
  SetRefusal<kNoProfiles>(api.profile_snapshots);
  SetRefusal<kNoProfiles>(api.profile_rollback);
  SetRefusal<kNoProfiles>(api.profile_backup_now);
  SetRefusal<kNoProfiles>(api.profile_transact);
  SetRefusal<kNoProfiles>(api.profile_key_load);
  SetRefusal<kNoProfiles>(api.profile_key_session);
  SetRefusal<kNoProfiles>(api.profile_key_release);
  return api;
}

}  // namespace

molt_host_api CoreHostApi() { return MakeTable(); }

}  // namespace molt::kernel::abi
