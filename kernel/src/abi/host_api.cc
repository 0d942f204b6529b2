// SPDX-License-Identifier: Apache-2.0
// The host API slots. Conventions: every slot is noexcept, checks its context and pointers,
// refuses calls from an instance that is not live, and reports failures through Fail().
#include "kernel/src/abi/host_api.h"

#include <molt/scope_exit.h>

#include <cmath>
#include <exception>
#include <string>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/net/network.h"

namespace molt::kernel::abi {
namespace {

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
          Status::FailedPrecondition("plugin \"" + p.name() +
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
Status ReleaseOwned(PluginInstance& p, molt_handle_t handle, Kind kind, const char* kind_name) {
  if (AbiShared::KindOf(handle) != static_cast<std::uint64_t>(kind)) {
    return Status::InvalidArgument(std::string(PluginInstance::KindName(handle)) + " " +
                                   std::to_string(handle) + " is not a " + kind_name);
  }
  return p.Release(handle);
}

Status Required(const void* p, const char* what) {
  return p != nullptr ? Status::Ok() : Status::InvalidArgument(std::string(what) + " is NULL");
}

// The first of several required pointers that is NULL, as Required() reports it.
Status Required(std::initializer_list<std::pair<const void*, const char*>> args) {
  for (const auto& [ptr, what] : args) {
    if (Status s = Required(ptr, what); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

Result<Priority> ToPriority(std::int32_t priority) {
  if (priority < MOLT_PRIORITY_KERNEL || priority > MOLT_PRIORITY_BACKGROUND) {
    return Status::InvalidArgument("priority " + std::to_string(priority) +
                                   " is not one of MOLT_PRIORITY_KERNEL (1) .. "
                                   "MOLT_PRIORITY_BACKGROUND (5)");
  }
  return static_cast<Priority>(priority - MOLT_PRIORITY_KERNEL);
}

Result<Duration> ToDelay(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) {
    return Status::InvalidArgument("seconds must be a finite number >= 0, not " +
                                   std::to_string(seconds));
  }
  return Seconds(seconds);
}

Args ToArgs(const molt_value* args, std::size_t n) {
  // Value adds nothing to molt_value (value.h): an array of one is an array of the other.
  return Args(static_cast<const Value*>(static_cast<const void*>(args)), n);
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

// --- errors and logging ---

const char* LastError(molt_context_t* ctx) noexcept {
  return ctx == nullptr ? "" : PluginInstance::From(ctx).last_error();
}

void SetError(molt_context_t* ctx, const char* message) noexcept {
  if (ctx != nullptr) {
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
      Logger::Get().Emit(p.name(), l, message);
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
    if (Status s = Required(topic, "topic"); !s.ok()) {
      return s;
    }
    if (Status s = Required(out, "out_topic"); !s.ok()) {
      return s;
    }
    if (Status s = Bus::CheckTopic(topic); !s.ok()) {
      return s;
    }
    *out = p.shared().TopicHandle(p.kernel().bus().Resolve(topic));
    return Status::Ok();
  });
}

molt_status_t BusPublish(molt_context_t* ctx, const char* topic, const molt_value* args,
                         std::size_t n) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required(topic, "topic"); !s.ok()) {
      return s;
    }
    if (n > 0 && args == nullptr) {
      return Status::InvalidArgument("args is NULL with arg_count > 0");
    }
    if (Status s = Bus::CheckTopic(topic); !s.ok()) {
      return s;
    }
    p.kernel().bus().Publish(std::string_view(topic), ToArgs(args, n));
    return Status::Ok();
  });
}

// Why a publish_topic call was refused; out of line so the hot path below stays small.
[[gnu::noinline, gnu::cold]] molt_status_t PublishTopicRefused(molt_context_t* ctx,
                                                               molt_topic_t topic,
                                                               bool resolved) noexcept {
  return Guard(ctx, [&](PluginInstance&) -> Status {
    if (!resolved) {
      return Status::Stale("topic " + std::to_string(topic) + " was never resolved");
    }
    return Status::InvalidArgument("args is NULL with arg_count > 0");
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
  Bus::Topic* t = p.shared().TopicAt(topic);
  if (t == nullptr || !p.live() || (n > 0 && args == nullptr)) [[unlikely]] {
    return PublishTopicRefused(ctx, topic, t != nullptr);
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
    if (Status s = Bus::CheckPattern(pattern); !s.ok()) {
      return s;
    }
    PluginInstance* inst = &p;
    PluginInstance::Resource r{Kind::kSubscription, {}, 0, false, nullptr, release, user_data};
    r.connection = p.kernel().bus().Subscribe(
        pattern, [inst, fn, user_data](std::string_view topic, Args args) {
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
    if (Status s = Required(point, "point"); !s.ok()) {
      return s;
    }
    if (Status s = Hooks::CheckUserPointName(point); !s.ok()) {
      return s;
    }
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
    if (Status s = Hooks::CheckUserPointName(point); !s.ok()) {
      return s;
    }
    PluginInstance* inst = &p;
    PluginInstance::Resource r{Kind::kHookHandler, {}, 0, false, nullptr, release, user_data};
    r.connection = p.kernel().hooks().On(
        point,
        [inst, fn, user_data](HookContext& c) {
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
          throw HandlerFailed("plugin \"" + inst->name() + "\": " + inst->CallbackError(st));
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
    if (Status s = Required(point, "point"); !s.ok()) {
      return s;
    }
    if (Status s = Required(out_passed, "out_passed"); !s.ok()) {
      return s;
    }
    if (n > 0 && args == nullptr) {
      return Status::InvalidArgument("args is NULL with arg_count > 0");
    }
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

template <class Arm>
Status AddTask(PluginInstance& p, std::int32_t priority, molt_task_fn fn, void* user_data,
               molt_cleanup_fn release, molt_task_t* out, bool one_shot, Arm&& arm) {
  if (Status s = Required({{reinterpret_cast<const void*>(fn), "fn"}, {out, "out_task"}});
      !s.ok()) {
    return s;
  }
  Result<Priority> prio = ToPriority(priority);
  if (!prio.ok()) {
    return prio.status();
  }
  PluginInstance* inst = &p;
  PluginInstance::Resource r{Kind::kTask, {}, 0, one_shot, nullptr, release, user_data};
  const molt_handle_t h = p.Own(std::move(r));
  try {
    TaskHandle task = arm(*prio, [inst, fn, user_data, h] {
      const molt_status_t st = CallPlugin(*inst, [&] { return fn(user_data); });
      if (st != MOLT_OK) {
        inst->ReportCallbackError("task", st);
      }
      if (PluginInstance::Resource* res = inst->Find(h); res != nullptr && res->one_shot) {
        (void)inst->Release(h);  // ran once: the task is over
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

molt_status_t TaskSchedule(molt_context_t* ctx, std::int32_t priority, molt_task_fn fn,
                           void* user_data, molt_cleanup_fn release, molt_task_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) {
    return AddTask(p, priority, fn, user_data, release, out, true, [&](Priority pr, auto&& task) {
      return p.kernel().scheduler().Schedule(std::move(task), pr, p.origin());
    });
  });
}

molt_status_t TaskAfter(molt_context_t* ctx, double seconds, std::int32_t priority, molt_task_fn fn,
                        void* user_data, molt_cleanup_fn release, molt_task_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Result<Duration> delay = ToDelay(seconds);
    if (!delay.ok()) {
      return delay.status();
    }
    return AddTask(p, priority, fn, user_data, release, out, true, [&](Priority pr, auto&& task) {
      return p.kernel().scheduler().After(*delay, std::move(task), pr, p.origin());
    });
  });
}

molt_status_t TaskEvery(molt_context_t* ctx, double seconds, std::int32_t priority, molt_task_fn fn,
                        void* user_data, molt_cleanup_fn release, molt_task_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Result<Duration> interval = ToDelay(seconds);
    if (!interval.ok()) {
      return interval.status();
    }
    return AddTask(p, priority, fn, user_data, release, out, false, [&](Priority pr, auto&& task) {
      return p.kernel().scheduler().Every(*interval, std::move(task), pr, p.origin());
    });
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
                         " is not live (closed, or not plugin \"" + p.name() + "\"'s)");
  }
  return r->scope.get();
}

molt_status_t ScopeCreate(molt_context_t* ctx, molt_scope_t parent, molt_scope_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required(out, "out_scope"); !s.ok()) {
      return s;
    }
    Result<Scope*> parent_scope = ScopeOf(p, parent);
    if (!parent_scope.ok()) {
      return parent_scope.status();
    }
    std::shared_ptr<Scope> child = (*parent_scope)->Child();
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
    if (Status s = Required(reinterpret_cast<const void*>(fn), "fn"); !s.ok()) {
      return s;
    }
    Result<Scope*> target = ScopeOf(p, scope);
    if (!target.ok()) {
      return target.status();
    }
    const bool closed = (*target)->closed();
    (*target)->Add([fn, user_data] { fn(user_data); });
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
                           p.name() + "\"'s)");
    }
    if (handle == scope) {
      return Status::InvalidArgument("a scope cannot adopt itself");
    }
    Result<Scope*> target = ScopeOf(p, scope);
    if (!target.ok()) {
      return target.status();
    }
    PluginInstance* inst = &p;
    // Released by the scope, unless released earlier (then this finds it gone and does nothing).
    (*target)->Add([inst, handle] { (void)inst->Release(handle); });
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
    Result<Service*> target = p.kernel().GetService(service);
    if (!target.ok()) {
      return target.status();
    }
    auto* exporter = dynamic_cast<PluginInstance*>(*target);
    if (exporter == nullptr) {
      return Status::NotFound("service \"" + std::string(service) + "\" exports no interfaces");
    }
    const molt_plugin_info& info = exporter->info();
    std::string available;
    for (std::uint32_t i = 0; i < info.interface_count; ++i) {
      const molt_interface_export& e = info.interfaces[i];
      if (e.name != nullptr && std::string_view(e.name) == iface) {
        *out = molt_interface_ref{e.vtable, exporter->state(), e.vtable_size, 0};
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
    if (Status s = Required(key, "key"); !s.ok()) {
      return s;
    }
    if (Status s = Required(out, "out_value"); !s.ok()) {
      return s;
    }
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
    if (Status s = Required(reinterpret_cast<const void*>(sink), "sink"); !s.ok()) {
      return s;
    }
    const std::string json = p.kernel().StatsJson();
    CallPlugin(p, [&] {
      sink(user_data, json.data(), json.size());
      return MOLT_OK;
    });
    return Status::Ok();
  });
}

// --- Processes ---

Result<PluginInstance::Resource*> FindKind(PluginInstance& p, molt_handle_t h, Kind kind,
                                           const char* kind_name) {
  if (AbiShared::KindOf(h) != static_cast<std::uint64_t>(kind)) {
    return Status::InvalidArgument(std::string(PluginInstance::KindName(h)) + " " +
                                   std::to_string(h) + " is not a " + kind_name);
  }
  PluginInstance::Resource* r = p.Find(h);
  if (r == nullptr) {
    return Status::Stale(std::string(kind_name) + " " + std::to_string(h) +
                         " is not live (ended, or not plugin \"" + p.name() + "\"'s)");
  }
  return r;
}

std::int32_t ToAbiState(Process::State s) { return static_cast<std::int32_t>(s); }
static_assert(static_cast<int>(Process::State::kKilled) == MOLT_PROCESS_KILLED &&
                  static_cast<int>(Process::State::kCreated) == MOLT_PROCESS_CREATED,
              "process states are the ABI's");

// The process running now, when it is one of `p`'s.
Result<Process*> CurrentProcessOf(PluginInstance& p, const char* call) {
  Process* current = Process::Current();
  if (current == nullptr) {
    return Status::FailedPrecondition(std::string(call) + " must be called inside a process");
  }
  if (p.HandleOf(current) == 0) {
    return Status::FailedPrecondition(std::string(call) + ": the running process " +
                                      current->name() + " is not plugin \"" + p.name() + "\"'s");
  }
  return current;
}

Status Killed(const Process& process) {
  return Status::Cancelled("process " + process.name() + " was killed: return from its body");
}

molt_status_t ProcessSpawn(molt_context_t* ctx, const molt_process_options* options,
                           molt_process_fn body, void* user_data, molt_cleanup_fn release,
                           molt_process_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required({{reinterpret_cast<const void*>(body), "body"}, {out, "out_process"}});
        !s.ok()) {
      return s;
    }
    ProcessOptions po;
    if (options != nullptr) {
      if (options->struct_size < sizeof(molt_process_options)) {
        return Status::InvalidArgument("molt_process_options.struct_size is " +
                                       std::to_string(options->struct_size) +
                                       ": set it to sizeof(molt_process_options)");
      }
      if (options->priority != 0) {
        Result<Priority> prio = ToPriority(options->priority);
        if (!prio.ok()) {
          return prio.status();
        }
        po.priority = *prio;
      }
      if (options->name != nullptr) {
        po.name = options->name;
      }
      if (options->stack_size != 0) {
        po.stack_size = static_cast<std::size_t>(options->stack_size);
      }
    }
    auto record = std::make_shared<PluginInstance::ProcessRecord>();
    PluginInstance* inst = &p;
    // The body runs on the process's stack for as long as the process lives: it is not one of
    // the bracketed callbacks (those defer releases until they return).
    Result<std::shared_ptr<Process>> proc = p.kernel().SpawnProcess(
        [inst, body, user_data, record]() -> std::string {
          inst->SetError("");
          molt_status_t st;
          try {
            st = body(user_data, record->arg);
          } catch (...) {
            st = MOLT_ERR_INTERNAL;
            inst->SetError("process body threw across the C ABI");
          }
          if (st != MOLT_OK) {
            throw std::runtime_error(inst->CallbackError(st));
          }
          return record->result;
        },
        po);
    if (!proc.ok()) {
      return proc.status();
    }
    PluginInstance::Resource r{Kind::kProcess, {}, 0, false, nullptr, release, user_data};
    r.process = *proc;
    r.record = record;
    const molt_process_t handle = p.Own(std::move(r));
    p.IndexProcess(proc->get(), handle);
    Scheduler* scheduler = &p.kernel().scheduler();
    (*proc)->OnExit().Connect(
        [inst, handle, record, scheduler](Process::State s, const std::string& result) {
          for (auto& cb : std::exchange(record->on_exit, {})) {
            CallPlugin(*inst, [&] {
              cb.fn(cb.user_data, handle, ToAbiState(s), result.c_str(), result.size());
              return MOLT_OK;
            });
            if (cb.release != nullptr) {
              CallPlugin(*inst, [&] {
                cb.release(cb.user_data);
                return MOLT_OK;
              });
            }
          }
          // The handle goes stale on the next step, once a body that killed itself has unwound.
          scheduler->Schedule([inst, handle] { (void)inst->Release(handle); }, Priority::kKernel,
                              TaskOrigin::Named("process handle release"));
        });
    *out = handle;
    return Status::Ok();
  });
}

molt_status_t ProcessStart(molt_context_t* ctx, molt_process_t process, void* arg) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Result<PluginInstance::Resource*> r = FindKind(p, process, Kind::kProcess, "process");
    if (!r.ok()) {
      return r.status();
    }
    if ((*r)->process->state() == Process::State::kCreated) {
      (*r)->record->arg = arg;
    }
    return (*r)->process->Start();
  });
}

