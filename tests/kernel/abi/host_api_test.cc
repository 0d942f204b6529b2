// SPDX-License-Identifier: Apache-2.0
// The host API table, called exactly as a plugin calls it (abi_fixture.h): the core's own slots
// (errors and logs, the Bus, scopes, services, config, stats), the process slots, and what a
// plugin instance does with what it owns. The hook and task slots and the refusals of the layer
// slots have tests of their own.
#include "kernel/src/abi/host_api.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/analytics/analytics.h"
#include "kernel/src/analytics/analytics_api.h"
#include "tests/kernel/abi/abi_fixture.h"

namespace molt::kernel::abi {
namespace {

using HostApiTest = AbiFixture;

TEST_F(HostApiTest, TableIsSizePrefixedAndVersioned) {
  EXPECT_EQ(api().struct_size, sizeof(molt_host_api));
  EXPECT_EQ(api().abi_version, MOLT_ABI_VERSION_CURRENT);
  EXPECT_TRUE(MOLT_API_HAS(&api(), stats_json));
  // Every slot is set: what the host's layer does not offer answers MOLT_ERR_UNSUPPORTED.
  EXPECT_TRUE(MOLT_API_HAS(&api(), session_kick));
  EXPECT_TRUE(MOLT_API_HAS(&api(), client_replica_get));
}

TEST_F(HostApiTest, PluginSubscribesAndPublishesThroughTheTable) {
  Boot();
  Journal j;
  molt_subscription_t sub = 0;
  ASSERT_EQ(api().bus_subscribe(a(), "Combat.*", RecordBus, &j, RecordRelease, &sub), MOLT_OK);
  EXPECT_NE(sub, 0u);
  const Value args[] = {Value::Int(7)};
  kernel_->bus().Publish("Combat.Kill", args);
  std::vector<std::string> from_plugin;
  kernel_->bus().Subscribe("Loot.Drop", [&](std::string_view t, Args args) {
    from_plugin.push_back(std::string(t) + ":" + std::string(args[0].AsString()));
  });
  const molt_value drop[] = {Value::String("sword")};
  ASSERT_EQ(api().bus_publish(a(), "Loot.Drop", drop, 1), MOLT_OK);
  molt_topic_t topic = 0;
  ASSERT_EQ(api().bus_resolve(a(), "Loot.Drop", &topic), MOLT_OK);
  ASSERT_EQ(api().bus_publish_topic(a(), topic, drop, 1), MOLT_OK);
  EXPECT_EQ(j.events, std::vector<std::string>{"Combat.Kill/1/7"});
  EXPECT_EQ(from_plugin, (std::vector<std::string>{"Loot.Drop:sword", "Loot.Drop:sword"}));
  ASSERT_EQ(api().bus_unsubscribe(a(), sub), MOLT_OK);
  kernel_->bus().Publish("Combat.Kill", args);
  EXPECT_EQ(j.events, (std::vector<std::string>{"Combat.Kill/1/7", "release"}));
}

TEST_F(HostApiTest, StaleForeignAndMistypedHandlesAreErrorsNotCrashes) {
  Boot();
  Journal j;
  molt_subscription_t sub = 0;
  ASSERT_EQ(api().bus_subscribe(a(), "T", RecordBus, &j, nullptr, &sub), MOLT_OK);
  EXPECT_EQ(api().bus_unsubscribe(b(), sub), MOLT_ERR_STALE);  // beta does not own it
  EXPECT_EQ(Error(b()), "subscription " + std::to_string(sub) +
                            " is not live (already released, or not plugin \"beta\"'s)");
  ASSERT_EQ(api().bus_unsubscribe(a(), sub), MOLT_OK);
  EXPECT_EQ(api().bus_unsubscribe(a(), sub), MOLT_ERR_STALE);
  EXPECT_EQ(api().task_cancel(a(), sub), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()), "subscription " + std::to_string(sub) + " is not a task");
  EXPECT_EQ(api().bus_publish_topic(a(), 0xdead5u, nullptr, 0), MOLT_ERR_STALE);
  EXPECT_EQ(Error(a()), "topic " + std::to_string(0xdead5u) + " was never resolved");
  EXPECT_EQ(api().bus_unsubscribe(a(), 12344), MOLT_ERR_INVALID_ARGUMENT);  // no kind bits
  EXPECT_EQ(api().bus_publish(nullptr, "T", nullptr, 0), MOLT_ERR_INVALID_ARGUMENT);
}

TEST_F(HostApiTest, ArgumentErrorsNameTheArgumentAndTheFix) {
  Boot();
  molt_subscription_t sub;
  EXPECT_EQ(api().bus_subscribe(a(), "Combat*", RecordBus, nullptr, nullptr, &sub),
            MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()),
            "bus: pattern \"Combat*\" is invalid: a wildcard may only end a pattern as \".*\" "
            "(\"Combat.*\"), or stand alone (\"*\")");
  EXPECT_EQ(api().bus_subscribe(a(), "T", nullptr, nullptr, nullptr, &sub),
            MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()), "fn is NULL");
  EXPECT_EQ(api().bus_publish(a(), "T", nullptr, 2), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()), "args is NULL with arg_count > 0");
  molt_task_t t;
  auto task = [](void*) -> molt_status_t { return MOLT_OK; };
  EXPECT_EQ(api().task_schedule(a(), 9, task, nullptr, nullptr, &t), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()),
            "priority 9 is not one of MOLT_PRIORITY_KERNEL (1) .. MOLT_PRIORITY_BACKGROUND (5)");
  EXPECT_EQ(api().task_after(a(), -1, MOLT_PRIORITY_NORMAL, task, nullptr, nullptr, &t),
            MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()).rfind("seconds must be a finite number >= 0", 0), 0u);
  EXPECT_EQ(api().task_every(a(), std::nan(""), MOLT_PRIORITY_NORMAL, task, nullptr, nullptr, &t),
            MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api().task_after(a(), std::numeric_limits<double>::infinity(), MOLT_PRIORITY_NORMAL,
                             task, nullptr, nullptr, &t),
            MOLT_ERR_INVALID_ARGUMENT);
}

