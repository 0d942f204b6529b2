/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A plugin in C99 built against one frozen molt.h (tests/sdk/compat/<abi>/include), loaded into
 * today's host by compat_test.cc: it uses the slots of its release, with the struct sizes of its
 * release, and reports what it sees on the Bus topic "Compat.Log" (one string each).
 *
 *   every release   Bus subscribe/publish, a fail-closed hook point it defines and fires, a task,
 *                   a process that sleeps and waits on a completion, config_get
 *   ABI 1.1         an intent echoed back as an event, a request answered, session_on,
 *                   session_info (its molt_session_info), a last binding per session
 *   ABI 1.2         a replica counting joins
 *   ABI 1.3         a binding that hears the session's end, a replica claim refused outside a swap
 *   ABI 1.4         a profile store "compat": each loaded profile counts a visit ("/visits")
 *   ABI 1.10        a predicted intent echoed as an event, an unreliable channel echoing itself
 *   ABI 1.11        a list replica with a deadband in a zone and a grid, behind a predicate
 *   ABI 1.12        session_info's link grade (a new session: Good, not measured yet)
 */
#include <molt/molt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef COMPAT_NAME
#define COMPAT_NAME "compat_c"
#endif

static const molt_host_api* api;
static molt_context_t* self;
static molt_completion_t ready;
static molt_process_t worker;

static void note(const char* text) {
  molt_value v;
  memset(&v, 0, sizeof v);
  v.type = MOLT_VALUE_STRING;
  v.size = (uint32_t)strlen(text);
  v.as.ptr = text;
  api->bus_publish(self, "Compat.Log", &v, 1);
}

/* "<prefix><text of size bytes>" as a note. */
static void note2(const char* prefix, const char* text, size_t size) {
  char line[256];
  size_t n = strlen(prefix);
  if (size > sizeof line - n - 1) {
    size = sizeof line - n - 1;
  }
  memcpy(line, prefix, n);
  memcpy(line + n, text, size);
  line[n + size] = '\0';
  note(line);
}

static molt_status_t gate(void* user_data, molt_hook_context* c) {
  (void)user_data;
  return c->arg_count > 0 && c->args[0].type == MOLT_VALUE_INT && c->args[0].as.i < 0
             ? MOLT_ERR_REJECTED
             : MOLT_OK;
}

static molt_status_t on_ping(void* user_data, const char* topic, size_t topic_length,
                             const molt_value* args, size_t arg_count) {
  molt_value fired[1];
  uint8_t passed = 0;
  (void)user_data;
  (void)topic;
  (void)topic_length;
  if (arg_count < 1) {
    return MOLT_OK;
  }
  fired[0] = args[0];
  if (api->hook_fire(self, "Compat.Gate", fired, 1, 0, &passed, NULL) != MOLT_OK) {
    note("hook_fire failed");
    return MOLT_OK;
  }
  note(passed ? "pong passed" : "pong refused");
  return MOLT_OK;
}

static molt_status_t complete_ready(void* user_data) {
  (void)user_data;
  return api->completion_complete(self, ready, MOLT_OK, "ready", 5);
}

static void collect(void* user_data, const void* data, size_t size) {
  char* out = (char*)user_data;
  size_t have = strlen(out);
  if (have + size < 32) {
    memcpy(out + have, data, size);
    out[have + size] = '\0';
  }
}

static molt_status_t work(void* user_data, void* arg) {
  char payload[32] = {0};
  molt_status_t s;
  (void)user_data;
  (void)arg;
  if ((s = api->process_sleep(self, 0.001)) != MOLT_OK) {
    return s;
  }
  if ((s = api->process_wait(self, ready, collect, payload)) != MOLT_OK) {
    return s;
  }
  note2("process waited: ", payload, strlen(payload));
  return api->process_set_result(self, "done");
}

#if MOLT_ABI_VERSION_MINOR >= 1
static molt_channel_t said;

static int32_t verify_any(void* user_data, const void* data, size_t size) {
  (void)user_data;
  (void)data;
  return size > 0;
}

static molt_status_t on_echo(void* user_data, molt_session_t session, const molt_value* args,
                             size_t arg_count) {
  (void)user_data;
  if (arg_count < 1) {
    return MOLT_ERR_INVALID_ARGUMENT;
  }
  return api->event_send(self, said, &session, 1, args[0].as.ptr, args[0].size);
}