template <class Park>
molt_status_t Parked(molt_context_t* ctx, const char* call, Park&& park) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Result<Process*> current = CurrentProcessOf(p, call);
    if (!current.ok()) {
      return current.status();
    }
    try {
      return park(p, **current);
    } catch (const ProcessKilled&) {
      return Killed(**current);
    }
  });
}

molt_status_t ProcessYield(molt_context_t* ctx) noexcept {
  return Parked(ctx, "process_yield", [](PluginInstance&, Process&) {
    Process::Yield();
    return Status::Ok();
  });
}

molt_status_t ProcessSleep(molt_context_t* ctx, double seconds) noexcept {
  return Parked(ctx, "process_sleep", [seconds](PluginInstance&, Process&) -> Status {
    if (!std::isfinite(seconds) || seconds < 0) {
      return Status::InvalidArgument("process_sleep seconds must be a finite number >= 0, not " +
                                     std::to_string(seconds));
    }
    Process::Sleep(seconds);
    return Status::Ok();
  });
}

molt_status_t ProcessWait(molt_context_t* ctx, molt_completion_t completion, molt_bytes_fn sink,
                          void* sink_user_data) noexcept {
  return Parked(ctx, "process_wait", [&](PluginInstance& p, Process&) -> Status {
    Result<PluginInstance::Resource*> r = FindKind(p, completion, Kind::kCompletion, "completion");
    if (!r.ok()) {
      return r.status();
    }
    std::shared_ptr<Completion> c = (*r)->completion;  // alive while waiting
    const Completion& done = Process::Wait(c);
    if (sink != nullptr && !done.payload().empty()) {
      sink(sink_user_data, done.payload().data(), done.payload().size());
    }
    return done.status();
  });
}

