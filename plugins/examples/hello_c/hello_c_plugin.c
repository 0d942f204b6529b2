/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hello_c: a plugin written in C99 against molt.h alone, built out of tree. Clients say something
 * on the intent channel "hello.Say" and hear it back, prefixed with their user id, on the event
 * channel "hello.Said"; the request channel "hello.Shout" answers with the text in capitals.
 * Payloads are UTF-8 text (1 to 200 bytes). A real game would use FlatBuffers payloads with
 * declarative rules; plain text keeps this example free of generated code, so its channels are
 * Open (the security audit lists them).
 */
#include <molt/molt.h>
#include <string.h>

static const molt_host_api* api;
static molt_context_t* self;
static molt_channel_t said;

static int32_t verify_text(void* user_data, const void* data, size_t size) {
  (void)user_data;
  (void)data;
  return size >= 1 && size <= 200;
}

static molt_status_t on_say(void* user_data, molt_session_t session, const molt_value* args,
                            size_t arg_count) {
  molt_session_info info;
  char line[280];
  size_t n;
  (void)user_data;
  (void)arg_count;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (api->session_info(self, session, &info) != MOLT_OK) {
    return MOLT_ERR_NOT_FOUND;
  }
  n = strlen(info.user);
  memcpy(line, info.user, n);
  memcpy(line + n, ": ", 2);
  memcpy(line + n + 2, args[0].as.ptr, args[0].size); /* at most 200 bytes: verify_text */
  return api->event_send(self, said, &session, 1, line, n + 2 + args[0].size);
}

static molt_status_t on_shout(void* user_data, molt_session_t session, const molt_value* args,
                              size_t arg_count, molt_request_t request) {
  char upper[200];
  size_t i;
  (void)user_data;
  (void)session;
  (void)arg_count;
  for (i = 0; i < args[0].size; ++i) {
    const char c = ((const char*)args[0].as.ptr)[i];
    upper[i] = c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
  }
  return api->request_reply(self, request, MOLT_OK, upper, args[0].size);
}

static molt_status_t declare(int32_t kind, const char* name, molt_channel_t* out) {
  molt_channel_spec spec;
  memset(&spec, 0, sizeof spec);
  spec.struct_size = sizeof spec;
  spec.kind = kind;
  spec.name = name;
  spec.schema = "text";
  if (kind != MOLT_CHANNEL_EVENT) {
    spec.verify = verify_text;
    spec.open = 1;
  }
  if (kind == MOLT_CHANNEL_INTENT) {
    spec.on_intent = on_say;
  } else if (kind == MOLT_CHANNEL_REQUEST) {
    spec.on_request = on_shout;
  }
  return api->channel_declare(self, &spec, NULL, out);
}

static molt_status_t init(molt_context_t* ctx, const molt_host_api* host, void** state) {
  molt_channel_t say, shout;
  molt_status_t s;
  self = ctx;
  api = host;
  *state = NULL;
  if ((s = declare(MOLT_CHANNEL_EVENT, "hello.Said", &said)) != MOLT_OK ||
      (s = declare(MOLT_CHANNEL_INTENT, "hello.Say", &say)) != MOLT_OK ||
      (s = declare(MOLT_CHANNEL_REQUEST, "hello.Shout", &shout)) != MOLT_OK) {
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