// With the layer: fields may be NULL or "" (none), a NULL name is refused naming it, and the
// event carries the plugin's name and the session's user.
TEST_F(HostApiTest, AnalyticsTrackTakesNoFieldsAndRefusesANullNameNamingIt) {
  analytics::AnalyticsOptions o;
  o.dir = ::testing::TempDir() + "host_api_analytics";
  std::filesystem::remove_all(o.dir);
  analytics::Analytics events(*kernel_, o);
  AttachAnalytics(*shared_, events, [](molt_session_t s) { return "user" + std::to_string(s); });
  Boot();
  EXPECT_EQ(api().analytics_track(a(), "purchase", 3, 1, nullptr, 0), MOLT_OK) << Error(a());
  EXPECT_EQ(api().analytics_track(a(), "visit", 0, 0, "", 0), MOLT_OK);
  EXPECT_EQ(api().analytics_track(a(), nullptr, 0, 0, nullptr, 0), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Error(a()).find("name"), std::string::npos) << Error(a());
  EXPECT_EQ(api().analytics_track(a(), "purchase", 0, 0, "[1]", 3), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()),
            "analytics event \"purchase\": its fields are not a JSON object of at most 4096 "
            "bytes (3 bytes)");
  events.Drain();
  EXPECT_EQ(events.stats().written, 2u);
  std::ifstream in(o.dir + "/events.jsonl");
  std::string first;
  std::getline(in, first);
  EXPECT_NE(first.find("\"name\":\"purchase\",\"plugin\":\"alpha\",\"user\":\"user3\""),
            std::string::npos)
      << first;
  std::filesystem::remove_all(o.dir);
}

TEST_F(HostApiTest, CallbackFailuresAreLoggedAndCountedAndTheHostKeepsGoing) {
  Boot();
  auto fail = [](void* ud, const char*, size_t, const molt_value*, size_t) -> molt_status_t {
    auto* p = static_cast<Probe*>(ud);
    p->api->set_error(p->ctx, "boom");
    return MOLT_ERR_INTERNAL;
  };
  auto silent = [](void*, const char*, size_t, const molt_value*, size_t) -> molt_status_t {
    return MOLT_ERR_IO;
  };
  auto throws = [](void*, const char*, size_t, const molt_value*, size_t) -> molt_status_t {
    throw std::runtime_error("across the boundary");
  };
  molt_subscription_t s1, s2, s3;
  ASSERT_EQ(api().bus_subscribe(a(), "T", fail, &g_probe[0], nullptr, &s1), MOLT_OK);
  ASSERT_EQ(api().bus_subscribe(a(), "T", silent, nullptr, nullptr, &s2), MOLT_OK);
  ASSERT_EQ(api().bus_subscribe(a(), "T", throws, nullptr, nullptr, &s3), MOLT_OK);
  lines_.clear();
  kernel_->bus().Publish("T");
  kernel_->bus().Publish("T");
  EXPECT_EQ(alpha_->callback_errors(), 6u);
  ASSERT_GE(lines_.size(), 3u);
  EXPECT_EQ(lines_[0], "[alpha] bus subscriber of \"T\" failed: boom");
  EXPECT_EQ(lines_[1],
            "[alpha] bus subscriber of \"T\" failed: returned i/o error (-10) without set_error");
  EXPECT_EQ(lines_[2], "[alpha] bus subscriber of \"T\" failed: callback threw across the C ABI");
}