template <class F>
molt_status_t OnProcess(molt_context_t* ctx, molt_process_t process, F&& f) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Result<PluginInstance::Resource*> r = FindKind(p, process, Kind::kProcess, "process");
    if (!r.ok()) {
      return r.status();
    }
    return f(**r);
  });
}

molt_status_t ProcessSuspend(molt_context_t* ctx, molt_process_t process) noexcept {
  return OnProcess(ctx, process, [](PluginInstance::Resource& r) {
    r.process->Suspend();
    return Status::Ok();
  });
}

molt_status_t ProcessResume(molt_context_t* ctx, molt_process_t process) noexcept {
  return OnProcess(ctx, process, [](PluginInstance::Resource& r) {
    r.process->Resume();
    return Status::Ok();
  });
}

molt_status_t ProcessKill(molt_context_t* ctx, molt_process_t process,
                          const char* reason) noexcept {
  return OnProcess(ctx, process, [reason](PluginInstance::Resource& r) {
    r.process->Kill(reason != nullptr ? reason : "killed");
    return Status::Ok();
  });
}

molt_status_t ProcessState(molt_context_t* ctx, molt_process_t process, std::int32_t* out_state,
                           std::uint64_t* out_pid) noexcept {
  return OnProcess(ctx, process, [&](PluginInstance::Resource& r) -> Status {
    if (Status s = Required(out_state, "out_state"); !s.ok()) {
      return s;
    }
    *out_state = ToAbiState(r.process->state());
    if (out_pid != nullptr) {
      *out_pid = r.process->pid();
    }
    return Status::Ok();
  });
}

