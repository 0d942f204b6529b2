/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hello_c: a plugin written in C99 against molt.h alone, built out of tree. Clients say something
 * on the intent channel "hello.Say" and hear it back, prefixed with their user id, on the event
 * channel "hello.Said"; the request channel "hello.Shout" answers with the text in capitals, made
 * on a worker thread (a job), followed by as many '!' as the live value hello_c.exclaim says (0
 * to 5; 0 until an operator sets it: molt config set hello_c.exclaim 3).
 * Payloads are UTF-8 text (1 to 200 bytes). A real game would use FlatBuffers payloads with
 * declarative rules; plain text keeps this example free of generated code, so its channels are
 * Open (the security audit lists them).
 *
 * Structs are filled with designated initializers: a field a later molt.h appends is zero, and
 * the plugin still builds with -Wextra -Werror.
 */
#include <molt/molt.h>
#include <string.h>

#define MAX_TEXT 200
#define MAX_EXCLAIM 5

static const molt_host_api* api;
static molt_context_t* self;
static molt_channel_t said;

static int32_t verify_text(void* user_data, const void* data, size_t size) {
  (void)user_data;
  (void)data;
  return size >= 1 && size <= MAX_TEXT;
}

static molt_status_t on_say(void* user_data, molt_session_t session, const molt_value* args,
                            size_t arg_count) {
  molt_session_info info = {.struct_size = sizeof(molt_session_info)};
  char line[MAX_TEXT + 80];
  size_t n;
  (void)user_data;
  (void)arg_count;
  if (api->session_info(self, session, &info) != MOLT_OK) {
    return MOLT_ERR_NOT_FOUND;
  }
  n = strlen(info.user);
  memcpy(line, info.user, n);
  memcpy(line + n, ": ", 2);
  memcpy(line + n + 2, args[0].as.ptr, args[0].size); /* at most MAX_TEXT bytes: verify_text */
  return api->event_send(self, said, &session, 1, line, n + 2 + args[0].size);
}

/* hello.Shout's work, on a worker thread: a pure function of its input. It calls nothing of the
 * host and reads nothing another thread writes. */
static molt_status_t capitals(void* user_data, const void* input, size_t size, molt_bytes_fn sink,
                              void* sink_user_data) {
  char upper[MAX_TEXT];
  size_t i;
  (void)user_data;
  for (i = 0; i < size; ++i) { /* at most MAX_TEXT bytes: verify_text */
    const char c = ((const char*)input)[i];
    upper[i] = c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
  }
  sink(sink_user_data, upper, size);
  return MOLT_OK;
}

/* The live value as JSON ("0" to "5": check_exclaim let nothing else in). */
static void read_exclaim(void* user_data, const void* data, size_t size) {
  *(int*)user_data = size == 1 ? *(const char*)data - '0' : 0;
}

/* The job's end, on the kernel thread: answers the request it names with the capitals and the
 * exclamation marks the live value asks for now. */
static void on_capitals(void* user_data, const molt_job_result* result) {
  const molt_request_t request = (molt_request_t)result->tag;
  char answer[MAX_TEXT + MAX_EXCLAIM];
  size_t n;
  int exclaim = 0;
  (void)user_data;
  if (result->status != MOLT_OK) { /* a timeout, or the server closing */
    api->request_reply(self, request, result->status, result->error, strlen(result->error));
    return;
  }
  n = result->results[0].size;
  memcpy(answer, result->results[0].data, n);
  api->live_get(self, "exclaim", read_exclaim, &exclaim);
  while (exclaim-- > 0) {
    answer[n++] = '!';
  }
  api->request_reply(self, request, MOLT_OK, answer, n);
}

static molt_status_t on_shout(void* user_data, molt_session_t session, const molt_value* args,
                              size_t arg_count, molt_request_t request) {
  const molt_job_spec job = {
      .struct_size = sizeof(molt_job_spec),
      .handler = "capitals",
      .fn = capitals,
      .tag = request, /* on_capitals answers the request it names */
  };
  molt_job_t handle;
  (void)user_data;
  (void)session;
  (void)arg_count;
  return api->job_submit(self, &job, args[0].as.ptr, args[0].size, &handle);
}

/* An operator's value for hello_c.exclaim, before it is stored (its type, a number, is checked
 * already): a whole number from 0 to MAX_EXCLAIM. */
static molt_status_t check_exclaim(void* user_data, const char* key, const char* value_json,
                                   size_t size) {
  (void)user_data;
  (void)key;
  if (size == 1 && value_json[0] >= '0' && value_json[0] <= '0' + MAX_EXCLAIM) {
    return MOLT_OK;
  }
  api->set_error(self, "hello_c.exclaim is a whole number from 0 to 5");
  return MOLT_ERR_REJECTED;
}

static molt_status_t init(molt_context_t* ctx, const molt_host_api* host, void** state) {
  const molt_channel_spec said_spec = {
      .struct_size = sizeof(molt_channel_spec),
      .kind = MOLT_CHANNEL_EVENT,
      .name = "hello.Said",
      .schema = "text",
  };
  const molt_channel_spec say_spec = {
      .struct_size = sizeof(molt_channel_spec),
      .kind = MOLT_CHANNEL_INTENT,
      .name = "hello.Say",
      .schema = "text",
      .verify = verify_text,
      .rate = 10,
      .open = 1,
      .on_intent = on_say,
  };
  const molt_channel_spec shout_spec = {
      .struct_size = sizeof(molt_channel_spec),
      .kind = MOLT_CHANNEL_REQUEST,
      .name = "hello.Shout",
      .schema = "text",
      .verify = verify_text,
      .rate = 10,
      .open = 1,
      .on_request = on_shout,
  };
  molt_channel_t say, shout;
  molt_status_t s;
  self = ctx;
  api = host;
  *state = NULL;
  if ((s = api->channel_declare(ctx, &said_spec, NULL, &said)) != MOLT_OK ||
      (s = api->channel_declare(ctx, &say_spec, NULL, &say)) != MOLT_OK ||
      (s = api->channel_declare(ctx, &shout_spec, NULL, &shout)) != MOLT_OK ||
      (s = api->job_handler(ctx, "capitals", on_capitals, NULL, NULL)) != MOLT_OK ||
      (s = api->live_declare(ctx, "exclaim", "0", 1, check_exclaim, NULL, NULL)) != MOLT_OK) {
    api->set_error(ctx, api->last_error(ctx));
    return s;
  }
  api->log(ctx, MOLT_LOG_INFO, "hello_c is listening on hello.Say and hello.Shout");
  return MOLT_OK;
}

static const molt_plugin_info info = {
    .struct_size = sizeof(molt_plugin_info),
    .abi_version = MOLT_ABI_VERSION_CURRENT,
    .name = "hello_c",
    .version = "1.0.0",
    .kind = MOLT_PLUGIN_KIND_SERVICE,
    .init = init,
    .description = "an out-of-tree example in C",
};

MOLT_PLUGIN_EXPORT const molt_plugin_info* molt_plugin_entry(void) { return &info; }