std::string Str(const molt_value& v) {
  return v.type == MOLT_VALUE_STRING ? std::string(static_cast<const char*>(v.as.ptr), v.size)
                                     : "<not a string>";
}

TEST_F(HostApiTest, ScopesDeferAdoptAndClose) {
  Boot();
  Journal j;
  molt_scope_t outer = 0, inner = 0;
  ASSERT_EQ(api().scope_create(a(), 0, &outer), MOLT_OK);
  ASSERT_EQ(api().scope_create(a(), outer, &inner), MOLT_OK);
  auto note = [](void* ud) { static_cast<Journal*>(ud)->events.push_back("cleanup"); };
  ASSERT_EQ(api().scope_defer(a(), outer, note, &j), MOLT_OK);
  molt_subscription_t sub;
  ASSERT_EQ(api().bus_subscribe(a(), "T", RecordBus, &j, RecordRelease, &sub), MOLT_OK);
  ASSERT_EQ(api().scope_adopt(a(), inner, sub), MOLT_OK);
  EXPECT_EQ(api().scope_adopt(a(), inner, inner), MOLT_ERR_INVALID_ARGUMENT);
  // Reverse registration order: the cleanup (deferred last), then inner (releasing the sub).
  ASSERT_EQ(api().scope_close(a(), outer), MOLT_OK);
  EXPECT_EQ(j.events, (std::vector<std::string>{"cleanup", "release"}));
  EXPECT_EQ(api().scope_close(a(), inner), MOLT_ERR_STALE);
  EXPECT_EQ(api().bus_unsubscribe(a(), sub), MOLT_ERR_STALE);
  kernel_->bus().Publish("T");
  EXPECT_EQ(j.events.size(), 2u);
  EXPECT_EQ(api().scope_close(a(), 0), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()), "the root scope (0) closes when the plugin stops");
  EXPECT_EQ(api().scope_defer(b(), outer, note, &j), MOLT_ERR_STALE);
}

struct Reentrant {
  const molt_host_api* api;
  molt_context_t* ctx;
  molt_scope_t scope;
  molt_status_t status = MOLT_OK;
  int ran = 0;
};

TEST_F(HostApiTest, DeferOnAClosingScopeRunsAtOnceAndSaysSo) {
  Boot();
  Reentrant r{&api(), a(), 0};
  ASSERT_EQ(api().scope_create(a(), 0, &r.scope), MOLT_OK);
  // A cleanup that registers another cleanup on the scope being closed.
  ASSERT_EQ(api().scope_defer(
                a(), r.scope,
                [](void* ud) {
                  auto* r = static_cast<Reentrant*>(ud);
                  r->status = r->api->scope_defer(
                      r->ctx, r->scope, [](void* ud) { ++static_cast<Reentrant*>(ud)->ran; }, r);
                },
                &r),
            MOLT_OK);
  ASSERT_EQ(api().scope_close(a(), r.scope), MOLT_OK);
  EXPECT_EQ(r.status, MOLT_ERR_SCOPE_CLOSED);
  EXPECT_EQ(r.ran, 1);
  EXPECT_EQ(api().scope_defer(
                a(), r.scope, [](void*) {}, nullptr),
            MOLT_ERR_STALE);
}