molt_status_t ProcessOnExit(molt_context_t* ctx, molt_process_t process, molt_process_exit_fn fn,
                            void* user_data, molt_cleanup_fn release) noexcept {
  return OnProcess(ctx, process, [&](PluginInstance::Resource& r) -> Status {
    if (Status s = Required(reinterpret_cast<const void*>(fn), "fn"); !s.ok()) {
      return s;
    }
    if (r.process->terminal()) {
      return Status::FailedPrecondition("process " + r.process->name() + " already ended (" +
                                        std::string(Process::StateName(r.process->state())) + ")");
    }
    r.record->on_exit.push_back({fn, user_data, release});
    return Status::Ok();
  });
}

molt_status_t ProcessSetResult(molt_context_t* ctx, const char* result) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Result<Process*> current = CurrentProcessOf(p, "process_set_result");
    if (!current.ok()) {
      return current.status();
    }
    p.Find(p.HandleOf(*current))->record->result = result != nullptr ? result : "";
    return Status::Ok();
  });
}

molt_status_t CompletionCreate(molt_context_t* ctx, molt_completion_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required(out, "out_completion"); !s.ok()) {
      return s;
    }
    PluginInstance::Resource r{Kind::kCompletion, {}, 0, false, nullptr, nullptr, nullptr};
    r.completion = Completion::Create();
    *out = p.Own(std::move(r));
    return Status::Ok();
  });
}