static molt_status_t on_twice(void* user_data, molt_session_t session, const molt_value* args,
                              size_t arg_count, molt_request_t request) {
  char both[128];
  size_t n = arg_count > 0 ? args[0].size : 0;
  (void)user_data;
  (void)session;
  if (n == 0 || n > sizeof both / 2) {
    return MOLT_ERR_INVALID_ARGUMENT;
  }
  memcpy(both, args[0].as.ptr, n);
  memcpy(both + n, args[0].as.ptr, n);
  return api->request_reply(self, request, MOLT_OK, both, 2 * n);
}

static void on_left(void* user_data) {
  char* user = (char*)user_data;
  note2("left ", user, strlen(user));
  free(user);
}

#if MOLT_ABI_VERSION_MINOR >= 2
static molt_replica_t board;
static int64_t joins;
#endif

#if MOLT_ABI_VERSION_MINOR >= 3
static void on_ended(void* user_data, molt_session_t session, int32_t reason) {
  char text[160];
  const char* user = (const char*)user_data;
  (void)session;
  snprintf(text, sizeof text, "ended %s reason %d", user, (int)reason);
  note(text);
}
#endif

#if MOLT_ABI_VERSION_MINOR >= 5
static molt_status_t on_pre_tick(void* user_data) {
  (void)user_data;
  note("pre_tick ran");
  return MOLT_OK;
}
#endif

#if MOLT_ABI_VERSION_MINOR >= 7
/* A live value read back: "live level <value>". */
static void on_live_value(void* user_data, const void* data, size_t size) {
  (void)user_data;
  note2("live level ", (const char*)data, size);
}
#endif

#if MOLT_ABI_VERSION_MINOR >= 9
/* A message heard: "message <data>" and " (self)" when this server published it. */
static void on_message(void* user_data, const char* topic, const void* data, size_t size,
                       const molt_message_meta* meta) {
  char line[64];
  (void)user_data;
  (void)topic;
  if (size > 32) {
    size = 32;
  }
  memcpy(line, data, size);
  strcpy(line + size, (meta->flags & MOLT_MESSAGE_SELF) != 0 ? " (self)" : "");
  note2("message ", line, strlen(line));
}
#endif

#if MOLT_ABI_VERSION_MINOR >= 9
/* The key-value store's answer to an increment: "kv visits <n>". */
static void on_kv(void* user_data, const molt_kv_result* r) {
  char line[32];
  (void)user_data;
  snprintf(line, sizeof line, "%ld", (long)r->number);
  note2(r->status == MOLT_OK ? "kv visits " : "kv failed ", line, strlen(line));
}
#endif

#if MOLT_ABI_VERSION_MINOR >= 6
/* A worker job: the input reversed. */
static molt_status_t reverse_job(void* user_data, const void* input, size_t size,
                                 molt_bytes_fn sink, void* sink_user_data) {
  char out[64];
  size_t i;
  (void)user_data;
  if (size > sizeof out) {
    sink(sink_user_data, "too long", 8);
    return MOLT_ERR_INVALID_ARGUMENT;
  }
  for (i = 0; i < size; ++i) {
    out[i] = ((const char*)input)[size - 1 - i];
  }
  sink(sink_user_data, out, size);
  return MOLT_OK;
}

static void on_job_done(void* user_data, const molt_job_result* result) {
  (void)user_data;
  if (result->status == MOLT_OK && result->count == 1) {
    note2("job done: ", (const char*)result->results[0].data, result->results[0].size);
  } else {
    note2("job failed: ", result->error, strlen(result->error));
  }
}
#endif

#if MOLT_ABI_VERSION_MINOR >= 4
static molt_profile_t visits_store;

static molt_status_t validate_visits(void* user_data, const char* doc, size_t size) {
  (void)user_data;
  return size > 0 && doc[0] == '{' ? MOLT_OK : MOLT_ERR_REJECTED;
}

static molt_status_t on_profile_loaded(void* user_data, const char* topic, size_t topic_length,
                                       const molt_value* args, size_t arg_count) {
  char visits[32] = {0};
  char line[64];
  (void)user_data;
  (void)topic;
  (void)topic_length;
  if (arg_count < 1 || args[0].type != MOLT_VALUE_HANDLE) {
    return MOLT_OK;
  }
  if (api->profile_get(self, visits_store, args[0].as.handle, "/visits", collect, visits) !=
      MOLT_OK) {
    note2("profile_get failed: ", api->last_error(self), strlen(api->last_error(self)));
    return MOLT_OK;
  }
  snprintf(line, sizeof line, "%ld", atol(visits) + 1);
  if (api->profile_set(self, visits_store, args[0].as.handle, "/visits", line, strlen(line)) !=
      MOLT_OK) {
    note2("profile_set failed: ", api->last_error(self), strlen(api->last_error(self)));
    return MOLT_OK;
  }
  note2("profile visits ", line, strlen(line));
  return MOLT_OK;
}
#endif