TEST_F(HostApiTest, StopReleasesWhatThePluginForgotInReverseOrderAndNothingRunsAfter) {
  std::vector<std::string> events;
  static std::vector<std::string>* log;
  log = &events;
  g_probe[0].on_init = [] {
    const molt_host_api* api = g_probe[0].api;
    molt_context_t* ctx = g_probe[0].ctx;
    molt_handle_t h;
    auto rel = [](void* ud) { log->push_back(std::string("release ") + static_cast<char*>(ud)); };
    auto bus = [](void*, const char*, size_t, const molt_value*, size_t) -> molt_status_t {
      log->push_back("bus callback");
      return MOLT_OK;
    };
    auto hook = [](void*, molt_hook_context*) -> molt_status_t {
      log->push_back("hook callback");
      return MOLT_OK;
    };
    auto task = [](void*) -> molt_status_t {
      log->push_back("task callback");
      return MOLT_OK;
    };
    static char sub_name[] = "sub", hook_name[] = "hook", task_name[] = "task";
    api->bus_subscribe(ctx, "T", bus, sub_name, rel, &h);
    api->hook_on(ctx, "P", 100, hook, hook_name, rel, &h);
    api->task_every(ctx, 0, MOLT_PRIORITY_NORMAL, task, task_name, rel, &h);
    api->scope_defer(
        ctx, 0, [](void*) { log->push_back("root scope cleanup"); }, nullptr);
    return MOLT_OK;
  };
  g_probe[0].on_stop = [] {
    log->push_back("stop");
    return MOLT_OK;
  };
  Boot();
  kernel_->bus().Publish("T");
  events.clear();
  ASSERT_TRUE(alpha_->Stop().ok());
  EXPECT_EQ(events, (std::vector<std::string>{"stop", "release task", "release hook", "release sub",
                                              "root scope cleanup"}));
  EXPECT_EQ(g_probe[0].destroyed, 1);
  events.clear();
  kernel_->bus().Publish("T");
  HookContext c;
  kernel_->hooks().Fire("P", c);
  kernel_->scheduler().Step();
  EXPECT_TRUE(events.empty());  // no callback reaches a stopped instance
  EXPECT_EQ(api().bus_publish(a(), "T", nullptr, 0), MOLT_ERR_STATE);
  EXPECT_EQ(Error(a()),
            "plugin \"alpha\" is not running: host calls are accepted from init until stop "
            "returns");
  ASSERT_TRUE(alpha_->Stop().ok());  // idempotent
  EXPECT_EQ(g_probe[0].destroyed, 1);
}

TEST_F(HostApiTest, FailedInitReportsThePluginsTextAndReleasesWhatItRegistered) {
  static int released;
  released = 0;
  g_probe[1].on_init = [] {
    molt_handle_t h;
    g_probe[1].api->bus_subscribe(
        g_probe[1].ctx, "T", RecordBus, nullptr, [](void*) { ++released; }, &h);
    g_probe[1].api->set_error(g_probe[1].ctx, "port 0 is invalid");
    return MOLT_ERR_INVALID_ARGUMENT;
  };
  ASSERT_TRUE(kernel_->RegisterService(alpha_).ok());
  ASSERT_TRUE(kernel_->RegisterService(beta_).ok());
  Status s = kernel_->Start();
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "service \"beta\": init failed: port 0 is invalid");
  EXPECT_EQ(released, 1);
  EXPECT_EQ(g_probe[1].destroyed, 0);  // a failed init cleans up after itself
  EXPECT_EQ(g_probe[0].destroyed, 1);  // alpha was rolled back: stopped and destroyed
}