molt_status_t CompletionComplete(molt_context_t* ctx, molt_completion_t completion,
                                 molt_status_t status, const void* data,
                                 std::size_t size) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Result<PluginInstance::Resource*> r = FindKind(p, completion, Kind::kCompletion, "completion");
    if (!r.ok()) {
      return r.status();
    }
    if (size > 0 && data == nullptr) {
      return Status::InvalidArgument("data is NULL with size > 0");
    }
    Status st = status == MOLT_OK ? Status::Ok() : Status(AbiCode(status), p.last_error());
    if (!(*r)->completion->Complete(std::move(st),
                                    std::string(static_cast<const char*>(data), data ? size : 0))) {
      return Status::FailedPrecondition("completion " + std::to_string(completion) +
                                        " is already complete");
    }
    return Status::Ok();
  });
}

// --- Networking (ABI 1.1) ---

static_assert(static_cast<int>(net::ChannelKind::kEvent) == MOLT_CHANNEL_EVENT &&
                  static_cast<int>(net::FieldType::kString) == MOLT_FIELD_STRING &&
                  static_cast<int>(net::FieldType::kFloat) == MOLT_FIELD_FLOAT &&
                  static_cast<int>(net::ExitReason::kClientClosed) == MOLT_EXIT_CLIENT_CLOSED &&
                  static_cast<int>(net::ExitReason::kOffender) == MOLT_EXIT_OFFENDER &&
                  static_cast<int>(net::ExitReason::kTransportError) == MOLT_EXIT_TRANSPORT_ERROR,
              "the kernel's network enums are the ABI's numbers");

Result<net::Network*> NetworkOf(PluginInstance& p) {
  if (net::Network* n = p.shared().network()) {
    return n;
  }
  return Status::Unsupported("this host has no network (channels and sessions are server-side)");
}

Result<net::FieldRule> ToRule(const molt_field_rule& r, std::size_t index) {
  const std::string where = "rule " + std::to_string(index);
  if (r.type > MOLT_FIELD_STRING) {
    return Status::InvalidArgument(where + ": type " + std::to_string(r.type) +
                                   " is not a MOLT_FIELD_* value");
  }
  const auto type = static_cast<net::FieldType>(r.type);
  std::string name = r.name != nullptr ? r.name : "field " + std::to_string(r.field);
  switch (r.rule) {
    case MOLT_RULE_RANGE:
      return net::FieldRule::Range(r.field, std::move(name), type, r.min, r.max);
    case MOLT_RULE_ONE_OF:
      if (r.one_of == nullptr || r.one_of_count == 0) {
        return Status::InvalidArgument(where + ": MOLT_RULE_ONE_OF needs one_of values");
      }
      return net::FieldRule::OneOf(r.field, std::move(name), type,
                                   std::vector<std::int64_t>(r.one_of, r.one_of + r.one_of_count));
    case MOLT_RULE_MAX_LENGTH:
      if (r.type != MOLT_FIELD_STRING) {
        return Status::InvalidArgument(where +
                                       ": MOLT_RULE_MAX_LENGTH applies to MOLT_FIELD_STRING");
      }
      return net::FieldRule::MaxLength(r.field, std::move(name), r.max_length);
  }
  return Status::InvalidArgument(where + ": rule " + std::to_string(r.rule) +
                                 " is not a MOLT_RULE_* value");
}

Result<net::ChannelSpec> ToChannelSpec(PluginInstance& p, net::Network& network,
                                       const molt_channel_spec& in) {
  if (in.struct_size < sizeof(molt_channel_spec)) {
    return Status::InvalidArgument("spec->struct_size is " + std::to_string(in.struct_size) +
                                   ": set it to sizeof(molt_channel_spec)");
  }
  if (Status s = Required({{in.name, "spec->name"}, {in.schema, "spec->schema"}}); !s.ok()) {
    return s;
  }
  if (in.kind < MOLT_CHANNEL_INTENT || in.kind > MOLT_CHANNEL_EVENT) {
    return Status::InvalidArgument("spec->kind " + std::to_string(in.kind) +
                                   " is not MOLT_CHANNEL_INTENT, _REQUEST or _EVENT");
  }
  if (in.rule_count > 0 && in.rules == nullptr) {
    return Status::InvalidArgument("spec->rules is NULL with rule_count > 0");
  }
  if (in.reject_size > 0 && in.reject_payload == nullptr) {
    return Status::InvalidArgument("spec->reject_payload is NULL with reject_size > 0");
  }
  net::ChannelSpec out;
  out.name = in.name;
  out.kind = static_cast<net::ChannelKind>(in.kind);
  out.schema = in.schema;
  for (std::size_t i = 0; i < in.rule_count; ++i) {
    Result<net::FieldRule> r = ToRule(in.rules[i], i);
    if (!r.ok()) {
      return r.status();
    }
    out.rules.push_back(std::move(r.value()));
  }
  out.rate = in.rate;
  out.burst = in.burst;
  out.open = in.open != 0;
  out.timeout_seconds = in.timeout_seconds;
  const auto* reject = static_cast<const std::uint8_t*>(in.reject_payload);
  out.reject_payload.assign(reject, reject + (reject != nullptr ? in.reject_size : 0));
  PluginInstance* inst = &p;
  void* ud = in.user_data;
  if (molt_verify_fn verify = in.verify) {
    out.verify = [verify, ud](std::span<const std::uint8_t> payload) {
      return verify(ud, payload.data(), payload.size()) != 0;
    };
  }
  if (molt_intent_fn fn = in.on_intent) {
    out.on_intent = [inst, fn, ud](net::Session& s, std::span<Value> args) {
      const molt_status_t st = CallPlugin(*inst, [&] {
        return fn(ud, s.id(), static_cast<const molt_value*>(static_cast<void*>(args.data())),
                  args.size());
      });
      if (st != MOLT_OK) {
        inst->CountCallbackError();
        throw std::runtime_error("plugin \"" + inst->name() + "\": " + inst->CallbackError(st));
      }
    };
  }
  if (molt_request_fn fn = in.on_request) {
    net::Network* n = &network;
    out.on_request = [inst, fn, ud, n](net::Session& s, std::span<Value> args,
                                       net::RequestToken request) {
      const molt_status_t st = CallPlugin(*inst, [&] {
        return fn(ud, s.id(), static_cast<const molt_value*>(static_cast<void*>(args.data())),
                  args.size(), request);
      });
      if (st != MOLT_OK) {
        inst->ReportCallbackError("request handler of channel", st);
        (void)n->Reply(request, AbiCode(st), {});  // STALE when the handler had answered
      }
    };
  }
  return out;
}

