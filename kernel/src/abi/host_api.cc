// SPDX-License-Identifier: Apache-2.0
// The host API slots. Conventions: every slot is noexcept, checks its context and pointers,
// refuses calls from an instance that is not live, and reports failures through Fail().
#include "kernel/src/abi/host_api.h"

#include <molt/scope_exit.h>

#include <cmath>
#include <exception>
#include <string>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/abi/slot.h"
#include "kernel/src/abi/struct_size.h"

namespace molt::kernel::abi {
namespace {

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
    TaskHandle task = arm(*prio, [inst, run, one_shot] {
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
                         " is not live (closed, or not plugin \"" + p.label() + "\"'s)");
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
                           p.label() + "\"'s)");
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
                                      current->name() + " is not plugin \"" + p.label() + "\"'s");
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
      Result<molt_process_options> given = ReadSized(*options);
      if (!given.ok()) {
        return given.status();
      }
      options = &given.value();
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
    const Process* raw = proc->get();  // alive while its exit fires
    (*proc)->OnExit().Connect(
        [inst, handle, record, scheduler, raw, body](Process::State s, const std::string& result) {
          if (s == Process::State::kCrashed) {
            inst->CountCallbackError();  // a crashed process is the plugin's error
          }
          if (raw->abandoned()) {
            // Its body still has frames in the library, parked for good: never unload it.
            inst->Pin(reinterpret_cast<const void*>(body),
                      "process " + raw->name() +
                          " ignored its cancellation (it called the host again after "
                          "MOLT_ERR_CANCELLED instead of returning) and was abandoned");
          }
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
          // (A swap may destroy the instance before then: the task holds it weakly.)
          scheduler->Schedule(
              [weak = inst->weak_from_this(), handle] {
                if (std::shared_ptr<PluginInstance> i = weak.lock()) {
                  (void)i->Release(handle);
                }
              },
              Priority::kKernel, TaskOrigin::Named("process handle release"));
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
    if (p.dormant() && (*r)->process->state() == Process::State::kCreated) {
      // Its generation does not serve yet: the body starts running once it does.
      p.WhenServing([inst = &p, process] {
        if (PluginInstance::Resource* res = inst->Find(process)) {
          (void)res->process->Start();
        }
      });
      return Status::Ok();
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
    (void)OwnCompletion(p, out);
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

molt_status_t CompletionRelease(molt_context_t* ctx, molt_completion_t completion) noexcept {
  return Guard(ctx, [&](PluginInstance& p) {
    return ReleaseOwned(p, completion, Kind::kCompletion, "completion");
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
  api.completion_release = CompletionRelease;
  api.reload_request = ReloadRequest;
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