TEST_F(HostApiTest, InterfacesOnlyFromDeclaredDependencies) {
  Boot();
  molt_interface_ref ref{};
  ASSERT_EQ(api().service_interface(b(), "alpha", "twice.v1", &ref), MOLT_OK);
  ASSERT_EQ(ref.vtable_size, sizeof(TwiceVtable));
  EXPECT_EQ(static_cast<const TwiceVtable*>(ref.vtable)->twice(ref.self, 21), 42);
  EXPECT_EQ(api().service_interface(b(), "alpha", "thrice.v1", &ref), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(Error(b()), "service \"alpha\" has no interface \"thrice.v1\" (it exports: twice.v1)");
  EXPECT_EQ(api().service_interface(a(), "beta", "x", &ref), MOLT_ERR_STATE);
  EXPECT_EQ(Error(a()),
            "plugin \"alpha\" may only use interfaces of its dependencies: add \"beta\" to its "
            "dependencies");
}

TEST_F(HostApiTest, ConfigLooksInThePluginsSectionFirst) {
  kernel_.reset();
  KernelOptions o;
  o.clock = &clock_;
  o.config.Set("plugins.alpha.greeting", std::string("hi alpha"));
  o.config.Set("greeting", std::string("hi all"));
  o.config.Set("server.tick_rate", 60.0);
  kernel_ = std::move(Kernel::Boot(std::move(o))).value();
  shared_ = std::make_unique<AbiShared>(*kernel_, CoreHostApi());
  alpha_ = std::make_shared<PluginInstance>(*shared_, alpha_info_, "alpha.so");
  beta_ = std::make_shared<PluginInstance>(*shared_, beta_info_, "beta.so");
  Boot();
  molt_value v;
  ASSERT_EQ(api().config_get(a(), "greeting", &v), MOLT_OK);
  EXPECT_EQ(Str(v), "hi alpha");
  ASSERT_EQ(api().config_get(b(), "greeting", &v), MOLT_OK);
  EXPECT_EQ(Str(v), "hi all");
  ASSERT_EQ(api().config_get(b(), "kernel.version", &v), MOLT_OK);
  EXPECT_EQ(Str(v), Kernel::Version());
  EXPECT_EQ(api().config_get(b(), "nope", &v), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(Error(b()),
            "config key \"nope\" is not set (looked for \"plugins.beta.nope\" and \"nope\")");
}

TEST_F(HostApiTest, StatsAndLogging) {
  Boot();
  std::string json;
  ASSERT_EQ(api().stats_json(
                a(),
                [](void* ud, const void* data, size_t n) {
                  static_cast<std::string*>(ud)->append(static_cast<const char*>(data), n);
                },
                &json),
            MOLT_OK);
  EXPECT_NE(json.find("\"service_timings\""), std::string::npos);
  lines_.clear();
  api().log(a(), MOLT_LOG_WARN, "low on gold");
  api().log(a(), 42, "ignored");
  EXPECT_EQ(lines_, std::vector<std::string>{"[alpha] low on gold"});
  EXPECT_EQ(api().log_enabled(a(), MOLT_LOG_DEBUG), 0);
  EXPECT_EQ(api().log_enabled(a(), MOLT_LOG_ERROR), 1);
  api().set_error(a(), "custom");
  EXPECT_EQ(Error(a()), "custom");
}

}  // namespace
}  // namespace molt::kernel::abi