molt_status_t ChannelDeclare(molt_context_t* ctx, const molt_channel_spec* spec,
                             molt_cleanup_fn release, molt_channel_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required({{spec, "spec"}, {out, "out_channel"}}); !s.ok()) {
      return s;
    }
    Result<net::Network*> network = NetworkOf(p);
    if (!network.ok()) {
      return network.status();
    }
    Result<net::ChannelSpec> cs = ToChannelSpec(p, **network, *spec);
    if (!cs.ok()) {
      return cs.status();
    }
    Result<net::ChannelId> id = (*network)->channels().Declare(std::move(cs.value()), &p);
    if (!id.ok()) {
      return id.status();
    }
    PluginInstance::Resource r{Kind::kChannel, {}, 0, false, nullptr, release, spec->user_data};
    r.channel = *id;
    *out = p.Own(std::move(r));
    return Status::Ok();
  });
}

molt_status_t ChannelRemove(molt_context_t* ctx, molt_channel_t channel) noexcept {
  return Guard(
      ctx, [&](PluginInstance& p) { return ReleaseOwned(p, channel, Kind::kChannel, "channel"); });
}

molt_status_t EventSend(molt_context_t* ctx, molt_channel_t channel, const molt_session_t* sessions,
                        std::size_t count, const void* data, std::size_t size) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Result<net::Network*> network = NetworkOf(p);
    if (!network.ok()) {
      return network.status();
    }
    Result<PluginInstance::Resource*> r = FindKind(p, channel, Kind::kChannel, "channel");
    if (!r.ok()) {
      return r.status();
    }
    if (size > 0 && data == nullptr) {
      return Status::InvalidArgument("data is NULL with size > 0");
    }
    const std::span payload(static_cast<const std::uint8_t*>(data), data != nullptr ? size : 0);
    if (sessions == nullptr) {
      if (count > 0) {
        return Status::InvalidArgument("sessions is NULL with count > 0 (NULL and 0: everyone)");
      }
      return (*network)->Broadcast((*r)->channel, payload);
    }
    return (*network)->SendList((*r)->channel, std::span(sessions, count), payload);
  });
}

molt_status_t RequestReply(molt_context_t* ctx, molt_request_t request, molt_status_t status,
                           const void* data, std::size_t size) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Result<net::Network*> network = NetworkOf(p);
    if (!network.ok()) {
      return network.status();
    }
    if (size > 0 && data == nullptr) {
      return Status::InvalidArgument("data is NULL with size > 0");
    }
    return (*network)->Reply(
        request, status == MOLT_OK ? Status::Code::kOk : AbiCode(status),
        std::span(static_cast<const std::uint8_t*>(data), data != nullptr ? size : 0));
  });
}

molt_status_t SessionOn(molt_context_t* ctx, molt_session_fn fn, void* user_data,
                        molt_cleanup_fn release, molt_subscription_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required({{reinterpret_cast<const void*>(fn), "fn"}, {out, "out_subscription"}});
        !s.ok()) {
      return s;
    }
    Result<net::Network*> network = NetworkOf(p);
    if (!network.ok()) {
      return network.status();
    }
    PluginInstance* inst = &p;
    PluginInstance::Resource r{Kind::kSubscription, {}, 0, false, nullptr, release, user_data};
    r.connection = (*network)->sessions().OnSession(
        [inst, fn, user_data](net::Session& s) {
          CallPlugin(*inst, [&] {
            fn(user_data, s.id());
            return MOLT_OK;
          });
        },
        &p);
    *out = p.Own(std::move(r));
    return Status::Ok();
  });
}