static void on_session(void* user_data, molt_session_t session) {
  molt_session_info info;
  char* user;
  size_t n;
  (void)user_data;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info; /* the size of this release's struct */
  if (api->session_info(self, session, &info) != MOLT_OK || info.active != 1) {
    note("session_info failed");
    return;
  }
  note2("session ", info.user, strlen(info.user));
#if MOLT_ABI_VERSION_MINOR >= 12
  note(info.link_tier == MOLT_LINK_GOOD && info.rtt_median_seconds == 0 && info.ping_loss == 0
           ? "session link good, not measured"
           : "session link graded");
#endif
  n = strlen(info.user);
  user = (char*)malloc(n + 1);
  if (user == NULL) {
    return;
  }
  memcpy(user, info.user, n + 1);
  if (api->session_bind(self, session, 1, on_left, user) != MOLT_OK) {
    free(user);
  }
#if MOLT_ABI_VERSION_MINOR >= 3
  user = (char*)malloc(n + 1);
  if (user != NULL) {
    memcpy(user, info.user, n + 1);
    if (api->session_bind_end(self, session, 0, on_ended, user, free) != MOLT_OK) {
      free(user);
    }
  }
#endif
#if MOLT_ABI_VERSION_MINOR >= 2
  api->replica_set_int(self, board, 0, ++joins);
#endif
}

#if MOLT_ABI_VERSION_MINOR >= 11
static int32_t everyone(void* user_data, molt_session_t session) {
  (void)user_data;
  (void)session;
  return 1;
}
#endif

#if MOLT_ABI_VERSION_MINOR >= 10
static molt_channel_t pos;

/* compat.Pos: what a client sends on it comes back on it. */
static molt_status_t on_pos(void* user_data, molt_session_t session, const molt_value* args,
                            size_t arg_count) {
  (void)user_data;
  (void)arg_count;
  return api->event_send(self, pos, &session, 1, args[0].as.ptr, args[0].size);
}
#endif

static molt_status_t declare(int32_t kind, const char* name, molt_channel_t* out) {
  molt_channel_spec spec;
  memset(&spec, 0, sizeof spec);
  spec.struct_size = sizeof spec; /* the size of this release's struct */
  spec.kind = kind;
  spec.name = name;
  spec.schema = "compat.Bytes";
  if (kind != MOLT_CHANNEL_EVENT) {
    spec.verify = verify_any;
    spec.open = 1;
  }
  if (kind == MOLT_CHANNEL_INTENT) {
    spec.on_intent = on_echo;
#if MOLT_ABI_VERSION_MINOR >= 10
  } else if (kind == MOLT_CHANNEL_PREDICTED_INTENT) {
    spec.on_intent = on_echo;
#endif
  } else if (kind == MOLT_CHANNEL_REQUEST) {
    spec.on_request = on_twice;
  }
  return api->channel_declare(self, &spec, NULL, out);
}
#endif