namespace molt::kernel::abi {
namespace {

// A process body written against the raw ABI, driven by a script of what to do.
struct Walker {
  const molt_host_api* api;
  molt_context_t* ctx;
  std::vector<std::string>* log;
  int yields = 3;
  molt_completion_t wait_on = 0;
  bool sleep_forever = false;
  const char* fail_with = nullptr;
};

molt_status_t WalkerBody(void* ud, void* arg) {
  auto* w = static_cast<Walker*>(ud);
  w->log->push_back("arg " + std::to_string(*static_cast<int*>(arg)));
  if (w->fail_with != nullptr) {
    w->api->set_error(w->ctx, w->fail_with);
    return MOLT_ERR_INTERNAL;
  }
  for (int i = 0; i < w->yields; ++i) {
    w->log->push_back("slice " + std::to_string(i));
    if (w->api->process_yield(w->ctx) != MOLT_OK) {
      return MOLT_OK;
    }
  }
  if (w->wait_on != 0) {
    std::string payload;
    const molt_status_t st = w->api->process_wait(
        w->ctx, w->wait_on,
        [](void* ud, const void* data, size_t n) {
          static_cast<std::string*>(ud)->append(static_cast<const char*>(data), n);
        },
        &payload);
    w->log->push_back("waited " + std::to_string(st) + " " + payload);
    if (st == MOLT_ERR_CANCELLED) {
      return MOLT_OK;
    }
  }
  while (w->sleep_forever) {
    const molt_status_t st = w->api->process_sleep(w->ctx, 10);
    if (st != MOLT_OK) {
      w->log->push_back("sleep returned " + std::to_string(st));
      return MOLT_OK;  // killed: return at once
    }
  }
  w->api->process_set_result(w->ctx, "arrived");
  return MOLT_OK;
}

void RecordExit(void* ud, molt_process_t, int32_t state, const char* result, size_t n) {
  static_cast<std::vector<std::string>*>(ud)->push_back("exit " + std::to_string(state) + " " +
                                                        std::string(result, n));
}

TEST_F(HostApiTest, ProcessLifecycleThroughTheTable) {
  Boot();
  std::vector<std::string> log;
  Walker w{&api(), a(), &log};
  molt_process_options o{sizeof(molt_process_options), MOLT_PRIORITY_LOW, "Walker", 0};
  molt_process_t p = 0;
  ASSERT_EQ(api().process_spawn(a(), &o, WalkerBody, &w, nullptr, &p), MOLT_OK);
  int32_t state = -1;
  std::uint64_t pid = 0;
  ASSERT_EQ(api().process_state(a(), p, &state, &pid), MOLT_OK);
  EXPECT_EQ(state, MOLT_PROCESS_CREATED);
  EXPECT_GT(pid, 0u);
  ASSERT_EQ(api().process_on_exit(a(), p, RecordExit, &log, nullptr), MOLT_OK);
  int arg = 42;
  ASSERT_EQ(api().process_start(a(), p, &arg), MOLT_OK);
  EXPECT_EQ(api().process_start(a(), p, &arg), MOLT_ERR_STATE);
  EXPECT_EQ(Error(a()), "process Walker already started");
  for (int i = 0; i < 4; ++i) {
    kernel_->scheduler().Step();
  }
  EXPECT_EQ(
      log, (std::vector<std::string>{"arg 42", "slice 0", "slice 1", "slice 2", "exit 3 arrived"}));
  bool profiled = false;
  for (const TaskProfile& t : kernel_->scheduler().TopTasks(20)) {
    profiled = profiled || t.key == "Process Walker";
  }
  EXPECT_TRUE(profiled);
  kernel_->scheduler().Step();  // the handle goes stale once the exit was delivered
  EXPECT_EQ(api().process_state(a(), p, &state, nullptr), MOLT_ERR_STALE);
}

// A plugin's duration is checked where it crosses the ABI, inside a process too.
TEST_F(HostApiTest, ProcessSleepRefusesADurationThatIsNotFiniteAndNonNegative) {
  Boot();
  struct Sleeper {
    const molt_host_api* api;
    molt_context_t* ctx;
    std::vector<std::string> errors;
  };
  Sleeper sleeper{&api(), a(), {}};
  molt_process_t p = 0;
  ASSERT_EQ(api().process_spawn(
                a(), nullptr,
                [](void* ud, void*) -> molt_status_t {
                  auto* s = static_cast<Sleeper*>(ud);
                  for (double bad : {-1.0, std::nan(""), HUGE_VAL}) {
                    if (s->api->process_sleep(s->ctx, bad) == MOLT_ERR_INVALID_ARGUMENT) {
                      s->errors.push_back(s->api->last_error(s->ctx));
                    }
                  }
                  return MOLT_OK;
                },
                &sleeper, nullptr, &p),
            MOLT_OK);
  ASSERT_EQ(api().process_start(a(), p, nullptr), MOLT_OK);
  kernel_->scheduler().Step();
  ASSERT_EQ(sleeper.errors.size(), 3u);
  EXPECT_EQ(sleeper.errors[0], "process_sleep seconds must be a finite number >= 0, not -1.000000");
  EXPECT_EQ(sleeper.errors[1], "process_sleep seconds must be a finite number >= 0, not nan");
  EXPECT_EQ(sleeper.errors[2], "process_sleep seconds must be a finite number >= 0, not inf");
}

TEST_F(HostApiTest, ProcessCallsOutsideAProcessAndBadOptionsAreRefused) {
  Boot();
  EXPECT_EQ(api().process_yield(a()), MOLT_ERR_STATE);
  EXPECT_EQ(Error(a()), "process_yield must be called inside a process");
  EXPECT_EQ(api().process_sleep(a(), 1), MOLT_ERR_STATE);
  EXPECT_EQ(api().process_set_result(a(), "x"), MOLT_ERR_STATE);
  molt_process_t p;
  molt_process_options o{};
  EXPECT_EQ(api().process_spawn(a(), &o, WalkerBody, nullptr, nullptr, &p),
            MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()),
            "molt_process_options.struct_size is 0, below 24 (its size in ABI 1.0, the smallest "
            "accepted): set it to sizeof(molt_process_options)");
  o = {sizeof(molt_process_options), 9, nullptr, 0};
  EXPECT_EQ(api().process_spawn(a(), &o, WalkerBody, nullptr, nullptr, &p),
            MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api().process_spawn(a(), nullptr, nullptr, nullptr, nullptr, &p),
            MOLT_ERR_INVALID_ARGUMENT);
}

TEST_F(HostApiTest, ABodyThatFailsCrashesWithItsText) {
  Boot();
  std::vector<std::string> log;
  Walker w{&api(), a(), &log};
  w.fail_with = "lost the path";
  molt_process_t p;
  ASSERT_EQ(api().process_spawn(a(), nullptr, WalkerBody, &w, nullptr, &p), MOLT_OK);
  ASSERT_EQ(api().process_on_exit(a(), p, RecordExit, &log, nullptr), MOLT_OK);
  int arg = 1;
  ASSERT_EQ(api().process_start(a(), p, &arg), MOLT_OK);
  kernel_->scheduler().Step();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1].rfind("exit 4 lost the path\n", 0), 0u) << log[1];
}