// The live or ending session `id`, for the session_* slots.
Result<net::Session*> FindSession(PluginInstance& p, molt_session_t id) {
  Result<net::Network*> network = NetworkOf(p);
  if (!network.ok()) {
    return network.status();
  }
  if (net::Session* s = (*network)->sessions().Find(id)) {
    return s;
  }
  return Status::NotFound("session " + std::to_string(id) +
                          " is not live (it left, or never existed)");
}

molt_status_t SessionBind(molt_context_t* ctx, molt_session_t session, std::int32_t last,
                          molt_cleanup_fn fn, void* user_data) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required(reinterpret_cast<const void*>(fn), "fn"); !s.ok()) {
      return s;
    }
    Result<net::Session*> s = FindSession(p, session);
    if (!s.ok()) {
      return s.status();
    }
    PluginInstance* inst = &p;
    auto cleanup = [inst, fn, user_data] {
      CallPlugin(*inst, [&] {
        fn(user_data);
        return MOLT_OK;
      });
    };
    if (last != 0) {
      (*s)->BindLast(std::move(cleanup), &p);
    } else {
      (*s)->Bind(std::move(cleanup), &p);
    }
    return Status::Ok();
  });
}

molt_status_t SessionInfo(molt_context_t* ctx, molt_session_t session,
                          molt_session_info* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required(out, "out_info"); !s.ok()) {
      return s;
    }
    if (out->struct_size < sizeof(molt_session_info)) {
      return Status::InvalidArgument("out_info->struct_size is " +
                                     std::to_string(out->struct_size) +
                                     ": set it to sizeof(molt_session_info)");
    }
    Result<net::Session*> found = FindSession(p, session);
    if (!found.ok()) {
      return found.status();
    }
    const net::Session& s = **found;
    out->active = s.active() ? 1 : 0;
    out->user = s.user().c_str();
    out->join_data = s.join_data().data();
    out->join_size = s.join_data().size();
    out->address = s.address().c_str();
    out->exit_reason =
        s.exit_reason() ? static_cast<std::int32_t>(*s.exit_reason()) : MOLT_EXIT_NONE;
    out->rtt_seconds = ToSeconds(s.rtt());
    return Status::Ok();
  });
}

molt_status_t SessionDataSet(molt_context_t* ctx, molt_session_t session, const char* key,
                             void* value, molt_cleanup_fn release) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required(key, "key"); !s.ok()) {
      return s;
    }
    Result<net::Session*> s = FindSession(p, session);
    if (!s.ok()) {
      return s.status();
    }
    PluginInstance* inst = &p;
    Callback<void(void*)> on_release;
    if (release != nullptr) {
      on_release = [inst, release](void* v) { inst->RunRelease(release, v); };
    }
    (*s)->SetData(key, value, std::move(on_release), &p);
    return Status::Ok();
  });
}

molt_status_t SessionDataGet(molt_context_t* ctx, molt_session_t session, const char* key,
                             void** out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required({{key, "key"}, {out, "out_value"}}); !s.ok()) {
      return s;
    }
    Result<net::Session*> s = FindSession(p, session);
    if (!s.ok()) {
      return s.status();
    }
    *out = (*s)->GetData(key);
    return Status::Ok();
  });
}

molt_status_t SessionKick(molt_context_t* ctx, molt_session_t session,
                          const char* reason) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Result<net::Network*> network = NetworkOf(p);
    if (!network.ok()) {
      return network.status();
    }
    return (*network)->Kick(session, reason != nullptr ? reason : "kicked");
  });
}

// --- Replicas (ABI 1.2) ---

static_assert(static_cast<int>(net::ReplicaFieldType::kBytes) == MOLT_REPLICA_BYTES &&
                  static_cast<int>(net::Audience::kList) == MOLT_AUDIENCE_LIST,
              "replica enums follow molt.h");

molt_status_t ReplicaCreate(molt_context_t* ctx, const molt_replica_spec* spec,
                            molt_replica_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required({{spec, "spec"}, {out, "out_replica"}}); !s.ok()) {
      return s;
    }
    if (spec->struct_size < sizeof(molt_replica_spec)) {
      return Status::InvalidArgument("spec->struct_size is " + std::to_string(spec->struct_size) +
                                     ": set it to sizeof(molt_replica_spec)");
    }
    Result<net::Network*> network = NetworkOf(p);
    if (!network.ok()) {
      return network.status();
    }
    if (Status s = Required({{spec->name, "spec->name"}, {spec->fields, "spec->fields"}});
        !s.ok()) {
      return s;
    }
    if (spec->audience != MOLT_AUDIENCE_ALL && spec->audience != MOLT_AUDIENCE_LIST) {
      return Status::InvalidArgument("spec->audience is not a MOLT_AUDIENCE_* value");
    }
    net::ReplicaSpec rs;
    rs.name = spec->name;
    rs.tick_rate = spec->tick_rate == 0 ? 10 : spec->tick_rate;
    rs.audience = static_cast<net::Audience>(spec->audience);
    for (std::size_t i = 0; i < spec->field_count; ++i) {
      const molt_replica_field& f = spec->fields[i];
      if (f.type < MOLT_REPLICA_INT || f.type > MOLT_REPLICA_BYTES) {
        return Status::InvalidArgument("replica \"" + rs.name + "\": field " + std::to_string(i) +
                                       " has type " + std::to_string(f.type) +
                                       ", not a MOLT_REPLICA_* value");
      }
      rs.fields.push_back({f.name != nullptr ? f.name : "",
                           static_cast<net::ReplicaFieldType>(f.type),
                           f.max_bytes == 0 ? net::kDefaultReplicaBytes : f.max_bytes});
    }
    Result<net::ReplicaId> id = (*network)->replicas().Create(std::move(rs), &p);
    if (!id.ok()) {
      return id.status();
    }
    PluginInstance::Resource r{Kind::kReplica, {}, 0, false, nullptr, nullptr, nullptr};
    r.replica = *id;
    *out = p.Own(std::move(r));
    return Status::Ok();
  });
}