static molt_status_t init(molt_context_t* ctx, const molt_host_api* host, void** state) {
  molt_process_options options;
  molt_subscription_t sub;
  molt_hook_handler_t handler;
  molt_task_t task;
  molt_value role;
  molt_status_t s;
  self = ctx;
  api = host;
  *state = NULL;
  if ((s = api->bus_subscribe(ctx, "Compat.Ping", on_ping, NULL, NULL, &sub)) != MOLT_OK ||
      (s = api->hook_define(ctx, "Compat.Gate", MOLT_HOOK_FAIL_CLOSED)) != MOLT_OK ||
      (s = api->hook_on(ctx, "Compat.Gate", MOLT_HOOK_DEFAULT_PRIORITY, gate, NULL, NULL,
                        &handler)) != MOLT_OK ||
      (s = api->completion_create(ctx, &ready)) != MOLT_OK ||
      (s = api->task_after(ctx, 0.001, MOLT_PRIORITY_NORMAL, complete_ready, NULL, NULL, &task)) !=
          MOLT_OK) {
    goto fail;
  }
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options; /* the size of this release's struct */
  options.name = "compat worker";
  if ((s = api->process_spawn(ctx, &options, work, NULL, NULL, &worker)) != MOLT_OK) {
    goto fail;
  }
  if (api->config_get(ctx, "kernel.role", &role) == MOLT_OK && role.type == MOLT_VALUE_STRING) {
    note2("role ", (const char*)role.as.ptr, role.size);
  }
#if MOLT_ABI_VERSION_MINOR >= 1
  {
    molt_channel_t echo, twice;
    molt_subscription_t sessions;
    if ((s = declare(MOLT_CHANNEL_EVENT, "compat.Said", &said)) != MOLT_OK ||
        (s = declare(MOLT_CHANNEL_INTENT, "compat.Echo", &echo)) != MOLT_OK ||
        (s = declare(MOLT_CHANNEL_REQUEST, "compat.Twice", &twice)) != MOLT_OK) {
      goto fail;
    }
#if MOLT_ABI_VERSION_MINOR >= 10
    {
      molt_channel_t move;
      molt_channel_spec spec;
      memset(&spec, 0, sizeof spec);
      spec.struct_size = sizeof spec;
      spec.kind = MOLT_CHANNEL_UNRELIABLE;
      spec.name = "compat.Pos";
      spec.schema = "compat.Bytes";
      spec.verify = verify_any;
      spec.open = 1;
      spec.on_intent = on_pos;
      spec.unreliable_priority = MOLT_UNRELIABLE_HIGH;
      spec.latest_wins = 1;
      if ((s = declare(MOLT_CHANNEL_PREDICTED_INTENT, "compat.Move", &move)) != MOLT_OK ||
          (s = api->channel_declare(ctx, &spec, NULL, &pos)) != MOLT_OK) {
        goto fail;
      }
    }
#endif
#if MOLT_ABI_VERSION_MINOR >= 2
    {
      molt_replica_field field;
      molt_replica_spec spec;
      field.name = "joins";
      field.type = MOLT_REPLICA_INT;
      field.max_bytes = 0;
      memset(&spec, 0, sizeof spec);
      spec.struct_size = sizeof spec; /* the size of this release's struct */
      spec.audience = MOLT_AUDIENCE_ALL;
      spec.name = "compat.board";
      spec.fields = &field;
      spec.field_count = 1;
      if ((s = api->replica_create(ctx, &spec, &board)) != MOLT_OK) {
        goto fail;
      }
    }
#endif
    if ((s = api->session_on(ctx, on_session, NULL, NULL, &sessions)) != MOLT_OK) {
      goto fail;
    }
  }
#endif
#if MOLT_ABI_VERSION_MINOR >= 11
  {
    /* A list replica with a deadband, seen by the members of a zone and from a grid, through a
     * predicate that lets everyone in. */
    molt_replica_field fields[2];
    const double quantize[2] = {0.5, 0};
    molt_replica_spec spec;
    molt_grid_spec grid;
    molt_replica_t door;
    molt_zone_t hall;
    molt_grid_t world;
    fields[0].name = "x";
    fields[0].type = MOLT_REPLICA_FLOAT;
    fields[0].max_bytes = 0;
    fields[1].name = "y";
    fields[1].type = MOLT_REPLICA_FLOAT;
    fields[1].max_bytes = 0;
    memset(&spec, 0, sizeof spec);
    spec.struct_size = sizeof spec; /* the size of this release's struct */
    spec.audience = MOLT_AUDIENCE_LIST;
    spec.name = "compat.door";
    spec.fields = fields;
    spec.field_count = 2;
    spec.quantize = quantize;
    memset(&grid, 0, sizeof grid);
    grid.struct_size = sizeof grid;
    grid.name = "compat.world";
    grid.radius = 10;
    if ((s = api->replica_create(ctx, &spec, &door)) != MOLT_OK ||
        (s = api->zone_declare(ctx, "compat.hall", &hall)) != MOLT_OK ||
        (s = api->zone_bind(ctx, hall, door)) != MOLT_OK ||
        (s = api->replica_set_interest(ctx, door, everyone, NULL, NULL)) != MOLT_OK ||
        (s = api->grid_declare(ctx, &grid, &world)) != MOLT_OK ||
        (s = api->grid_bind(ctx, world, door, 0, 1)) != MOLT_OK) {
      goto fail;
    }
    note("interest declared");
  }
#endif
#if MOLT_ABI_VERSION_MINOR >= 3
  {
    molt_replica_t claimed;
    if (api->replica_claim(ctx, 12345, &claimed) == MOLT_ERR_NOT_FOUND) {
      note("claim refused outside a swap");
    }
  }
#endif
#if MOLT_ABI_VERSION_MINOR >= 4
  {
    molt_profile_spec spec;
    molt_subscription_t loaded;
    memset(&spec, 0, sizeof spec);
    spec.struct_size = sizeof spec; /* the size of this release's struct */
    spec.name = "compat";
    spec.defaults_json = "{\"visits\":0}";
    spec.schema_version = 1;
    spec.validate = validate_visits;
    if ((s = api->profile_declare(ctx, &spec, NULL, &visits_store)) != MOLT_OK ||
        (s = api->bus_subscribe(ctx, "Kernel.ProfileLoaded", on_profile_loaded, NULL, NULL,
                                &loaded)) != MOLT_OK) {
      goto fail;
    }
  }
#endif
#if MOLT_ABI_VERSION_MINOR >= 5
  {
    molt_task_spec task;
    molt_task_t handle;
    memset(&task, 0, sizeof task);
    task.struct_size = sizeof task; /* the size of this release's struct */
    task.phase = MOLT_PHASE_PRE_TICK;
    task.kind = MOLT_TASK_NEXT_STEP;
    if ((s = api->task_start(ctx, &task, on_pre_tick, NULL, NULL, &handle)) != MOLT_OK) {
      goto fail;
    }
  }
#endif
#if MOLT_ABI_VERSION_MINOR >= 6
  {
    molt_job_spec job;
    molt_job_t handle;
    memset(&job, 0, sizeof job);
    job.struct_size = sizeof job; /* the size of this release's struct */
    job.handler = "compat";
    job.fn = reverse_job;
    if ((s = api->job_handler(ctx, "compat", on_job_done, NULL, NULL)) != MOLT_OK ||
        (s = api->job_submit(ctx, &job, "work", 4, &handle)) != MOLT_OK) {
      goto fail;
    }
  }
#endif
#if MOLT_ABI_VERSION_MINOR >= 7
  if ((s = api->live_declare(ctx, "level", "3", 1, NULL, NULL, NULL)) != MOLT_OK ||
      (s = api->live_get(ctx, "level", on_live_value, NULL)) != MOLT_OK) {
    goto fail;
  }
#endif
#if MOLT_ABI_VERSION_MINOR >= 9
  if ((s = api->message_subscribe(ctx, "compat", on_message, NULL, NULL)) != MOLT_OK ||
      (s = api->message_publish(ctx, "compat", "c hello", 7)) != MOLT_OK) {
    goto fail;
  }
  {
    molt_kv_op op;
    memset(&op, 0, sizeof op);
    op.struct_size = sizeof op;
    op.kind = MOLT_KV_INCREMENT;
    op.key = "visits";
    op.number = 1;
    if ((s = api->kv_call(ctx, &op, on_kv, NULL, NULL)) != MOLT_OK) {
      goto fail;
    }
  }
#endif
  return MOLT_OK;
fail:
  note2("init failed: ", api->last_error(ctx), strlen(api->last_error(ctx)));
  return s;
}