TEST_F(HostApiTest, KillingAParkedBodyMakesItsCallReturnAnError) {
  Boot();
  std::vector<std::string> log;
  Walker w{&api(), a(), &log};
  w.yields = 0;
  w.sleep_forever = true;
  molt_process_t p;
  ASSERT_EQ(api().process_spawn(a(), nullptr, WalkerBody, &w, nullptr, &p), MOLT_OK);
  ASSERT_EQ(api().process_on_exit(a(), p, RecordExit, &log, nullptr), MOLT_OK);
  int arg = 7;
  ASSERT_EQ(api().process_start(a(), p, &arg), MOLT_OK);
  kernel_->scheduler().Step();
  ASSERT_EQ(api().process_kill(b(), p, "nope"), MOLT_ERR_STALE);  // not beta's
  ASSERT_EQ(api().process_kill(a(), p, "guard dismissed"), MOLT_OK);
  EXPECT_EQ(log,
            (std::vector<std::string>{"arg 7", "sleep returned -11", "exit 5 guard dismissed"}));
}

TEST_F(HostApiTest, ProcessesWaitOnCompletions) {
  Boot();
  std::vector<std::string> log;
  molt_completion_t c = 0;
  ASSERT_EQ(api().completion_create(a(), &c), MOLT_OK);
  Walker w{&api(), a(), &log};
  w.yields = 0;
  w.wait_on = c;
  molt_process_t p;
  ASSERT_EQ(api().process_spawn(a(), nullptr, WalkerBody, &w, nullptr, &p), MOLT_OK);
  int arg = 0;
  ASSERT_EQ(api().process_start(a(), p, &arg), MOLT_OK);
  kernel_->scheduler().Step();
  kernel_->scheduler().Step();
  EXPECT_EQ(log, std::vector<std::string>{"arg 0"});
  ASSERT_EQ(api().completion_complete(a(), c, MOLT_OK, "loaded", 6), MOLT_OK);
  EXPECT_EQ(api().completion_complete(a(), c, MOLT_OK, nullptr, 0), MOLT_ERR_STATE);
  EXPECT_EQ(Error(a()), "completion " + std::to_string(c) + " is already complete");
  kernel_->scheduler().Step();
  EXPECT_EQ(log, (std::vector<std::string>{"arg 0", "waited 0 loaded"}));
}

TEST_F(HostApiTest, StoppingThePluginKillsItsProcessesWithoutExitCallbacks) {
  Boot();
  std::vector<std::string> log;
  Walker w{&api(), a(), &log};
  w.yields = 0;
  w.sleep_forever = true;
  static int released;
  released = 0;
  molt_process_t p;
  ASSERT_EQ(api().process_spawn(
                a(), nullptr, WalkerBody, &w, [](void*) { ++released; }, &p),
            MOLT_OK);
  ASSERT_EQ(api().process_on_exit(a(), p, RecordExit, &log, nullptr), MOLT_OK);
  int arg = 3;
  ASSERT_EQ(api().process_start(a(), p, &arg), MOLT_OK);
  kernel_->scheduler().Step();
  const std::size_t before = Process::Count();
  ASSERT_TRUE(alpha_->Stop().ok());
  EXPECT_EQ(log, (std::vector<std::string>{"arg 3", "sleep returned -11"}));  // no exit callback
  EXPECT_EQ(released, 1);
  EXPECT_EQ(Process::Count(), before - 1);
}

}  // namespace
}  // namespace molt::kernel::abi
