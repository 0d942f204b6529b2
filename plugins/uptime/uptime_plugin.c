/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uptime: a plugin in plain C99. Logs how long the server has been up every `interval_seconds`
 * (configuration, default 60), publishes Uptime.Tick(seconds), and logs the reason when the server
 * closes (Kernel.Closing). Shows the raw ABI: a static descriptor, status codes, handles, one
 * labelled cleanup path, and its own tests (self_test, ABI 1.8).
 */
#include <molt/molt.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct uptime_state {
  molt_context_t* ctx;
  const molt_host_api* api;
  double interval;
  int64_t ticks;
  molt_topic_t tick_topic;
} uptime_state;

static molt_status_t on_tick(void* user_data) {
  uptime_state* s = (uptime_state*)user_data;
  char line[96];
  molt_value arg;
  s->ticks++;
  arg.type = MOLT_VALUE_DOUBLE;
  arg.size = 0;
  arg.as.d = (double)s->ticks * s->interval;
  if (s->api->log_enabled(s->ctx, MOLT_LOG_INFO)) {
    snprintf(line, sizeof line, "up for %.0f s", arg.as.d);
    s->api->log(s->ctx, MOLT_LOG_INFO, line);
  }
  return s->api->bus_publish_topic(s->ctx, s->tick_topic, &arg, 1);
}

static molt_status_t on_closing(void* user_data, const char* topic, size_t topic_length,
                                const molt_value* args, size_t arg_count) {
  uptime_state* s = (uptime_state*)user_data;
  char line[160];
  int reason_length = 0;
  const char* reason = "";
  (void)topic;
  (void)topic_length;
  if (arg_count > 0 && args[0].type == MOLT_VALUE_STRING) {
    reason = (const char*)args[0].as.ptr;
    reason_length = (int)args[0].size;
  }
  snprintf(line, sizeof line, "closing after %.0f s (%.*s)", (double)s->ticks * s->interval,
           reason_length, reason);
  s->api->log(s->ctx, MOLT_LOG_INFO, line);
  return MOLT_OK;
}

static molt_status_t uptime_init(molt_context_t* ctx, const molt_host_api* api, void** state) {
  uptime_state* s = (uptime_state*)calloc(1, sizeof *s);
  molt_value interval;
  molt_task_t task;
  molt_subscription_t closing;
  if (s == NULL) {
    api->set_error(ctx, "out of memory");
    return MOLT_ERR_INTERNAL;
  }
  s->ctx = ctx;
  s->api = api;
  s->interval = 60.0;
  if (api->config_get(ctx, "interval_seconds", &interval) == MOLT_OK) {
    if (interval.type == MOLT_VALUE_INT) {
      s->interval = (double)interval.as.i;
    } else if (interval.type == MOLT_VALUE_DOUBLE) {
      s->interval = interval.as.d;
    }
  }
  if (!(s->interval > 0)) {
    api->set_error(ctx, "interval_seconds must be a positive number");
    goto fail;
  }
  if (api->bus_resolve(ctx, "Uptime.Tick", &s->tick_topic) != MOLT_OK ||
      api->task_every(ctx, s->interval, MOLT_PRIORITY_LOW, on_tick, s, NULL, &task) != MOLT_OK ||
      api->bus_subscribe(ctx, "Kernel.Closing", on_closing, s, NULL, &closing) != MOLT_OK) {
    goto fail; /* the host's error text is already set; it releases what was registered */
  }
  *state = s;
  return MOLT_OK;

fail:
  free(s);
  return MOLT_ERR_INTERNAL;
}

static void uptime_destroy(void* state) { free(state); }

/* Its own tests (ABI 1.8; moltd --self-test, molt build): what init kept is there. */
static molt_status_t uptime_self_test(void* state, molt_self_test_fn report, void* user_data) {
  const uptime_state* s = (const uptime_state*)state;
  const int positive = s->interval > 0;
  const int kept = s->ctx != NULL && s->api != NULL;
  report(user_data, "the interval is positive", positive ? MOLT_OK : MOLT_ERR_INTERNAL,
         positive ? NULL : "interval_seconds is not positive");
  report(user_data, "it keeps its context", kept ? MOLT_OK : MOLT_ERR_INTERNAL,
         kept ? NULL : "no context or host API kept from init");
  return MOLT_OK;
}

/* Designated initializers: fields a later ABI appends stay zero (and no -Wextra warning). */
static const molt_plugin_info uptime_info = {
    .struct_size = sizeof(molt_plugin_info),
    .abi_version = MOLT_ABI_VERSION_CURRENT,
    .name = "uptime",
    .version = "0.1.0",
    .kind = MOLT_PLUGIN_KIND_SERVICE,
    .init = uptime_init,
    .destroy = uptime_destroy,
    .description = "logs the server's uptime; written in C99",
    .self_test = uptime_self_test,
};

MOLT_PLUGIN_EXPORT const molt_plugin_info* molt_plugin_entry(void) { return &uptime_info; }