molt_status_t ReplicaDestroy(molt_context_t* ctx, molt_replica_t replica) noexcept {
  return Guard(
      ctx, [&](PluginInstance& p) { return ReleaseOwned(p, replica, Kind::kReplica, "replica"); });
}

// Runs `fn(replicas, id)` for a replica `p` owns.
template <class F>
molt_status_t WithReplica(molt_context_t* ctx, molt_replica_t replica, F fn) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    Result<net::Network*> network = NetworkOf(p);
    if (!network.ok()) {
      return network.status();
    }
    Result<PluginInstance::Resource*> r = FindKind(p, replica, Kind::kReplica, "replica");
    if (!r.ok()) {
      return r.status();
    }
    return fn((*network)->replicas(), (*r)->replica);
  });
}

molt_status_t ReplicaSetInt(molt_context_t* ctx, molt_replica_t replica, std::uint32_t field,
                            std::int64_t value) noexcept {
  return WithReplica(ctx, replica, [&](net::Replicas& rs, net::ReplicaId id) {
    return rs.SetInt(id, field, value);
  });
}

molt_status_t ReplicaSetFloat(molt_context_t* ctx, molt_replica_t replica, std::uint32_t field,
                              double value) noexcept {
  return WithReplica(ctx, replica, [&](net::Replicas& rs, net::ReplicaId id) {
    return rs.SetFloat(id, field, value);
  });
}

molt_status_t ReplicaSetBytes(molt_context_t* ctx, molt_replica_t replica, std::uint32_t field,
                              const void* data, std::size_t size) noexcept {
  return WithReplica(ctx, replica, [&](net::Replicas& rs, net::ReplicaId id) -> Status {
    if (size > 0 && data == nullptr) {
      return Status::InvalidArgument("data is NULL with size > 0");
    }
    return rs.SetBytes(
        id, field, std::span(static_cast<const std::uint8_t*>(data), data != nullptr ? size : 0));
  });
}

molt_status_t ReplicaAddSession(molt_context_t* ctx, molt_replica_t replica,
                                molt_session_t session) noexcept {
  return WithReplica(ctx, replica, [&](net::Replicas& rs, net::ReplicaId id) {
    return rs.AddSession(id, session);
  });
}

molt_status_t ReplicaRemoveSession(molt_context_t* ctx, molt_replica_t replica,
                                   molt_session_t session) noexcept {
  return WithReplica(ctx, replica, [&](net::Replicas& rs, net::ReplicaId id) {
    return rs.RemoveSession(id, session);
  });
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
  api.task_cancel = TaskCancel;
  api.scope_create = ScopeCreate;
  api.scope_defer = ScopeDefer;
  api.scope_adopt = ScopeAdopt;
  api.scope_close = ScopeClose;
  api.service_interface = ServiceInterface;
  api.config_get = ConfigGet;
  api.stats_json = StatsJson;
  api.process_spawn = ProcessSpawn;
  api.process_start = ProcessStart;
  api.process_yield = ProcessYield;
  api.process_sleep = ProcessSleep;
  api.process_wait = ProcessWait;
  api.process_suspend = ProcessSuspend;
  api.process_resume = ProcessResume;
  api.process_kill = ProcessKill;
  api.process_state = ProcessState;
  api.process_on_exit = ProcessOnExit;
  api.process_set_result = ProcessSetResult;
  api.completion_create = CompletionCreate;
  api.completion_complete = CompletionComplete;
  api.channel_declare = ChannelDeclare;
  api.channel_remove = ChannelRemove;
  api.event_send = EventSend;
  api.request_reply = RequestReply;
  api.session_on = SessionOn;
  api.session_bind = SessionBind;
  api.session_info = SessionInfo;
  api.session_data_set = SessionDataSet;
  api.session_data_get = SessionDataGet;
  api.session_kick = SessionKick;
  api.replica_create = ReplicaCreate;
  api.replica_destroy = ReplicaDestroy;
  api.replica_set_int = ReplicaSetInt;
  api.replica_set_float = ReplicaSetFloat;
  api.replica_set_bytes = ReplicaSetBytes;
  api.replica_add_session = ReplicaAddSession;
  api.replica_remove_session = ReplicaRemoveSession;
  return api;
}

}  // namespace

const molt_host_api& HostApi() {
  static const molt_host_api table = MakeTable();
  return table;
}

}  // namespace molt::kernel::abi
