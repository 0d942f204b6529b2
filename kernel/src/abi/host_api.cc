// SPDX-License-Identifier: Apache-2.0
// The core's host API table (CoreHostApi) and its own slots: errors and logs, the Bus, scopes,
// services, config, stats and reload_request. The hook, task and process slots and the refusals
// of the layer slots are units of their own (hook_api.h, task_api.h, process_api.h,
// layer_refusals.h). Conventions: every slot is noexcept, checks its context and pointers,
// refuses calls from an instance that is not live, and reports failures through Fail().
#include "kernel/src/abi/host_api.h"

#include <algorithm>
#include <optional>
#include <string>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/abi/hook_api.h"
#include "kernel/src/abi/layer_refusals.h"
#include "kernel/src/abi/process_api.h"
#include "kernel/src/abi/task_api.h"

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
  InstallHookSlots(api);
  InstallTaskSlots(api);
  api.scope_create = ScopeCreate;
  api.scope_defer = ScopeDefer;
  api.scope_adopt = ScopeAdopt;
  api.scope_close = ScopeClose;
  api.service_interface = ServiceInterface;
  api.config_get = ConfigGet;
  api.stats_json = StatsJson;
  InstallProcessSlots(api);
  api.reload_request = ReloadRequest;
  InstallLayerRefusals(api);
  return api;
}

}  // namespace

molt_host_api CoreHostApi() { return MakeTable(); }

}  // namespace molt::kernel::abi