static molt_status_t start(void* state) {
  (void)state;
  note("started");
  return api->process_start(self, worker, NULL);
}

static molt_status_t stop(void* state) {
  (void)state;
  note("stopped");
  return MOLT_OK;
}

#if MOLT_ABI_VERSION_MINOR >= 8
/* Its own tests (the spec gate): one passes, one fails with its reason. */
static molt_status_t self_test(void* state, molt_self_test_fn report, void* user_data) {
  (void)state;
  report(user_data, "compat passes", MOLT_OK, NULL);
  report(user_data, "compat fails", MOLT_ERR_REJECTED, "as it should");
  return MOLT_OK;
}
#endif

static const molt_plugin_info info = {
    .struct_size = sizeof(molt_plugin_info),
    .abi_version = MOLT_ABI_VERSION_CURRENT,
    .name = COMPAT_NAME,
    .version = "1.0.0",
    .kind = MOLT_PLUGIN_KIND_SERVICE,
    .init = init,
    .start = start,
    .stop = stop,
    .description = "a plugin from an earlier SDK",
#if MOLT_ABI_VERSION_MINOR >= 8
    .self_test = self_test,
#endif
};

MOLT_PLUGIN_EXPORT const molt_plugin_info* molt_plugin_entry(void) { return &info; }
